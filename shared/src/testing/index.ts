// @mirrorhub/shared/testing/index: what tests of shared, hub, agent and the integration suites
// share. Never imported by production code, so it may load @kubernetes/client-node and the AWS
// SDK freely.
export * from './eks.js';
