// The dashboard's views, computed from what the hub already holds: MirrorClusters, mirrors
// (their status), the deliveries in every cluster (the agents' reports) and the Events the hub
// recorded. Pure: no I/O, no clock; server.ts and the CLI feed it. What a viewer may see is
// decided here too (Access), so every page, API answer and CLI table is filtered the same way.
//
// Only names, states, counts and messages leave this file: a delivery's spec.template (copy
// metadata) and anything else a mirror carries are never read into a view.
import type {
  AnyMirror,
  ClusterSyncStatus,
  MirrorCluster,
  MirrorDelivery,
  SecretMirror,
} from '@mirrorhub/shared/api/index';
import type {
  Attention,
  CellState,
  ClusterRow,
  ConditionRow,
  EventRow,
  Matrix,
  MatrixCell,
  MirrorClusterDetail,
  MirrorDetail,
  MirrorRow,
  NamespaceCopy,
  Overview,
  Phase,
  Where,
  WhereRow,
} from './types.js';
import {
  findCondition,
  mirrorRef,
  parseMirrorRef,
  reasonClass,
  reportedNamespaces,
} from '@mirrorhub/shared/mirror/index';
import { detailsInDelivery, redactNames, type VisibleNames } from '@mirrorhub/shared/mirror/redact';

/** What one identity may see (auth.ts asks the API server; the CLI sees what its RBAC lists). */
export interface Access {
  /** list secretmirrors in every namespace and list clustersecretmirrors. */
  allMirrors: boolean;
  /** Namespaces whose SecretMirrors may be listed (when !allMirrors). */
  namespaces: ReadonlySet<string>;
  /** list mirrorclusters: every MirrorCluster with its details. */
  clusters: boolean;
}

export const FULL_ACCESS: Access = { allMirrors: true, namespaces: new Set(), clusters: true };

export interface ViewInput {
  /** Milliseconds since the epoch. */
  now: number;
  clusters: readonly MirrorCluster[];
  mirrors: readonly AnyMirror[];
  /** Per cluster (MirrorCluster name): the deliveries of this hub in its agent namespace. */
  deliveries: ReadonlyMap<string, readonly MirrorDelivery[]>;
  /** Recent Events per mirror key, newest first. */
  events?: ReadonlyMap<string, readonly EventRow[]>;
  /**
   * Clusters another hub replica delivers to (shared followers), by cluster, its identity ('':
   * held by none at the moment). They have no delivery here: their status entries are the
   * holder's reports, which the mirror's status counts only while they describe its current
   * content.
   */
  heldBy?: ReadonlyMap<string, string>;
}

/** Credentials or a lease this close to expiry need attention. */
export const EXPIRY_WARNING_MS = 10 * 60_000;

const PHASES: readonly Phase[] = ['Pending', 'Active', 'Degraded', 'Error'];

// ---- identity ------------------------------------------------------------------------------

/** A mirror's key: its mirrorhub.io/mirror reference (SecretMirror/<ns>/<name>, ...). */
function keyOfMirror(m: AnyMirror): string {
  return mirrorRef({
    kind: m.kind === 'ClusterSecretMirror' ? 'ClusterSecretMirror' : 'SecretMirror',
    ...(m.kind === 'ClusterSecretMirror' ? {} : { namespace: m.metadata.namespace ?? '' }),
    name: m.metadata.name ?? '',
  });
}

/** Whether `access` may see the mirror with this key. */
export function maySee(access: Access, key: string): boolean {
  if (access.allMirrors) return true;
  const id = parseMirrorRef(key);
  return id?.kind === 'SecretMirror' && access.namespaces.has(id.namespace ?? '');
}

export function visibleMirrors(input: ViewInput, access: Access): AnyMirror[] {
  return input.mirrors.filter((m) => maySee(access, keyOfMirror(m)));
}

/**
 * What the views of a viewer without the cluster-wide right are computed from: the mirrors they
 * may see, those mirrors' deliveries and Events, and every message in them naming no delivery or
 * mirror beyond those (the agents' messages name the owner of a conflicting copy). What an agent
 * says about a copy in a namespace they may not list is its state alone, as in the mirror's
 * status (hub/src/mirrors/destinations/clusters/plan.ts redactForTenant).
 */
export function viewerInput(input: ViewInput, access: Access): ViewInput {
  if (access.allMirrors) return input;
  const mirrors = visibleMirrors(input, access);
  const keys = new Set(mirrors.map(keyOfMirror));
  const own = new Map<string, MirrorDelivery[]>();
  const names = new Set<string>();
  for (const [cluster, list] of input.deliveries) {
    const mine = list.filter((d) => keys.has(mirrorRef(d.spec.mirror)));
    for (const d of mine) names.add(d.metadata.name ?? '');
    own.set(cluster, mine);
  }
  const visible: VisibleNames = {
    delivery: (name) => names.has(name),
    mirror: (ref) => maySee(access, ref),
  };
  const say = (message: string) => redactNames(message, visible);
  const deliveries = new Map<string, MirrorDelivery[]>();
  for (const [cluster, list] of own) {
    deliveries.set(
      cluster,
      list.map((d) => {
        if (!d.status) return d;
        const where = detailsInDelivery(d.metadata.name ?? '', d.metadata.namespace ?? '', cluster);
        const status = { ...d.status };
        if (status.message) status.message = say(status.message);
        if (status.namespaces) {
          status.namespaces = status.namespaces.map((n) =>
            n.message === undefined
              ? n
              : {
                  ...n,
                  message: access.namespaces.has(n.name) ? say(n.message) : `${n.state}: ${where}`,
                },
          );
        }
        return { ...d, status };
      }),
    );
  }
  const events = new Map<string, EventRow[]>();
  for (const [key, rows] of input.events ?? []) {
    if (keys.has(key))
      events.set(
        key,
        rows.map((r) => ({ ...r, message: say(r.message) })),
      );
  }
  return {
    ...input,
    mirrors: mirrors.map((m) => redactStatus(m, say)),
    deliveries,
    events,
  };
}

function redactStatus<M extends AnyMirror>(m: M, say: (message: string) => string): M {
  const st = m.status;
  if (!st) return m;
  const msg = <T extends { message?: string }>(x: T): T =>
    x.message ? { ...x, message: say(x.message) } : x;
  return {
    ...m,
    status: {
      ...msg(st),
      ...(st.conditions ? { conditions: st.conditions.map(msg) } : {}),
      ...(st.clusters ? { clusters: st.clusters.map(msg) } : {}),
      ...(st.problems ? { problems: st.problems.map(msg) } : {}),
    },
  };
}

// ---- rows ----------------------------------------------------------------------------------

function targetNameOf(m: AnyMirror): string {
  const spec = m.spec;
  if (spec.destination.name) return spec.destination.name;
  if (spec.source.kind === 'Vault') return m.metadata.name ?? '';
  return spec.source.name ?? m.metadata.name ?? '';
}

export function mirrorRow(m: AnyMirror): MirrorRow {
  const st = m.status ?? {};
  const counts = st.counts ?? {};
  const spec = m.spec;
  const namespace = m.kind === 'SecretMirror' ? (m as SecretMirror).metadata.namespace : undefined;
  return {
    key: keyOfMirror(m),
    kind: m.kind === 'ClusterSecretMirror' ? 'ClusterSecretMirror' : 'SecretMirror',
    ...(namespace ? { namespace } : {}),
    name: m.metadata.name ?? '',
    sourceType: spec.source.kind ?? 'Secret',
    source: st.source ?? spec.source.name ?? spec.source.vault?.path ?? '',
    targetName: targetNameOf(m),
    destination: st.destination ?? '',
    phase: st.phase ?? 'Pending',
    ...(st.message ? { message: st.message } : {}),
    matched: counts.namespaces ?? 0,
    synced: counts.synced ?? 0,
    failed: counts.failed ?? 0,
    conflicts: counts.conflicts ?? 0,
    denied: counts.denied ?? 0,
    ...(st.lastSyncTime ? { lastSyncTime: st.lastSyncTime } : {}),
    clusters: (st.clusters ?? []).map((c) => c.name),
    suspended: spec.suspend === true,
  };
}

const ACCOUNT = /^arn:aws[\w-]*:iam::(\d{12}):/;

export function clusterRow(c: MirrorCluster, now: number, full: boolean): ClusterRow {
  const st = c.status ?? {};
  const heartbeat = st.agent?.lastHeartbeat ? Date.parse(st.agent.lastHeartbeat) : NaN;
  const row: ClusterRow = {
    name: c.metadata.name ?? '',
    type: st.type ?? (c.spec.eks ? 'EKS' : c.spec.kubeconfigSecretRef ? 'Kubeconfig' : 'Unknown'),
    labels: {},
    ...(st.reachable !== undefined ? { reachable: st.reachable } : {}),
    agent: { present: st.agent?.present === true },
  };
  if (!full) return row;
  row.labels = { ...(c.metadata.labels ?? {}) };
  if (c.spec.inCluster) row.type = 'InCluster';
  const account = c.spec.eks?.roleArn ? ACCOUNT.exec(c.spec.eks.roleArn)?.[1] : undefined;
  if (account) row.account = account;
  if (c.spec.eks?.region) row.region = c.spec.eks.region;
  if (st.authenticated !== undefined) row.authenticated = st.authenticated;
  if (st.agent?.version) row.agent.version = st.agent.version;
  if (Number.isFinite(heartbeat)) {
    row.agent.heartbeatAgeSeconds = Math.max(0, Math.round((now - heartbeat) / 1000));
  }
  if (st.kubernetesVersion) row.kubernetesVersion = st.kubernetesVersion;
  if (st.credentialsExpireAt) row.credentialsExpireAt = st.credentialsExpireAt;
  if (st.lastError) row.lastError = st.lastError;
  const ready = st.conditions?.find((x) => x.type === 'Ready');
  if (ready) {
    row.ready = {
      status: ready.status,
      reason: ready.reason,
      ...(ready.message ? { message: ready.message } : {}),
    };
  }
  return row;
}

/**
 * The clusters a viewer sees: every MirrorCluster for those who may list them; for others only
 * the clusters their own mirrors reach, by name and reachability.
 */
export function clusterRows(input: ViewInput, access: Access): ClusterRow[] {
  const rows = input.clusters.map((c) => clusterRow(c, input.now, access.clusters));
  if (access.clusters) return rows.sort((a, b) => a.name.localeCompare(b.name));
  const reached = new Set(visibleMirrors(input, access).flatMap((m) => mirrorRow(m).clusters));
  return rows.filter((r) => reached.has(r.name)).sort((a, b) => a.name.localeCompare(b.name));
}

export function mirrorRows(input: ViewInput, access: Access): MirrorRow[] {
  return visibleMirrors(input, access)
    .map(mirrorRow)
    .sort((a, b) => a.key.localeCompare(b.key));
}

// ---- overview ------------------------------------------------------------------------------

function expiresSoon(iso: string | undefined, now: number): boolean {
  if (!iso) return false;
  const t = Date.parse(iso);
  return Number.isFinite(t) && t - now < EXPIRY_WARNING_MS;
}

/**
 * Whether a mirror is stuck until someone changes its spec, a policy or permissions: its Stalled
 * condition, or (a status written before Stalled existed) a terminal Ready reason.
 */
export function isTerminal(m: AnyMirror): boolean {
  const conditions = m.status?.conditions;
  if (findCondition(conditions, 'Stalled')?.status === 'True') return true;
  const ready = findCondition(conditions, 'Ready');
  return ready?.status === 'False' && reasonClass(ready.reason) === 'terminal';
}

export function attention(input: ViewInput, access: Access): Attention[] {
  const out: Attention[] = [];
  for (const m of visibleMirrors(input, access)) {
    const row = mirrorRow(m);
    const title = row.namespace ? `${row.namespace}/${row.name}` : row.name;
    const terminal = isTerminal(m);
    const push = (a: Omit<Attention, 'terminal'>) => out.push({ ...a, terminal });
    if (row.phase === 'Error') {
      push({
        severity: 'error',
        kind: 'MirrorError',
        ref: row.key,
        title,
        reason: row.message ?? 'the mirror cannot be synced',
      });
    }
    // Waiting for something that is not a rollout (a source that does not exist, a Vault that
    // cannot be read): mirrorhub retries, but a person may be the one to fix it.
    const ready = findCondition(m.status?.conditions, 'Ready');
    if (
      row.phase === 'Pending' &&
      !row.suspended &&
      ready?.status === 'False' &&
      ready.reason !== 'Progressing' &&
      ready.reason !== 'Suspended'
    ) {
      push({
        severity: terminal ? 'error' : 'warning',
        kind: 'MirrorPending',
        ref: row.key,
        title,
        reason: ready.message || row.message || ready.reason,
      });
    }
    const problems = m.status?.problems ?? [];
    if (row.conflicts > 0) {
      const first = problems.find((p) => p.state === 'Conflict');
      push({
        severity: 'warning',
        kind: 'Conflict',
        ref: row.key,
        title,
        reason:
          `${row.conflicts} conflict${row.conflicts === 1 ? '' : 's'}` +
          (first
            ? `, e.g. ${first.cluster}/${first.namespace}: ${first.message ?? 'name taken'}`
            : ''),
      });
    }
    if (row.phase === 'Degraded' && row.failed + row.denied > 0) {
      const first = problems.find((p) => p.state !== 'Conflict');
      push({
        severity: 'warning',
        kind: 'MirrorDegraded',
        ref: row.key,
        title,
        reason: first
          ? `${first.state} in ${first.cluster}/${first.namespace}: ${first.message ?? ''}`.trim()
          : (row.message ?? 'some copies failed'),
      });
    } else if (row.phase === 'Degraded' && row.conflicts === 0) {
      push({
        severity: 'warning',
        kind: 'MirrorDegraded',
        ref: row.key,
        title,
        reason: row.message ?? 'degraded',
      });
    }
    const lease = m.status?.lease;
    if (lease?.expiresAt && expiresSoon(lease.expiresAt, input.now)) {
      push({
        severity: 'warning',
        kind: 'LeaseExpiring',
        ref: row.key,
        title,
        reason: `the Vault lease behind the delivered credentials expires at ${lease.expiresAt}`,
      });
    }
  }
  for (const c of clusterRows(input, access)) {
    const ref = `cluster:${c.name}`;
    const why = (fallback: string) => (access.clusters && c.lastError ? c.lastError : fallback);
    if (c.reachable === false) {
      out.push({
        severity: 'error',
        kind: 'ClusterUnreachable',
        ref,
        title: c.name,
        reason: why('the hub cannot reach the cluster'),
      });
    } else if (c.authenticated === false) {
      out.push({
        severity: 'error',
        kind: 'ClusterUnauthenticated',
        ref,
        title: c.name,
        reason: why('the cluster refuses the hub'),
      });
    } else if (c.reachable === true && !c.agent.present) {
      out.push({
        severity: 'warning',
        kind: 'AgentMissing',
        ref,
        title: c.name,
        reason: 'no fresh heartbeat from the agent: copies in this cluster are not kept in sync',
      });
    }
    if (access.clusters && expiresSoon(c.credentialsExpireAt, input.now)) {
      out.push({
        severity: 'warning',
        kind: 'CredentialsExpiring',
        ref,
        title: c.name,
        reason: `the hub's credentials for this cluster expire at ${c.credentialsExpireAt}`,
      });
    }
  }
  const rank = (a: Attention) => (a.severity === 'error' ? 0 : 1);
  return out.sort((a, b) => rank(a) - rank(b) || a.ref.localeCompare(b.ref));
}

export function overview(input: ViewInput, access: Access): Overview {
  const clusters = clusterRows(input, access);
  const mirrors = mirrorRows(input, access);
  const byPhase = Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<Phase, number>;
  const copies = { namespaces: 0, synced: 0, failed: 0, conflicts: 0, denied: 0 };
  for (const m of mirrors) {
    byPhase[m.phase] += 1;
    copies.namespaces += m.matched;
    copies.synced += m.synced;
    copies.failed += m.failed;
    copies.conflicts += m.conflicts;
    copies.denied += m.denied;
  }
  return {
    clusters: {
      reachable: clusters.filter((c) => c.reachable === true).length,
      total: clusters.length,
    },
    agents: { healthy: clusters.filter((c) => c.agent.present).length, total: clusters.length },
    mirrors: { total: mirrors.length, byPhase },
    copies,
    attention: attention(input, access),
  };
}

// ---- one mirror ----------------------------------------------------------------------------

/** Per mirror key, its delivery in each cluster: one pass over every cluster's deliveries. */
function deliveriesByMirror(input: ViewInput): Map<string, Map<string, MirrorDelivery>> {
  const out = new Map<string, Map<string, MirrorDelivery>>();
  for (const [cluster, list] of input.deliveries) {
    for (const d of list) {
      const key = mirrorRef(d.spec.mirror);
      let byCluster = out.get(key);
      if (!byCluster) out.set(key, (byCluster = new Map()));
      byCluster.set(cluster, d);
    }
  }
  return out;
}

function isCurrent(d: MirrorDelivery | undefined): boolean {
  return d?.status?.observedHash !== undefined && d.status.observedHash === d.spec.contentHash;
}

function copiesOf(d: MirrorDelivery | undefined): NamespaceCopy[] {
  return reportedNamespaces(d?.status).map((n) => ({
    namespace: n.name,
    state: n.state,
    ...(n.message ? { message: n.message } : {}),
  }));
}

/** What the mirror's status says of one cluster, as the detail page shows it. */
function clusterCounts(c: ClusterSyncStatus) {
  return {
    name: c.name,
    phase: c.phase ?? 'Pending',
    ...(c.message ? { message: c.message } : {}),
    namespaces: c.namespaces ?? 0,
    synced: c.synced ?? 0,
    failed: c.failed ?? 0,
    conflicts: c.conflicts ?? 0,
    denied: c.denied ?? 0,
    ...(c.lastSyncTime ? { lastSyncTime: c.lastSyncTime } : {}),
  };
}

export function findMirror(input: ViewInput, key: string): AnyMirror | undefined {
  return input.mirrors.find((m) => keyOfMirror(m) === key);
}

export function mirrorDetail(input: ViewInput, m: AnyMirror): MirrorDetail {
  const row = mirrorRow(m);
  const deliveries = deliveriesByMirror(input).get(row.key) ?? new Map<string, MirrorDelivery>();
  const conditions: ConditionRow[] = (m.status?.conditions ?? []).map((c) => ({
    type: c.type,
    status: c.status,
    reason: c.reason,
    ...(c.message ? { message: c.message } : {}),
    lastTransitionTime: c.lastTransitionTime,
  }));
  const perCluster: MirrorClusterDetail[] = (m.status?.clusters ?? []).map((c) => {
    const d = deliveries.get(c.name);
    const heldBy = input.heldBy?.get(c.name);
    if (heldBy !== undefined) {
      const reported = (c.phase ?? 'Pending') !== 'Pending';
      return {
        ...clusterCounts(c),
        current: reported,
        copies: [],
        truncated: false,
        reported,
        heldBy,
      };
    }
    return {
      ...clusterCounts(c),
      current: isCurrent(d),
      copies: copiesOf(d),
      truncated: d?.status?.truncated === true,
      reported: d?.status?.phase !== undefined,
    };
  });
  const lease = m.status?.lease?.expiresAt;
  return {
    ...row,
    conditions,
    perCluster,
    events: [...(input.events?.get(row.key) ?? [])],
    ...(lease ? { leaseExpiresAt: lease } : {}),
  };
}

// ---- where is it ---------------------------------------------------------------------------

function cellOf(
  c: ClusterSyncStatus,
  d: MirrorDelivery | undefined,
  mirrorFailing: boolean,
  /** Another replica delivers there: the entry is its report, counted only when current. */
  heldElsewhere: boolean,
): MatrixCell {
  const namespaces = c.namespaces ?? 0;
  const synced = c.synced ?? 0;
  let state: CellState;
  if (c.phase === 'Error' || (c.failed ?? 0) > 0) state = 'failing';
  else if ((c.conflicts ?? 0) > 0) state = 'conflict';
  else if ((c.denied ?? 0) > 0) state = 'denied';
  // A mirror in Error (source unreadable, spec invalid...) is failing wherever it goes, even
  // where the last copies are still in place: nothing there is kept in sync.
  else if (mirrorFailing) state = 'failing';
  else if ((!heldElsewhere && !isCurrent(d)) || synced < namespaces || c.phase !== 'Active')
    state = 'stale';
  else state = 'synced';
  return { state, synced, namespaces, ...(c.message ? { message: c.message } : {}) };
}

export function matrix(input: ViewInput, access: Access, groupBy = ''): Matrix {
  const clusters = clusterRows(input, access);
  const groupKeys = [...new Set(clusters.flatMap((c) => Object.keys(c.labels)))].sort();
  const key = groupKeys.includes(groupBy) ? groupBy : '';
  const visible = visibleMirrors(input, access).map((m) => ({ m, row: mirrorRow(m) }));
  // Clusters the mirrors reach without a MirrorCluster (the hub's own, implicitly) too.
  const named = new Set(clusters.map((c) => c.name));
  const implicit = [...new Set(visible.flatMap(({ row }) => row.clusters))].filter(
    (n) => !named.has(n),
  );
  const columns = [
    ...clusters.map((c) => ({ cluster: c.name, group: key ? (c.labels[key] ?? '') : '' })),
    ...implicit.map((cluster) => ({ cluster, group: '' })),
  ].sort((a, b) => a.group.localeCompare(b.group) || a.cluster.localeCompare(b.cluster));
  const index = deliveriesByMirror(input);
  const rows = visible
    .map(({ m, row }) => {
      const deliveries = index.get(row.key);
      const entries = new Map((m.status?.clusters ?? []).map((c) => [c.name, c]));
      const failing = row.phase === 'Error';
      const cells = columns.map((col): MatrixCell => {
        const c = entries.get(col.cluster);
        if (!c) return { state: 'none', synced: 0, namespaces: 0 };
        const heldElsewhere = input.heldBy?.has(col.cluster) ?? false;
        return cellOf(c, deliveries?.get(col.cluster), failing, heldElsewhere);
      });
      return {
        key: row.key,
        name: row.name,
        ...(row.namespace ? { namespace: row.namespace } : {}),
        targetName: row.targetName,
        cells,
      };
    })
    .sort((a, b) => a.key.localeCompare(b.key));
  return { groupBy: key, groupKeys, columns, rows };
}

/** Every (cluster, namespace) holding a copy named `name` of a mirror the viewer may see. */
export function where(input: ViewInput, access: Access, name: string): Where {
  const items: WhereRow[] = [];
  let truncated = false;
  for (const [cluster, list] of input.deliveries) {
    for (const d of list) {
      if (d.spec.target.name !== name) continue;
      const mirror = mirrorRef(d.spec.mirror);
      if (!maySee(access, mirror)) continue;
      if (d.status?.truncated) truncated = true;
      const kind = d.spec.target.kind;
      const copies = copiesOf(d);
      if (copies.length === 0 && d.status?.phase === undefined) {
        items.push({ cluster, namespace: '', state: 'Pending', mirror, kind });
      }
      for (const c of copies) items.push({ cluster, ...c, mirror, kind });
    }
  }
  items.sort(compareWhereRows);
  return { name, items, truncated };
}

/** The order of "where" rows: cluster, namespace, mirror. */
export function compareWhereRows(a: WhereRow, b: WhereRow): number {
  return (
    a.cluster.localeCompare(b.cluster) ||
    a.namespace.localeCompare(b.namespace) ||
    a.mirror.localeCompare(b.mirror)
  );
}
