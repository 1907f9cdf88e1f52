// @mirrorhub/hub: the hub as a library (main.ts runs it as a process).
export * from './hub.js';
export * from './clusters/index.js';
export * from './names.js';
export {
  planMirror,
  planCleanup,
  deliveryUpToDate,
  type ClusterObservation,
  type DeliveryWrite,
  type MirrorPlan,
  type PlanInput,
  type PlannedEvent,
  type SourceObservation,
} from './controllers/mirror/plan.js';
export { MirrorController, type MirrorControllerOptions } from './controllers/mirror/controller.js';
export { configFromEnv } from './config.js';
