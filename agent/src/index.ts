// @mirrorhub/agent: the agent as a library (tests and the demo run it in-process).
export { createAgent, type Agent, type AgentConfig, type LeaderElectionConfig } from './agent.js';
export { readConfig, loadKubeConfig, type MainConfig } from './config.js';
export {
  ANNOTATION_AGENT_VERSION,
  ANNOTATION_CLUSTER_NAME,
  HEARTBEAT_LEASE,
  Heartbeat,
  type HeartbeatOptions,
} from './heartbeat.js';
export {
  CONTROLLER_NAME,
  DeliveryController,
  createDeliveryController,
  type DeliveryControllerOptions,
} from './controllers/delivery/controller.js';
export * from './controllers/delivery/plan.js';
