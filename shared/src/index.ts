// @mirrorhub/shared: safe to import from production code by construction. It re-exports only
// modules that load neither @kubernetes/client-node nor the AWS SDK, and nothing for tests
// (imports.test.ts checks all three).
// - AWS/EKS (it loads the AWS SDK): '@mirrorhub/hub/clusters/aws/index', loaded on demand.
// - Fakes, the HTTP stub, client-node helpers for integration suites:
//   '@mirrorhub/shared/testing/index', for tests only.
export * from './api/index.js';
export * from './mirror/index.js';
export * from './kit/runtime/index.js';
export * from './kit/k8s/index.js';
export * from './api/contract.js';
export * from './kit/controller/index.js';
