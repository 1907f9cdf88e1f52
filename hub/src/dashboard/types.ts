// What the dashboard's HTTP API answers: the contract between the hub (view.ts computes these
// from its caches, server.ts serves them), the page (hub/web) and the CLI. Names, states,
// counts and messages only: no secret value, no payload, no token ever appears in any of them.

export type Phase = 'Pending' | 'Active' | 'Degraded' | 'Error';
export type CopyState = 'Synced' | 'Failed' | 'Conflict' | 'PolicyDenied';

/** Who is looking, and how far they may see (TokenReview + SubjectAccessReview). */
export interface WhoAmI {
  user: string;
  /** cluster: every mirror and cluster. namespaces: only the SecretMirrors of `namespaces`. */
  scope: 'cluster' | 'namespaces';
  /** The namespaces whose SecretMirrors this identity may list (scope namespaces). */
  namespaces: string[];
  /** Whether MirrorClusters are visible in full (list mirrorclusters). */
  clusters: boolean;
}

export type AttentionKind =
  | 'MirrorError'
  | 'MirrorDegraded'
  | 'MirrorPending'
  | 'Conflict'
  | 'ClusterUnreachable'
  | 'ClusterUnauthenticated'
  | 'AgentMissing'
  | 'CredentialsExpiring'
  | 'LeaseExpiring';

/** Something that needs a person, worst first. */
export interface Attention {
  severity: 'error' | 'warning';
  kind: AttentionKind;
  /** `cluster:<name>` or the mirror key (SecretMirror/<ns>/<name>, ClusterSecretMirror//<name>). */
  ref: string;
  title: string;
  reason: string;
  /**
   * For a mirror: true when no retry can help until its spec, a policy or permissions change (it
   * is Stalled, kstatus Failed); false when mirrorhub keeps retrying (Reconciling, e.g. a source
   * that does not exist yet). The same distinction as the conditions (docs/gitops.md).
   */
  terminal?: boolean;
}

export interface Overview {
  clusters: { reachable: number; total: number };
  agents: { healthy: number; total: number };
  mirrors: { total: number; byPhase: Record<Phase, number> };
  copies: { namespaces: number; synced: number; failed: number; conflicts: number; denied: number };
  attention: Attention[];
}

export interface ClusterRow {
  name: string;
  type: 'EKS' | 'Kubeconfig' | 'InCluster' | 'Unknown';
  /** EKS: the AWS account of spec.eks.roleArn. */
  account?: string;
  region?: string;
  labels: Record<string, string>;
  /** true/false once probed; undefined before the first probe. */
  reachable?: boolean;
  authenticated?: boolean;
  agent: { present: boolean; version?: string; heartbeatAgeSeconds?: number };
  kubernetesVersion?: string;
  credentialsExpireAt?: string;
  lastError?: string;
  /** Ready condition: status and reason. */
  ready?: { status: 'True' | 'False' | 'Unknown'; reason: string; message?: string };
}

export interface MirrorRow {
  /** SecretMirror/<ns>/<name> or ClusterSecretMirror//<name>. */
  key: string;
  kind: 'SecretMirror' | 'ClusterSecretMirror';
  namespace?: string;
  name: string;
  sourceType: 'Secret' | 'ConfigMap' | 'Vault';
  /** Source name or Vault path (status.source, else from spec). */
  source: string;
  /** Name of every copy. */
  targetName: string;
  /** Summary of the destination rules (status.destination). */
  destination: string;
  phase: Phase;
  message?: string;
  /** Selected namespaces over all clusters, and those with an up-to-date copy. */
  matched: number;
  synced: number;
  failed: number;
  conflicts: number;
  denied: number;
  lastSyncTime?: string;
  /** The clusters the mirror reaches (status.clusters). */
  clusters: string[];
  suspended: boolean;
}

export interface NamespaceCopy {
  namespace: string;
  state: CopyState;
  message?: string;
}

export interface MirrorClusterDetail {
  name: string;
  phase: Phase;
  message?: string;
  namespaces: number;
  synced: number;
  failed: number;
  conflicts: number;
  denied: number;
  lastSyncTime?: string;
  /** Whether the agent has synced the current content (its observedHash is the delivery's). */
  current: boolean;
  /** The agent's per-namespace report, problems first. */
  copies: NamespaceCopy[];
  /** The agent reported only the first 500 namespaces. */
  truncated: boolean;
  /** No report from this cluster's agent (yet). */
  reported: boolean;
  /**
   * The hub replica that delivers to this cluster, when not this one (shared followers): the
   * counts are its report, and the per-namespace copies are on its dashboard ('': held by none
   * at the moment).
   */
  heldBy?: string;
}

export interface EventRow {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  time: string;
  count: number;
}

export interface ConditionRow {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message?: string;
  lastTransitionTime: string;
}

export interface MirrorDetail extends MirrorRow {
  conditions: ConditionRow[];
  perCluster: MirrorClusterDetail[];
  events: EventRow[];
  /** A dynamic Vault source: when its lease expires (never its id). */
  leaseExpiresAt?: string;
}

/**
 * One cell of the matrix. synced: every selected namespace has the current copy. stale: the
 * agent has not synced the current content yet (or not reported). failing: failures, or the
 * mirror itself is in Error (its source unreadable, its spec invalid...). conflict:
 * a name is taken. none: not a destination of this mirror.
 */
export type CellState = 'synced' | 'stale' | 'failing' | 'conflict' | 'denied' | 'none';

export interface MatrixCell {
  state: CellState;
  synced: number;
  namespaces: number;
  message?: string;
}

export interface MatrixColumn {
  cluster: string;
  /** The value of the groupBy label ('' when the cluster has none). */
  group: string;
}

export interface MatrixRow {
  key: string;
  name: string;
  namespace?: string;
  targetName: string;
  /** One cell per column, in column order. */
  cells: MatrixCell[];
}

export interface Matrix {
  groupBy: string;
  /** Label keys present on the visible clusters: what groupBy may be. */
  groupKeys: string[];
  columns: MatrixColumn[];
  rows: MatrixRow[];
}

export interface WhereRow {
  cluster: string;
  namespace: string;
  state: CopyState | 'Pending';
  message?: string;
  /** Key of the mirror that owns the copy. */
  mirror: string;
  kind: 'Secret' | 'ConfigMap';
}

export interface Where {
  name: string;
  items: WhereRow[];
  /** Some agent reported only its first 500 namespaces: the list may be incomplete. */
  truncated: boolean;
}

/** GET /api/v1/snapshot: everything the overview, clusters, mirrors and matrix pages show. */
export interface Snapshot {
  whoami: WhoAmI;
  /** The hub's own name (clusterName) and version. */
  hub: { cluster: string; version: string; leader: boolean };
  /** Bumped on every change the hub learns (the watch stream sends it). */
  version: number;
  generatedAt: string;
  overview: Overview;
  clusters: ClusterRow[];
  mirrors: MirrorRow[];
  matrix: Matrix;
}

/** Every error answer: 400, 401, 403, 404, 503. */
export interface ApiError {
  error: string;
}
