export * from './aws/eks-token.js';
export * from './api/index.js';
export * from './mirror/index.js';
