// AWS and EKS: STS/EKS clients, EKS token minting, per-cluster access. Not re-exported by the
// package root, because loading it loads the AWS SDK (~20 MB resident): import it as
// `@mirrorhub/shared/aws/index` where it is needed. kubeConfigForCluster (client-node, ~70 MB) is
// not re-exported either: import it from `@mirrorhub/shared/aws/eks-kubeconfig`.
export * from './eks-token.js';
export * from './cluster-access.js';
