// AWS/EKS is not re-exported here: it loads the AWS SDK (~20 MB); use '@mirrorhub/shared/aws/index'.
export * from './api/index.js';
export * from './mirror/index.js';
export * from './runtime/index.js';
export * from './k8s/index.js';

// TEMPORARY, until hub/src/controllers/cluster/controller.ts imports these from
// '@mirrorhub/shared/aws/index': while it stays, the root still loads the AWS SDK.
export { EksClusterAccess } from './aws/cluster-access.js';
export type { AwsCredentials, AwsCredentialsProvider } from './aws/eks-token.js';
