// Every kind of source and destination a mirror can have, built once per hub. A new kind is a new
// folder under sources/ or destinations/ and one line here.
import type { AnyMirror } from '@mirrorhub/shared/api/index';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import type { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import type { Clock, ControllerMetrics, Logger } from '@mirrorhub/shared/kit/runtime/index';
import { vaultRequests, type VaultConnections } from '../vault/connections.js';
import type { DestinationKind, SourceKind } from './kinds.js';
import { KubernetesSources } from './sources/kubernetes/index.js';
import { VaultKvSources } from './sources/vault/index.js';
import { VaultDynamicSources } from './sources/vault-dynamic/index.js';
import {
  ClusterDestinations,
  type ClusterDestinationsOptions,
} from './destinations/clusters/index.js';
import { VaultDestination } from './destinations/vault/index.js';

export interface VaultOptions {
  /** First retry of a failed Vault poll (default 1 s). */
  retryInitialMs?: number | undefined;
  /** Where dynamic sources' leases are kept (Secret mirrorhub-leases): the hub's namespace. */
  leaseNamespace?: string | undefined;
}

export interface KindsOptions {
  kubeConfig: KubeAccess;
  rest: RestClient;
  watchProgressDeadlineMs?: number | undefined;
  /** The Vault connections every Vault kind goes through (a controller of its own). */
  vaultConnections: VaultConnections;
  /** The mirror controller's logger; `rootLogger` for the controllers with their own name. */
  logger: Logger;
  rootLogger: Logger;
  metrics: ControllerMetrics;
  clock: Clock;
  vault?: VaultOptions | undefined;
  clusters: Omit<
    ClusterDestinationsOptions,
    'logger' | 'metrics' | 'clock' | 'enqueue' | 'enqueueAll'
  >;
  /** Reconcile this mirror (after `afterMs` when given). */
  enqueue(mirrorKey: string, afterMs?: number): void;
  /** Reconcile every mirror (after `afterMs` when given). */
  enqueueAll(afterMs?: number): void;
  /** Every mirror in the caches. */
  mirrors(): AnyMirror[];
  /** The key of a mirror. */
  keyOf(mirror: AnyMirror): string;
}

export interface Kinds {
  sources: readonly SourceKind[];
  destinations: readonly DestinationKind[];
  /** The clusters' deliveries (the dashboard, the MirrorCluster controller ask them). */
  clusters: ClusterDestinations;
  /** A Vault connection changed: its pollers read afresh; the mirrors using it are reconciled. */
  vaultConnectionChanged(connKey: string): void;
}

export function createKinds(o: KindsOptions): Kinds {
  const log = o.logger;
  const requests = vaultRequests(o.metrics);
  const vault = o.vault ?? {};
  const vaultConnections = o.vaultConnections;
  const onChange = (keys: readonly string[]) => {
    for (const k of keys) o.enqueue(k);
  };
  const kv = new VaultKvSources({
    connections: vaultConnections,
    requests,
    logger: log,
    retryInitialMs: vault.retryInitialMs,
    onChange,
  });
  const clusters = new ClusterDestinations({
    ...o.clusters,
    logger: o.rootLogger,
    metrics: o.metrics,
    clock: o.clock,
    watchProgressDeadlineMs: o.watchProgressDeadlineMs,
    enqueue: o.enqueue,
    enqueueAll: o.enqueueAll,
  });
  return {
    sources: [
      new KubernetesSources({
        kubeConfig: o.kubeConfig,
        watchProgressDeadlineMs: o.watchProgressDeadlineMs,
        logger: log,
        metrics: o.metrics,
        onChange,
      }),
      kv,
      new VaultDynamicSources({
        connections: vaultConnections,
        rest: o.rest,
        leaseNamespace: vault.leaseNamespace ?? 'mirrorhub-system',
        requests,
        logger: log,
        clock: o.clock,
        retryInitialMs: vault.retryInitialMs,
        enqueue: o.enqueue,
        role: o.clusters.role,
        kubeConfig: o.kubeConfig,
        watchProgressDeadlineMs: o.watchProgressDeadlineMs,
      }),
    ],
    destinations: [
      clusters,
      new VaultDestination({
        connections: vaultConnections,
        requests,
        originCluster: o.clusters.originCluster,
        logger: log,
      }),
    ],
    clusters,
    vaultConnectionChanged: (connKey) => {
      kv.connectionChanged(connKey);
      for (const m of o.mirrors()) {
        if (m.spec.source.kind === 'Vault' || m.spec.destination.vault || m.status?.vault) {
          o.enqueue(o.keyOf(m));
        }
      }
    },
  };
}
