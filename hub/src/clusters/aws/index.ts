// AWS and EKS: STS/EKS clients, EKS token minting, per-cluster access. Not re-exported by the
// package root, because loading it loads the AWS SDK into memory: import it as
// `@mirrorhub/hub/clusters/aws/index` where it is needed. Nothing here loads client-node; tests that want
// a client-node KubeConfig for EKS find it in `@mirrorhub/shared/testing/index`.
export * from './eks-token.js';
export * from './cluster-access.js';
