// #/mirrors — every SecretMirror and ClusterSecretMirror the viewer may list.

import { useState } from 'preact/hooks';
import type { MirrorRow, Snapshot } from '../../src/dashboard/types.js';
import { mirrorHref } from './route.js';
import { Ago, Empty, PhaseBadge } from './ui.js';

function matches(row: MirrorRow, filter: string): boolean {
  const f = filter.trim().toLowerCase();
  if (f === '') return true;
  return [row.name, row.namespace ?? '', row.source, row.targetName, row.phase].some((s) =>
    s.toLowerCase().includes(f),
  );
}

function Counts({ row }: { row: MirrorRow }) {
  const problems = [
    row.failed > 0 ? `${row.failed} failed` : '',
    row.conflicts > 0 ? `${row.conflicts} conflicts` : '',
    row.denied > 0 ? `${row.denied} denied` : '',
  ].filter((s) => s !== '');
  const cls = row.synced < row.matched ? 'text-warn' : undefined;
  return (
    <span>
      <span class={cls}>
        {row.synced}/{row.matched}
      </span>
      {problems.length > 0 && <span class="text-bad"> · {problems.join(', ')}</span>}
    </span>
  );
}

export function MirrorsPage({ snapshot, now }: { snapshot: Snapshot; now: number }) {
  const [filter, setFilter] = useState('');
  const rows = snapshot.mirrors.filter((m) => matches(m, filter));
  return (
    <section class="page mirrors">
      <h1>Mirrors</h1>
      <div class="toolbar">
        <label>
          Filter{' '}
          <input
            type="search"
            name="filter"
            placeholder="name, namespace, source, phase"
            value={filter}
            onInput={(e) => setFilter(e.currentTarget.value)}
          />
        </label>
        <span class="muted">
          {rows.length} of {snapshot.mirrors.length}
        </span>
      </div>
      {snapshot.mirrors.length === 0 ? (
        <Empty>No mirror is visible to you.</Empty>
      ) : (
        <table class="grid">
          <thead>
            <tr>
              <th>Kind</th>
              <th>Namespace</th>
              <th>Name</th>
              <th>Source type</th>
              <th>Source</th>
              <th>Destination</th>
              <th>Phase</th>
              <th>Synced</th>
              <th>Last sync</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((m) => (
              <tr key={m.key} data-mirror={m.key} data-phase={m.phase}>
                <td>{m.kind}</td>
                <td>{m.namespace ?? <span class="muted">—</span>}</td>
                <td class="strong">
                  <a href={mirrorHref(m.key)}>{m.name}</a>
                  {m.suspended && <span class="badge tri-unknown">suspended</span>}
                </td>
                <td>{m.sourceType}</td>
                <td class="mono">{m.source}</td>
                <td>{m.destination}</td>
                <td title={m.message}>
                  <PhaseBadge phase={m.phase} />
                </td>
                <td>
                  <Counts row={m} />
                </td>
                <td>
                  <Ago iso={m.lastSyncTime} now={now} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
