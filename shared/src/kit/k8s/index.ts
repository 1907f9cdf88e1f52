// The lean Kubernetes access every controller uses: none of these modules loads
// @kubernetes/client-node (imports.test.ts checks). Fakes for tests: @mirrorhub/shared/testing/index.
export * from './access.js';
export * from './listwatch.js';
export * from './rest.js';
export * from './watcher.js';
export * from './workqueue.js';
