// #/clusters — every MirrorCluster: how the hub reaches it, its agent, its credentials.

import { useState } from 'preact/hooks';
import type { ClusterRow, Snapshot } from '../../src/dashboard/types.js';
import { Empty, LabelKeySelect, Labels, span, Until, YesNo } from './ui.js';

/** Credentials that expire within this are shown amber. */
const EXPIRY_SOON_MS = 10 * 60_000;
/** An agent heartbeat older than this is shown amber. */
const HEARTBEAT_STALE_S = 120;

/**
 * `env=prod region=eu`: every `key=value` term must match a label; any other term must appear
 * in the cluster's name.
 */
export function matchesFilter(row: ClusterRow, filter: string): boolean {
  for (const term of filter.split(/[\s,]+/).filter((t) => t !== '')) {
    const eq = term.indexOf('=');
    if (eq >= 0) {
      if (row.labels[term.slice(0, eq)] !== term.slice(eq + 1)) return false;
    } else if (!row.name.includes(term)) {
      return false;
    }
  }
  return true;
}

function reachable(row: ClusterRow): 'true' | 'false' | 'unknown' {
  return row.reachable === undefined ? 'unknown' : row.reachable ? 'true' : 'false';
}

function Agent({ row, now, snapshotAt }: { row: ClusterRow; now: number; snapshotAt: number }) {
  const a = row.agent;
  if (!a.present) return <span class="badge tri-false">missing</span>;
  const age =
    a.heartbeatAgeSeconds === undefined
      ? undefined
      : a.heartbeatAgeSeconds * 1000 + Math.max(0, now - snapshotAt);
  const at = age === undefined ? undefined : new Date(now - age).toISOString();
  return (
    <span class="agent">
      <span>{a.version ?? 'version unknown'}</span>
      {age !== undefined && (
        <time
          dateTime={at}
          title={`last heartbeat ${at}`}
          class={age / 1000 > HEARTBEAT_STALE_S ? 'text-warn' : 'muted'}
        >
          {' '}
          · {span(age)} ago
        </time>
      )}
    </span>
  );
}

function Row({ row, now, snapshotAt }: { row: ClusterRow; now: number; snapshotAt: number }) {
  const r = reachable(row);
  const cls = r === 'false' ? 'bad' : row.authenticated === false ? 'warn' : undefined;
  return (
    <tr data-cluster={row.name} data-reachable={r} class={cls}>
      <td class="strong" title={row.ready?.message ?? row.ready?.reason}>
        {row.name}
      </td>
      <td>{row.type}</td>
      <td class="mono">{row.account ?? '—'}</td>
      <td>{row.region ?? '—'}</td>
      <td>
        <Labels labels={row.labels} />
      </td>
      <td>
        <YesNo value={row.reachable} />
      </td>
      <td>
        <YesNo value={row.authenticated} />
      </td>
      <td>
        <Agent row={row} now={now} snapshotAt={snapshotAt} />
      </td>
      <td>{row.kubernetesVersion ?? '—'}</td>
      <td>
        <Until iso={row.credentialsExpireAt} now={now} soon={EXPIRY_SOON_MS} />
      </td>
      <td class="error-text" data-testid="cluster-error">
        {row.lastError ?? ''}
      </td>
    </tr>
  );
}

const COLUMNS = [
  'Name',
  'Type',
  'Account',
  'Region',
  'Labels',
  'Reachable',
  'Authenticated',
  'Agent',
  'Kubernetes',
  'Credentials expire',
  'Last error',
];

export function ClustersPage({
  snapshot,
  now,
  snapshotAt,
}: {
  snapshot: Snapshot;
  now: number;
  snapshotAt: number;
}) {
  const [groupBy, setGroupBy] = useState('');
  const [filter, setFilter] = useState('');
  const keys = [...new Set(snapshot.clusters.flatMap((c) => Object.keys(c.labels)))].sort();
  const rows = snapshot.clusters.filter((c) => matchesFilter(c, filter));

  const groups = new Map<string, ClusterRow[]>();
  for (const row of rows) {
    const g = groupBy ? (row.labels[groupBy] ?? '') : '';
    groups.set(g, [...(groups.get(g) ?? []), row]);
  }
  const ordered = [...groups.entries()].sort(([a], [b]) =>
    a === '' ? 1 : b === '' ? -1 : a.localeCompare(b),
  );

  return (
    <section class="page clusters">
      <h1>Clusters</h1>
      {!snapshot.whoami.clusters && (
        <p class="note">Your identity may not list MirrorClusters: cluster details are limited.</p>
      )}
      <div class="toolbar">
        <LabelKeySelect label="Group by" keys={keys} value={groupBy} onChange={setGroupBy} />
        <label>
          Filter{' '}
          <input
            type="search"
            name="filter"
            placeholder="key=value or name"
            value={filter}
            onInput={(e) => setFilter(e.currentTarget.value)}
          />
        </label>
        <span class="muted">
          {rows.length} of {snapshot.clusters.length}
        </span>
      </div>
      {snapshot.clusters.length === 0 ? (
        <Empty>No MirrorCluster is registered (or visible to you).</Empty>
      ) : (
        <table class="grid">
          <thead>
            <tr>
              {COLUMNS.map((c) => (
                <th key={c}>{c}</th>
              ))}
            </tr>
          </thead>
          {ordered.map(([group, list]) => (
            <tbody key={group}>
              {groupBy && (
                <tr class="group-row">
                  <th colSpan={COLUMNS.length} data-group={group}>
                    {groupBy}={group || <span class="muted">(none)</span>}{' '}
                    <span class="muted">({list.length})</span>
                  </th>
                </tr>
              )}
              {list.map((row) => (
                <Row key={row.name} row={row} now={now} snapshotAt={snapshotAt} />
              ))}
            </tbody>
          ))}
        </table>
      )}
      {snapshot.clusters.length > 0 && rows.length === 0 && (
        <Empty>No cluster matches “{filter}”.</Empty>
      )}
    </section>
  );
}
