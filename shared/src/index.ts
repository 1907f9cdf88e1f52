export * from './aws/eks-token.js';
