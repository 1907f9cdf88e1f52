// @mirrorhub/hub: the hub as a library (main.ts runs it as a process).
export * from './hub.js';
export * from './clusters/index.js';
export * from './names.js';
export {
  planMirror,
  planCleanup,
  type CleanupPlan,
  type ClusterObservation,
  type DeliveryWrite,
  type MirrorPlan,
  type PlanInput,
  type PlannedEvent,
  type SourceObservation,
} from './controllers/mirror/plan.js';
export { MirrorController, type MirrorControllerOptions } from './controllers/mirror/controller.js';
export { deliveryUpToDate } from './controllers/delivery/plan.js';
export {
  ClusterConnection,
  FOREIGN_RECHECK_MAX_MS,
  FOREIGN_RECHECK_MS,
  OwnershipConflictError,
  type ClusterConnectionOptions,
  type ClusterHealth,
  type DeliveryObservation,
  type DeliveryOp,
  type PayloadObservation,
} from './controllers/delivery/controller.js';
export { configFromEnv } from './config.js';
export {
  ClusterController,
  type ClusterControllerOptions,
  type HubAwsConfig,
} from './controllers/cluster/controller.js';
export { PendingCleanups } from './controllers/cluster/pending.js';
export {
  planClusterStatus,
  resolveAccess,
  type AccessSpec,
  type PendingCleanup,
  type ProbeResult,
} from './controllers/cluster/plan.js';
export { parseKubeconfig } from './controllers/cluster/kubeconfig.js';
