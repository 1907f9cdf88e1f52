// What the delivery controller watches, and which deliveries each change concerns.
//
// What is cached:
// - MirrorDeliveries and payload Secrets in the agent namespace: full objects (one each per
//   mirror; the payload data is what copies are made of).
// - Namespaces: metadata only, slimmed to name, labels and whether it is terminating.
// - Copies (Secrets and ConfigMaps labelled mirrorhub.io/managed-by=mirrorhub, cluster-wide):
//   metadata only, slimmed to identity, resourceVersion and the mirrorhub.io/ marks. Copy data
//   is never cached: memory follows the number of copies, and unrelated Secrets are never seen.
//
// Every change is routed to the names of the deliveries it concerns (the work queue's keys);
// the reconcile re-reads everything from the caches. Our own writes coming back are not news.
//
// Every cache takes a fresh look (a re-list that hands out whatever its watch missed) at the
// shortest pollPeriodSeconds of the deliveries, or the agent's resync period without any.

import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import {
  MIRROR_DELIVERY,
  type MirrorDelivery,
  type SourceKind,
} from '@mirrorhub/shared/api/types.gen';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import {
  kubeListerWatcher,
  type ListerWatcher,
  type ResourceTarget,
} from '@mirrorhub/shared/kit/k8s/listwatch';
import { Watcher, watchTuning } from '@mirrorhub/shared/kit/k8s/watcher';
import type { Reconciler } from '@mirrorhub/shared/kit/controller/reconciler';
import { ShortestPeriod } from '@mirrorhub/shared/kit/controller/freshness';
import type { StatusWriter } from '@mirrorhub/shared/kit/controller/status';
import type { Clock } from '@mirrorhub/shared/kit/runtime/clock';
import { LABEL_MANAGED_BY, LABEL_PAYLOAD, MANAGED_BY_VALUE } from '@mirrorhub/shared/api/contract';
import {
  Interner,
  slimCopy,
  slimDelivery,
  slimNamespace,
  type CopyObject,
  type NamespaceObject,
} from './cached.js';
import { deliveryOf, type CopyKnowledge } from './knowledge.js';
import type { DeliveryNotes } from './notes.js';
import type { NamespaceView } from './plan.js';
import { NamespaceSelections } from './selection.js';

export interface WatchesOptions {
  kubeConfig: KubeAccess;
  /** The agent namespace: MirrorDeliveries and payload Secrets live here. */
  namespace: string;
  clock: Clock;
  /** How often the caches take a fresh look when no delivery asks for a period. */
  resyncMs: number;
  /** A watch silent this long is resumed (undefined: the Watcher's default, 150 s). */
  progressDeadlineMs?: number | undefined;
  /** List/watch one target (unit tests pass fakes); default: the cluster of `kubeConfig`. */
  listerWatcher?: ((target: ResourceTarget) => ListerWatcher<KubernetesObject>) | undefined;
}

/** What routing updates besides the queue. */
export interface RoutingDeps {
  knowledge: Pick<
    CopyKnowledge,
    'added' | 'updated' | 'deleted' | 'relisted' | 'payloadChanged' | 'payloadDeleted'
  >;
  notes: Pick<DeliveryNotes, 'matcherFor'>;
  writer: Pick<StatusWriter<MirrorDelivery>, 'observed' | 'deleted' | 'relisted'>;
}

export class DeliveryWatches {
  readonly deliveries: Watcher<MirrorDelivery>;
  readonly payloads: Watcher<V1Secret>;
  readonly namespaces: Watcher<NamespaceObject>;
  readonly copies: Record<SourceKind, Watcher<CopyObject>>;
  /** Strings and mark maps shared between cached objects (cached.ts). */
  private readonly intern = new Interner();
  /** A delivery as the cache holds it (for our writes' answers). */
  readonly asCached = slimDelivery(this.intern, (name) => this.delivery(name));
  private readonly namespace: string;
  /** Every namespace as the plan sees it, and which of them each delivery selects. */
  readonly selections = new NamespaceSelections();
  /** The shortest poll period of the deliveries: how often every cache re-lists. */
  private readonly freshness: ShortestPeriod;
  private readonly resyncMs: number;

  constructor(opts: WatchesOptions) {
    const ns = (this.namespace = opts.namespace);
    const clock = opts.clock;
    const lw =
      opts.listerWatcher ??
      ((target: ResourceTarget) => kubeListerWatcher<KubernetesObject>(opts.kubeConfig, target));
    const watcher = <T extends KubernetesObject>(
      resource: string,
      target: ResourceTarget,
      transform?: (obj: T) => T,
    ) =>
      new Watcher<T>({
        resource,
        listerWatcher: lw(target) as ListerWatcher<T>,
        clock,
        resyncPeriodMs: opts.resyncMs,
        ...watchTuning(opts.progressDeadlineMs),
        ...(transform ? { transform } : {}),
      });
    const { group, version, plural } = MIRROR_DELIVERY;
    this.deliveries = watcher(
      'mirrordeliveries',
      { group, version, plural, namespace: ns },
      this.asCached,
    );
    this.payloads = watcher('payload-secrets', {
      version: 'v1',
      plural: 'secrets',
      namespace: ns,
      labelSelector: `${LABEL_PAYLOAD}=true`,
    });
    this.namespaces = watcher(
      'namespaces',
      { version: 'v1', plural: 'namespaces', metadataOnly: true },
      slimNamespace(this.intern) as (obj: NamespaceObject) => NamespaceObject,
    );
    const copies = (kind: SourceKind, plural: string) =>
      watcher<CopyObject>(
        `copy-${plural}`,
        {
          version: 'v1',
          plural,
          labelSelector: `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`,
          metadataOnly: true,
        },
        slimCopy(
          kind,
          this.intern,
          (name, ns) => this.copies[kind].get(name, ns)?.metadata.uid,
        ) as (obj: CopyObject) => CopyObject,
      );
    this.copies = {
      Secret: copies('Secret', 'secrets'),
      ConfigMap: copies('ConfigMap', 'configmaps'),
    };
    this.resyncMs = opts.resyncMs;
    this.freshness = new ShortestPeriod(opts.resyncMs, (ms) => {
      for (const w of this.all()) w.setResyncPeriod(ms);
    });
  }

  /** Every cache. */
  private all(): Watcher<KubernetesObject>[] {
    return [
      this.deliveries,
      this.payloads,
      this.namespaces,
      this.copies.Secret,
      this.copies.ConfigMap,
    ] as unknown as Watcher<KubernetesObject>[];
  }

  /** How often the caches re-list now (the shortest period a delivery asks for). */
  get freshLookMs(): number {
    return this.freshness.ms;
  }

  private pollPeriod(d: MirrorDelivery): number {
    const s = d.spec.pollPeriodSeconds;
    return s ? s * 1000 : this.resyncMs;
  }

  delivery(name: string): MirrorDelivery | undefined {
    return this.deliveries.get(name, this.namespace);
  }

  payload(name: string): V1Secret | undefined {
    return this.payloads.get(name, this.namespace);
  }

  /** Start every watcher on `reconciler`, each change routed to the deliveries it concerns. */
  start(reconciler: Pick<Reconciler, 'watch' | 'add'>, deps: RoutingDeps): void {
    const { knowledge, writer } = deps;
    const enqueue = (name: string | undefined) => {
      if (name) reconciler.add(name);
    };

    reconciler.watch(this.deliveries, {
      onAdd: (d) => {
        writer.observed(d);
        this.freshness.set(d.metadata.name ?? '', this.pollPeriod(d));
        enqueue(d.metadata.name);
      },
      // Our own status patches come back as updates: only spec and metadata matter.
      onUpdate: (d, old) => {
        writer.observed(d);
        if (!deliveryChanged(d, old)) return;
        this.freshness.set(d.metadata.name ?? '', this.pollPeriod(d));
        enqueue(d.metadata.name);
      },
      onDelete: (d) => {
        writer.deleted(d.metadata.name ?? '');
        this.freshness.set(d.metadata.name ?? '', undefined);
        enqueue(d.metadata.name);
      },
      onListed: () => writer.relisted(),
    });

    const payloadChanged = (s: V1Secret) => {
      const name = s.metadata?.name;
      for (const d of this.deliveries.list()) {
        if (d.spec.payloadSecretName === name) enqueue(d.metadata.name);
      }
    };
    reconciler.watch(this.payloads, {
      onAdd: payloadChanged,
      onUpdate: (s) => {
        if (s.metadata?.name) knowledge.payloadChanged(s.metadata.name);
        payloadChanged(s);
      },
      onDelete: (s) => {
        if (s.metadata?.name) knowledge.payloadDeleted(s.metadata.name);
        payloadChanged(s);
      },
    });

    reconciler.watch(this.namespaces, {
      onAdd: (ns) => {
        this.selections.set(namespaceView(ns));
        this.namespaceChanged(ns, undefined, deps, enqueue);
      },
      onUpdate: (ns, old) => {
        if (
          sameMap(ns.metadata.labels, old.metadata.labels) &&
          Boolean(ns.metadata.deletionTimestamp) === Boolean(old.metadata.deletionTimestamp)
        ) {
          return;
        }
        this.selections.set(namespaceView(ns));
        this.namespaceChanged(ns, old, deps, enqueue);
      },
      onDelete: (ns) => {
        this.selections.delete(ns.metadata.name);
        this.namespaceChanged(ns, undefined, deps, enqueue);
      },
      // The handlers above saw every difference the list found; selections are built again
      // from the cache anyway, so they never drift from it for longer than a re-list period.
      onListed: () => this.selections.reset(this.namespaces.list().map(namespaceView)),
    });

    for (const kind of ['Secret', 'ConfigMap'] as const) {
      reconciler.watch(this.copies[kind], {
        onAdd: (c) => {
          if (!knowledge.added(c)) enqueue(deliveryOf(c));
        },
        onUpdate: (c, old) => {
          // A copy relabelled to another delivery: the one it left looks again too.
          if (deliveryOf(old) !== deliveryOf(c)) enqueue(deliveryOf(old));
          if (!knowledge.updated(c, old)) enqueue(deliveryOf(c));
        },
        onDelete: (c) => {
          if (!knowledge.deleted(c)) enqueue(deliveryOf(c));
        },
        // A copy we created whose add the watch never showed: gone before the list.
        onListed: ({ reason, resourceVersion }) => {
          if (reason === 'checked') return;
          for (const d of knowledge.relisted(kind, resourceVersion)) enqueue(d);
        },
      });
    }
  }

  /**
   * Deliveries with a copy in the namespace, and those whose selection takes it in or (with
   * its old labels) did.
   */
  private namespaceChanged(
    ns: NamespaceObject,
    old: NamespaceObject | undefined,
    deps: RoutingDeps,
    enqueue: (name: string) => void,
  ): void {
    const name = ns.metadata.name;
    const withCopies = new Set<string | undefined>();
    for (const c of [...this.copies.Secret.list(name), ...this.copies.ConfigMap.list(name)]) {
      withCopies.add(deliveryOf(c));
    }
    for (const d of this.deliveries.list()) {
      const dn = d.metadata.name ?? '';
      if (withCopies.has(dn)) {
        enqueue(dn);
        continue;
      }
      const m = deps.notes.matcherFor(d);
      if (!m.ok) continue;
      if (
        m.matches({ name, labels: ns.metadata.labels }) ||
        (old && m.matches({ name, labels: old.metadata.labels }))
      ) {
        enqueue(dn);
      }
    }
  }
}

/** A namespace as the plan sees it. */
function namespaceView(ns: NamespaceObject): NamespaceView {
  return {
    name: ns.metadata.name,
    labels: ns.metadata.labels,
    terminating: Boolean(ns.metadata.deletionTimestamp),
  };
}

/** A delivery change worth a reconcile: spec (generation), deletion, finalizers, annotations. */
function deliveryChanged(d: MirrorDelivery, old: MirrorDelivery): boolean {
  const m = d.metadata;
  const o = old.metadata;
  return !(
    m.generation === o.generation &&
    String(m.deletionTimestamp ?? '') === String(o.deletionTimestamp ?? '') &&
    (m.finalizers ?? []).join(',') === (o.finalizers ?? []).join(',') &&
    sameMap(m.annotations, o.annotations)
  );
}

function sameMap(a: Record<string, string> | undefined, b: Record<string, string> | undefined) {
  const ka = Object.keys(a ?? {});
  return ka.length === Object.keys(b ?? {}).length && ka.every((k) => a?.[k] === b?.[k]);
}
