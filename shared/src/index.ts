// AWS/EKS is not re-exported here: it loads the AWS SDK (~20 MB); use '@mirrorhub/shared/aws/index'.
export * from './api/index.js';
export * from './mirror/index.js';
export * from './runtime/index.js';
export * from './k8s/index.js';
export * from './contract.js';
