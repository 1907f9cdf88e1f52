/**
 * The soak's steady churn, one action per tick, picked by a seeded random source so a run can
 * be repeated: namespaces created, deleted and relabelled; sources updated; mirrors created,
 * edited (destination, template, policies) and deleted; copies edited and deleted by "someone
 * else"; unowned objects planted in target namespaces.
 *
 * The kit runs no controller-manager, so a deleted namespace stays Terminating for good. The
 * soak deletes namespaces anyway (the API server marks them, as in a cluster whose namespace
 * controller is slow) and the checker ignores Terminating namespaces: nothing is expected in
 * them, and what mirrorhub left there is not judged.
 */
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';

import type { SoakMirrorSpec } from './model.js';
import { mergePatchOptions } from '@mirrorhub/shared/testing/index';

import { isMarked, MANAGED_BY } from './model.js';
import { SOURCE_NS, type World } from './world.js';

/** mulberry32: small, seeded, good enough to pick actions. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An object the soak planted; it must keep its uid and resourceVersion for good. */
export interface Planted {
  cluster: string;
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** Named like a copy, so a mirror selecting its namespace meets a conflict. */
  conflict: boolean;
  /** When its creation was answered: a snapshot listed before then may not hold it yet. */
  at: number;
}

export const MIRROR_COUNT = 6;
const GROUP = { group: 'mirrorhub.io', version: 'v1alpha1', plural: 'clustersecretmirrors' };

/** Destinations a mirror takes in turn; together they cover names, labels and exclusions. */
const DESTINATIONS: Array<SoakMirrorSpec['destination']> = [
  { clusters: { selector: { matchLabels: { soak: 'true' } } }, namespaces: ['soak-.+'] },
  {
    clusters: { selector: { matchLabels: { soak: 'true' } } },
    namespaceSelector: { matchLabels: { tier: 'gold' } },
  },
  {
    clusters: { selector: { matchLabels: { ring: 'b' } } },
    namespaces: ['soak-[0-9]*[02468]'],
  },
  {
    clusters: { selector: { matchLabels: { ring: 'a' } } },
    namespaces: ['soak-.+'],
    excludeNamespaces: ['soak-1.*'],
  },
  {
    clusters: { selector: { matchLabels: { soak: 'true' } } },
    namespaces: ['soak-[0-9]*[13579]'],
    namespaceSelector: { matchLabels: { tier: 'silver' } },
  },
];

export interface ChurnCounts {
  [action: string]: number;
}

export class Churn {
  readonly counts: ChurnCounts = {};
  readonly errors: ChurnCounts = {};
  readonly planted: Planted[] = [];
  /** Source versions, so every value is new; values carry `marker` for the secret scan. */
  private readonly versions = new Map<number, number>();
  private nsSeq = 0;
  private readonly rand: () => number;

  constructor(
    private readonly w: World,
    /** In every secret value, so logs, Events, statuses and metrics can be searched for it. */
    readonly marker: string,
    seed: number,
  ) {
    this.rand = seeded(seed);
  }

  private pick<T>(xs: readonly T[]): T | undefined {
    return xs.length === 0 ? undefined : xs[Math.floor(this.rand() * xs.length)];
  }

  sourceName(i: number): string {
    return `src-${i}`;
  }

  sourceData(i: number): Record<string, string> {
    const v = this.versions.get(i) ?? 0;
    return { value: `${this.marker}-${i}-${v}`, extra: `${this.marker}-extra-${v % 3}` };
  }

  /** Sources, a first set of mirrors and namespaces: the state churn starts from. */
  async seed(namespacesPerCluster: number): Promise<void> {
    for (let i = 0; i < MIRROR_COUNT; i++) await this.putSource(i);
    for (const c of this.w.clusters)
      for (let n = 0; n < namespacesPerCluster; n++) await this.createNamespace(c);
    for (let i = 0; i < MIRROR_COUNT - 2; i++) await this.applyMirror(i, this.mirrorSpec(i, i));
  }

  mirrorSpec(i: number, variant: number): SoakMirrorSpec {
    const r = variant;
    return {
      source: { kind: 'Secret', name: this.sourceName(i), namespace: SOURCE_NS },
      destination: DESTINATIONS[r % DESTINATIONS.length]!,
      ...(r % 3 === 1 ? { template: { labels: { 'soak.example.com/edition': String(r) } } } : {}),
      ...(r % 3 === 2 ? { template: { keys: [{ from: 'value', to: 'v' }] } } : {}),
      deletePolicy: r % 4 === 3 ? 'Retain' : 'Delete',
      pollPeriodSeconds: r % 2 === 0 ? 30 : 60,
    };
  }

  /** One churn action. */
  async tick(): Promise<void> {
    const r = this.rand();
    const action =
      r < 0.2
        ? 'update-source'
        : r < 0.32
          ? 'create-namespace'
          : r < 0.38
            ? 'delete-namespace'
            : r < 0.5
              ? 'relabel-namespace'
              : r < 0.58
                ? 'edit-copy'
                : r < 0.66
                  ? 'delete-copy'
                  : r < 0.72
                    ? 'plant'
                    : r < 0.82
                      ? 'edit-mirror'
                      : r < 0.86
                        ? 'delete-mirror'
                        : r < 0.9
                          ? 'create-mirror'
                          : 'idle';
    try {
      await this.do(action);
      this.counts[action] = (this.counts[action] ?? 0) + 1;
    } catch (err) {
      // The clusters are under faults: a write may fail; churn goes on.
      const code = (err as { code?: number }).code ?? 'error';
      const key = `${action} (${code})`;
      this.errors[key] = (this.errors[key] ?? 0) + 1;
    }
  }

  private async do(action: string): Promise<void> {
    const cluster = this.pick(this.w.clusters)!;
    switch (action) {
      case 'update-source':
        return this.putSource(Math.floor(this.rand() * MIRROR_COUNT));
      case 'create-namespace':
        return this.createNamespace(cluster);
      case 'delete-namespace': {
        const ns = this.pick(await this.liveNamespaces(cluster));
        if (ns) await this.w.core(cluster).deleteNamespace({ name: ns.name });
        return;
      }
      case 'relabel-namespace': {
        const ns = this.pick(await this.liveNamespaces(cluster));
        if (!ns) return;
        const tier = ns.labels['tier'] === 'gold' ? 'silver' : 'gold';
        await this.w
          .core(cluster)
          .patchNamespace(
            { name: ns.name, body: { metadata: { labels: { tier } } } },
            mergePatchOptions(),
          );
        return;
      }
      case 'edit-copy':
      case 'delete-copy': {
        const copy = this.pick(await this.copies(cluster));
        if (!copy) return;
        const core = this.w.core(cluster);
        const ref = { name: copy.metadata!.name!, namespace: copy.metadata!.namespace! };
        if (action === 'delete-copy') return void (await core.deleteNamespacedSecret(ref));
        await core.patchNamespacedSecret(
          { ...ref, body: { stringData: { value: 'edited by someone else' } } },
          mergePatchOptions(),
        );
        return;
      }
      case 'plant':
        return this.plant(cluster);
      case 'edit-mirror':
      case 'delete-mirror':
      case 'create-mirror': {
        const have = await this.mirrorNames();
        if (action === 'create-mirror') {
          const free = [...Array(MIRROR_COUNT).keys()].filter((i) => !have.has(`soak-m${i}`));
          const i = this.pick(free);
          if (i !== undefined)
            await this.applyMirror(i, this.mirrorSpec(i, Math.floor(this.rand() * 12)));
          return;
        }
        const name = this.pick([...have]);
        if (!name) return;
        if (action === 'delete-mirror')
          return void (await this.w.custom.deleteClusterCustomObject({ ...GROUP, name }));
        const i = Number(name.slice('soak-m'.length));
        await this.applyMirror(i, this.mirrorSpec(i, Math.floor(this.rand() * 12)));
        return;
      }
      default:
        return;
    }
  }

  async putSource(i: number): Promise<void> {
    const v = (this.versions.get(i) ?? -1) + 1;
    const core = this.w.core('hub');
    const name = this.sourceName(i);
    this.versions.set(i, v);
    const body: V1Secret = { metadata: { name }, stringData: this.sourceData(i) };
    if (v === 0) await core.createNamespacedSecret({ namespace: SOURCE_NS, body });
    else
      await core.replaceNamespacedSecret({
        name,
        namespace: SOURCE_NS,
        body: { metadata: { name }, data: {}, stringData: this.sourceData(i) },
      });
  }

  async createNamespace(cluster: string): Promise<void> {
    const n = this.nsSeq++;
    // One in ten is locked: the agents' policy denies it, so nothing may ever land there.
    const name = n % 10 === 9 ? `soak-locked-${n}` : `soak-${n}`;
    const tier = this.rand() < 0.5 ? 'gold' : 'silver';
    await this.w
      .core(cluster)
      .createNamespace({ body: { metadata: { name, labels: { tier, soak: 'true' } } } });
  }

  private async liveNamespaces(cluster: string) {
    const list = await this.w.core(cluster).listNamespace({ labelSelector: 'soak=true' });
    return list.items
      .filter((n) => !n.metadata?.deletionTimestamp)
      .map((n) => ({ name: n.metadata!.name!, labels: n.metadata!.labels ?? {} }));
  }

  private async copies(cluster: string): Promise<V1Secret[]> {
    const list = await this.w
      .core(cluster)
      .listSecretForAllNamespaces({ labelSelector: MANAGED_BY });
    return list.items.filter((s) => isMarked(s.metadata?.labels, s.metadata?.annotations));
  }

  private async mirrorNames(): Promise<Set<string>> {
    const list = (await this.w.custom.listClusterCustomObject(GROUP)) as {
      items: Array<{ metadata: { name: string; deletionTimestamp?: string } }>;
    };
    return new Set(
      list.items.filter((m) => !m.metadata.deletionTimestamp).map((m) => m.metadata.name),
    );
  }

  async applyMirror(i: number, spec: SoakMirrorSpec): Promise<void> {
    const name = `soak-m${i}`;
    const body = {
      apiVersion: 'mirrorhub.io/v1alpha1',
      kind: 'ClusterSecretMirror',
      metadata: { name },
      spec,
    };
    try {
      const cur = (await this.w.custom.getClusterCustomObject({ ...GROUP, name })) as {
        metadata: { resourceVersion: string; deletionTimestamp?: string };
      };
      if (cur.metadata.deletionTimestamp) return;
      await this.w.custom.replaceClusterCustomObject({
        ...GROUP,
        name,
        body: { ...body, metadata: { name, resourceVersion: cur.metadata.resourceVersion } },
      });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
      await this.w.custom.createClusterCustomObject({ ...GROUP, body });
    }
  }

  /**
   * An object mirrorhub does not own, in a soak namespace: half the time named like a copy
   * (so some mirror meets it as a conflict), else a bystander. Its uid and resourceVersion are
   * recorded; the checker holds mirrorhub to never changing either.
   */
  private async plant(cluster: string): Promise<void> {
    const ns = this.pick(await this.liveNamespaces(cluster));
    if (!ns) return;
    const conflict = this.rand() < 0.5;
    const name = conflict
      ? this.sourceName(Math.floor(this.rand() * MIRROR_COUNT))
      : `bystander-${this.planted.length}`;
    const core: CoreV1Api = this.w.core(cluster);
    let created: V1Secret;
    try {
      created = await core.createNamespacedSecret({
        namespace: ns.name,
        body: {
          metadata: { name, labels: { 'soak.example.com/planted': 'true' } },
          stringData: { owner: 'someone else' },
        },
      });
    } catch (err) {
      if ((err as { code?: number }).code === 409) return; // a copy or earlier plant has it
      throw err;
    }
    this.planted.push({
      at: Date.now(),
      cluster,
      namespace: ns.name,
      name,
      uid: created.metadata!.uid!,
      resourceVersion: created.metadata!.resourceVersion!,
      conflict,
    });
  }
}
