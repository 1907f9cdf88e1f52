// A cluster the hub delivers to: the hub's own cluster (localTarget) and one per MirrorCluster
// (controller.ts: EKS via AssumeRole + token, a kubeconfig Secret, or inCluster). The
// mirror controller sees only this interface.
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import type { ClusterAccessType, DeliveryReports } from '@mirrorhub/shared/api/index';

export interface ClusterTarget {
  /** Cluster name: MirrorCluster name, or the hub's own cluster name. Shown in status. */
  readonly name: string;
  /** The only namespace the hub writes to in this cluster (MirrorDeliveries, payload Secrets). */
  readonly agentNamespace: string;
  /** Labels destination.clusters.selector matches (MirrorCluster labels). */
  readonly labels: Readonly<Record<string, string>>;
  /** The hub's own cluster: where mirrors without destination.clusters deliver. */
  readonly local: boolean;
  /** How the hub reaches it (MirrorCluster.status.type). */
  readonly type: ClusterAccessType;
  /**
   * Another hub replica owns this follower (hub/src/shards/ownership.ts): this replica never
   * connects to it, and learns what it holds from its owner's report. Absent: this replica
   * owns it (always so with one replica).
   */
  readonly remote?: RemoteCluster | undefined;
  /**
   * How to reach this cluster (a KubeAccess; client-node's KubeConfig is one). Called when a
   * connection starts (and again when it is restarted). The returned access must keep its own
   * credentials fresh: applyToHTTPSOptions runs on every request, so a token provider refreshing
   * inside it is picked up by every list, watch and write.
   */
  kubeConfig(): Promise<KubeAccess>;
  /**
   * A request to the cluster failed with `err` (watch, write or probe). EKS targets hand it to
   * EksClusterAccess.reportRequestError, so a 401 re-mints the token, a TLS failure or an
   * unknown name re-describes the endpoint, and a refused or timed-out connection does so after
   * an hour. Must not throw.
   */
  reportError?(err: unknown): void;
}

/** A follower another hub replica owns, as this replica sees it. */
export interface RemoteCluster {
  /** The replica that owns it, as last seen (Ownership.ownerOf); undefined: none yet. */
  readonly owner: string | undefined;
  /** Its owner's report on the deliveries it holds there (MirrorCluster status.deliveries). */
  readonly report: DeliveryReports | undefined;
}

/** The hub's own cluster, reached with the hub's own credentials. */
export function localTarget(opts: {
  name: string;
  agentNamespace: string;
  kubeConfig: KubeAccess;
  labels?: Record<string, string>;
}): ClusterTarget {
  const { kubeConfig } = opts;
  return {
    name: opts.name,
    agentNamespace: opts.agentNamespace,
    labels: { ...(opts.labels ?? {}) },
    local: true,
    type: 'InCluster',
    kubeConfig: () => Promise.resolve(kubeConfig),
  };
}
