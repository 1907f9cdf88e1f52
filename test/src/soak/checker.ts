/**
 * The soak's independent checker. It reads only the clusters (mirror specs, MirrorCluster
 * labels, namespaces, Secrets, Events, and at quiet points mirror status to compare with what
 * it saw) and judges with its own model (model.ts):
 *
 * - every namespace a mirror selects holds a copy with the source's current content, and no
 *   marked copy exists where nothing selects it, within `boundMs` of the later of the
 *   discrepancy's first sighting and the last fault's end (never judged while a fault is on);
 * - no planted object ever changes uid or resourceVersion, and nothing is ever written in a
 *   namespace the agents' policy denies (both at once, no bound);
 * - no secret value appears in any log line, Event, status or metric (`scanForSecrets`);
 * - at quiet points (after each fault, churn paused; at the end) each mirror's status counts
 *   agree with what the checker sees (`statusAgrees`; run.ts decides when).
 */
import { readFileSync } from 'node:fs';

import type { CoreV1Api } from '@kubernetes/client-node';

import type { Churn } from './churn.js';
import {
  discrepancies,
  discrepancyKey,
  conflictsByMirror,
  expectedCopies,
  isCopy,
  type ClusterView,
  type Discrepancy,
  type MirrorView,
  type Snapshot,
} from './model.js';
import { LOCKED, SOURCE_NS, SYSTEM_NS, type World } from './world.js';

export interface Violation {
  at: number;
  kind: string;
  what: string;
}

const CRD = { group: 'mirrorhub.io', version: 'v1alpha1' };

interface ListMeta {
  metadata?: { generation?: number; name?: string; deletionTimestamp?: unknown };
}

export class Checker {
  readonly violations: Violation[] = [];
  /** Discrepancy key -> when it was first seen (open until a check no longer finds it). */
  private readonly open = new Map<string, number>();
  private readonly reported = new Set<string>();
  /** Set by the injector: nothing is judged against the bound while a fault is on. */
  faultActive = false;
  lastClear = 0;
  /** Start time of the last check that found nothing older than `graceMs`. */
  lastClean = 0;
  checks = 0;
  /**
   * Discrepancies seen and then gone, by kind (missing, stale, orphan), with the longest one
   * open: proof the checker sees churn and faults at all, and how long repairs took.
   */
  readonly repaired: Record<string, { count: number; maxMs: number }> = {};
  /** Log bytes already scanned, per file. */
  private readonly scanned = new Map<string, number>();

  constructor(
    private readonly w: World,
    private readonly churn: Churn,
    readonly boundMs: number,
    /** A discrepancy younger than this is churn in flight, not a sign of trouble. */
    readonly graceMs: number,
  ) {}

  /** Records a violation once per kind and text. */
  record(kind: string, what: string): void {
    const key = `${kind} ${what}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.violations.push({ at: Date.now(), kind, what });
  }

  /** What the clusters hold now; undefined when the hub cluster cannot be read (a fault). */
  async snapshot(): Promise<Snapshot | undefined> {
    const hub = this.w.core('hub');
    try {
      const [clusters, mirrors, sources] = await Promise.all([
        this.w.custom.listClusterCustomObject({ ...CRD, plural: 'mirrorclusters' }) as Promise<{
          items: Array<{ metadata: { name: string; labels?: Record<string, string> } }>;
        }>,
        this.w.custom.listClusterCustomObject({
          ...CRD,
          plural: 'clustersecretmirrors',
        }) as Promise<{
          items: Array<{
            metadata: { name: string; deletionTimestamp?: string };
            spec: MirrorView['spec'];
          }>;
        }>,
        hub.listNamespacedSecret({ namespace: SOURCE_NS }),
      ]);
      const views = await Promise.all(
        clusters.items.map((c) =>
          this.clusterView(c.metadata.name, c.metadata.labels ?? {}).catch(() => undefined),
        ),
      );
      return {
        hub: 'hub',
        clusters: views.filter((v): v is ClusterView => v !== undefined),
        mirrors: mirrors.items.map((m) => ({
          name: m.metadata.name,
          deleting: m.metadata.deletionTimestamp !== undefined,
          spec: m.spec,
        })),
        sources: new Map(
          sources.items.map((s) => [`${SOURCE_NS}/${s.metadata!.name!}`, decode(s.data)]),
        ),
        denied: (_cluster, ns) => LOCKED.test(ns),
      };
    } catch {
      return undefined;
    }
  }

  private async clusterView(name: string, labels: Record<string, string>): Promise<ClusterView> {
    const core: CoreV1Api = this.w.core(name);
    const [nss, secrets] = await Promise.all([
      core.listNamespace({ labelSelector: 'soak=true' }),
      core.listSecretForAllNamespaces(),
    ]);
    return {
      name,
      labels,
      namespaces: nss.items.map((n) => ({
        name: n.metadata!.name!,
        labels: n.metadata!.labels ?? {},
        terminating: n.metadata!.deletionTimestamp !== undefined,
      })),
      secrets: secrets.items
        .filter((s) => s.metadata!.namespace!.startsWith('soak-'))
        .map((s) => ({
          namespace: s.metadata!.namespace!,
          name: s.metadata!.name!,
          uid: s.metadata!.uid!,
          resourceVersion: s.metadata!.resourceVersion!,
          labels: s.metadata!.labels ?? {},
          annotations: s.metadata!.annotations ?? {},
          data: decode(s.data),
        })),
    };
  }

  /** One pass. Returns the discrepancies found (empty when the hub cluster was unreadable). */
  async check(): Promise<Discrepancy[]> {
    const started = Date.now();
    const s = await this.snapshot();
    if (!s) return [];
    this.checks++;
    const found = discrepancies(s);
    const now = Date.now();
    const keys = new Set(found.map(discrepancyKey));
    for (const [k, first] of [...this.open]) {
      if (keys.has(k)) continue;
      this.open.delete(k);
      const kind = k.split(' ')[0]!;
      const seen = (this.repaired[kind] ??= { count: 0, maxMs: 0 });
      seen.count++;
      seen.maxMs = Math.max(seen.maxMs, started - first);
    }
    let old = 0;
    for (const d of found) {
      const k = discrepancyKey(d);
      const first = this.open.get(k) ?? started;
      this.open.set(k, first);
      if (started - first > this.graceMs) old++;
      if (!this.faultActive && now - Math.max(first, this.lastClear) > this.boundMs)
        this.record('not converged', `${k}, open ${((now - first) / 1000).toFixed(0)}s`);
    }
    if (old === 0) this.lastClean = started;
    this.checkUntouched(s, started);
    return found;
  }

  /** Planted objects unchanged; nothing marked in a denied namespace. */
  private checkUntouched(s: Snapshot, listedFrom: number): void {
    const byCluster = new Map(s.clusters.map((c) => [c.name, c]));
    for (const p of this.churn.planted) {
      if (p.at >= listedFrom) continue; // planted while this snapshot was being read
      const c = byCluster.get(p.cluster);
      if (!c) continue; // unreadable now
      const o = c.secrets.find((x) => x.namespace === p.namespace && x.name === p.name);
      if (!o) this.record('unowned object deleted', `${p.cluster}/${p.namespace}/${p.name}`);
      else if (o.uid !== p.uid || o.resourceVersion !== p.resourceVersion)
        this.record(
          'unowned object modified',
          `${p.cluster}/${p.namespace}/${p.name} resourceVersion ${p.resourceVersion} -> ${o.resourceVersion}`,
        );
    }
    for (const c of s.clusters)
      for (const o of c.secrets)
        if (LOCKED.test(o.namespace) && isCopy(o))
          this.record('written outside policy', `${c.name}/${o.namespace}/${o.name}`);
  }

  /**
   * Searches every log line written since the last scan, every Event in every cluster, the
   * status of every mirrorhub object and every process's metrics for the marker all secret
   * values carry. Returns where it looked.
   */
  async scanForSecrets(): Promise<number> {
    const marker = this.churn.marker;
    let looked = 0;
    for (const p of [...this.w.hubs, ...this.w.agents.values()]) {
      let text = '';
      try {
        text = readFileSync(p.logFile, 'utf8');
      } catch {
        continue;
      }
      const from = this.scanned.get(p.logFile) ?? 0;
      const fresh = text.slice(from);
      this.scanned.set(p.logFile, text.length);
      looked++;
      const line = fresh.split('\n').find((l) => l.includes(marker));
      if (line) this.record('secret value in a log line', `${p.name}: ${line.slice(0, 300)}`);
      if (p.running()) {
        const metrics = await fetch(`http://127.0.0.1:${p.port}/metrics`)
          .then((r) => r.text())
          .catch(() => '');
        looked++;
        if (metrics.includes(marker)) this.record('secret value in metrics', p.name);
      }
    }
    for (const c of this.w.clusters) {
      try {
        const events = await this.w.core(c).listEventForAllNamespaces();
        looked += events.items.length;
        for (const e of events.items)
          if (JSON.stringify(e).includes(marker))
            this.record('secret value in an Event', `${c}: ${e.reason} ${e.message}`);
        const deliveries = (await this.w.customIn(c).listNamespacedCustomObject({
          ...CRD,
          plural: 'mirrordeliveries',
          namespace: SYSTEM_NS,
        })) as { items: Array<{ status?: unknown }> };
        for (const d of deliveries.items) {
          looked++;
          if (JSON.stringify(d.status ?? {}).includes(marker))
            this.record('secret value in a MirrorDelivery status', c);
        }
      } catch {
        // unreachable now; the next scan looks again
      }
    }
    for (const plural of ['clustersecretmirrors', 'mirrorclusters']) {
      const list = (await this.w.custom
        .listClusterCustomObject({ ...CRD, plural })
        .catch(() => ({ items: [] }))) as { items: Array<ListMeta & { status?: unknown }> };
      for (const o of list.items) {
        looked++;
        if (JSON.stringify(o.status ?? {}).includes(marker))
          this.record(`secret value in a ${plural} status`, o.metadata?.name ?? '');
      }
    }
    return looked;
  }

  /**
   * At a quiet point (churn stopped, converged): each mirror's status says it observed its
   * current generation, and its synced and conflict counts are what the checker counts.
   * Returns the disagreements (the caller decides when one is a violation: status lags).
   */
  async statusAgrees(): Promise<string[]> {
    const s = await this.snapshot();
    if (!s) return ['the hub cluster could not be read'];
    const list = (await this.w.custom.listClusterCustomObject({
      ...CRD,
      plural: 'clustersecretmirrors',
    })) as {
      items: Array<{
        metadata: { name: string; generation: number };
        status?: { observedGeneration?: number; counts?: { synced?: number; conflicts?: number } };
      }>;
    };
    const expected = expectedCopies(s);
    const conflicts = conflictsByMirror(s);
    const out: string[] = [];
    for (const m of list.items) {
      const name = m.metadata.name;
      const want = {
        synced: expected.filter((e) => e.mirror === name).length - (conflicts.get(name) ?? 0),
        conflicts: conflicts.get(name) ?? 0,
      };
      const got = m.status?.counts ?? {};
      if (m.status?.observedGeneration !== m.metadata.generation)
        out.push(
          `${name}: status observed generation ${m.status?.observedGeneration}, the mirror is at ${m.metadata.generation}`,
        );
      if ((got.synced ?? 0) !== want.synced || (got.conflicts ?? 0) !== want.conflicts)
        out.push(
          `${name}: status says synced ${got.synced ?? 0}, conflicts ${got.conflicts ?? 0}; the clusters hold synced ${want.synced}, conflicts ${want.conflicts}`,
        );
    }
    return out;
  }

  /** The open discrepancies older than the grace, for a report. */
  lingering(now = Date.now()): string[] {
    return [...this.open].filter(([, t]) => now - t > this.graceMs).map(([k]) => k);
  }
}

function decode(data: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
}
