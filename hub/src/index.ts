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
} from './mirrors/destinations/clusters/plan.js';
export type { PlannedEvent, SourceObservation } from './mirrors/status.js';
export { MirrorController, type MirrorControllerOptions } from './mirrors/controller.js';
export { deliveryUpToDate } from './mirrors/destinations/clusters/delivery.js';
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
} from './mirrors/destinations/clusters/connection.js';
export { configFromEnv } from './config.js';
export {
  ClusterController,
  type ClusterControllerOptions,
  type HubAwsConfig,
} from './clusters/controller.js';
export { PendingCleanups } from './clusters/pending.js';
export {
  planClusterStatus,
  resolveAccess,
  type AccessSpec,
  type PendingCleanup,
  type ProbeResult,
} from './clusters/plan.js';
export { parseKubeconfig } from './clusters/kubeconfig.js';
