// @mirrorhub/agent: the agent as a library (tests and the demo run it in-process).
export { createAgent, type Agent, type AgentConfig, type LeaderElectionConfig } from './agent.js';
export { readConfig, type MainConfig } from './config.js';
// The API access (KubeAccess, loadKubeAccess, RestClient) lives in @mirrorhub/shared/kit/k8s/*.
export { Heartbeat, type HeartbeatOptions } from './heartbeat.js';
export {
  CONTROLLER_NAME,
  DeliveryController,
  createDeliveryController,
  type DeliveryControllerOptions,
} from './controllers/delivery/controller.js';
export * from './controllers/delivery/plan.js';
