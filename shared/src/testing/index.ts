// @mirrorhub/shared/testing/index: what tests of shared, hub, agent and the integration suites
// share. Never imported by production code (shared/src/imports.test.ts checks every production
// file of shared, hub and agent), so it may load @kubernetes/client-node and the AWS SDK freely.
export * from './client-node.js';
export * from './fake.js';
export * from './http-stub.js';
export * from './import-graph.js';
