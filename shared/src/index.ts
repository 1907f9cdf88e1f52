export * from './aws/eks-token.js';
export * from './api/index.js';
export * from './mirror/index.js';
export * from './runtime/index.js';
export * from './k8s/index.js';
export * from './aws/cluster-access.js';
