// #/mirror/<kind>/<namespace or _>/<name> — one mirror: its facts, conditions, events, and
// what each cluster's agent reported, namespace by namespace.

import type { ComponentChildren } from 'preact';
import type { MirrorClusterDetail, MirrorDetail } from '../../src/dashboard/types.js';
import type { Loaded } from './store.js';
import { Ago, Empty, PhaseBadge, StateBadge, Until, whereLink } from './ui.js';

function Fact({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </>
  );
}

function Current({ c }: { c: MirrorClusterDetail }) {
  if (!c.reported) return <span class="text-warn">no report yet</span>;
  if (!c.current) {
    return <span class="text-warn">agent has not synced the latest content yet</span>;
  }
  return <span class="text-good">current</span>;
}

function ClusterSection({ c, now }: { c: MirrorClusterDetail; now: number }) {
  return (
    <section class="cluster-detail" data-cluster={c.name} data-phase={c.phase}>
      <h3>
        {c.name} <PhaseBadge phase={c.phase} />
      </h3>
      <dl class="facts">
        <Fact label="Content">
          <span data-testid="current">
            <Current c={c} />
          </span>
        </Fact>
        <Fact label="Namespaces">
          {c.synced}/{c.namespaces} synced
          {c.failed > 0 && <span class="text-bad"> · {c.failed} failed</span>}
          {c.conflicts > 0 && <span class="text-conflict"> · {c.conflicts} conflicts</span>}
          {c.denied > 0 && <span class="text-warn"> · {c.denied} denied</span>}
        </Fact>
        <Fact label="Last sync">
          <Ago iso={c.lastSyncTime} now={now} />
        </Fact>
        {c.message && <Fact label="Message">{c.message}</Fact>}
      </dl>
      {c.copies.length > 0 ? (
        <table class="grid copies">
          <thead>
            <tr>
              <th>Namespace</th>
              <th>State</th>
              <th>Message</th>
            </tr>
          </thead>
          <tbody>
            {c.copies.map((cp) => (
              <tr key={cp.namespace} data-namespace={cp.namespace} data-state={cp.state}>
                <td>{cp.namespace}</td>
                <td>
                  <StateBadge state={cp.state} />
                </td>
                <td>{cp.message ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : c.heldBy !== undefined ? (
        <p class="note" data-testid="held-by">
          {c.heldBy
            ? `Hub replica ${c.heldBy} delivers to this cluster: its dashboard lists the copies namespace by namespace.`
            : 'No hub replica holds this cluster at the moment: the one that takes it over delivers and reports.'}
        </p>
      ) : (
        c.reported && <Empty>No namespace is selected in this cluster.</Empty>
      )}
      {c.truncated && (
        <p class="note" data-testid="copies-truncated">
          Incomplete: the agent reported only its first 500 namespaces.
        </p>
      )}
    </section>
  );
}

function Detail({ m, now }: { m: MirrorDetail; now: number }) {
  return (
    <section class="page mirror-detail" data-testid="mirror-detail" data-mirror={m.key}>
      <h1>
        <span class="muted">{m.kind} </span>
        {m.namespace ? `${m.namespace}/${m.name}` : m.name} <PhaseBadge phase={m.phase} />
        {m.suspended && <span class="badge tri-unknown">suspended</span>}
      </h1>
      {m.message && <p class={`message phase-text-${m.phase}`}>{m.message}</p>}
      <dl class="facts">
        <Fact label="Source">
          {m.sourceType} <span class="mono">{m.source}</span>
        </Fact>
        <Fact label="Copies named">{whereLink(m.targetName)}</Fact>
        <Fact label="Destination">{m.destination}</Fact>
        <Fact label="Clusters">{m.clusters.length > 0 ? m.clusters.join(', ') : '—'}</Fact>
        <Fact label="Synced">
          {m.synced}/{m.matched} namespaces
          {m.failed > 0 && <span class="text-bad"> · {m.failed} failed</span>}
          {m.conflicts > 0 && <span class="text-conflict"> · {m.conflicts} conflicts</span>}
          {m.denied > 0 && <span class="text-warn"> · {m.denied} denied</span>}
        </Fact>
        <Fact label="Last sync">
          <Ago iso={m.lastSyncTime} now={now} />
        </Fact>
        {m.leaseExpiresAt && (
          <Fact label="Vault lease expires">
            <Until iso={m.leaseExpiresAt} now={now} soon={10 * 60_000} />
          </Fact>
        )}
      </dl>

      <h2>Conditions</h2>
      {m.conditions.length === 0 ? (
        <Empty>No conditions yet.</Empty>
      ) : (
        <table class="grid conditions">
          <thead>
            <tr>
              <th>Type</th>
              <th>Status</th>
              <th>Reason</th>
              <th>Message</th>
              <th>Since</th>
            </tr>
          </thead>
          <tbody>
            {m.conditions.map((c) => (
              <tr key={c.type} data-condition={c.type} data-status={c.status}>
                <td class="strong">{c.type}</td>
                <td>
                  <span class={`badge cond-${c.status}`}>{c.status}</span>
                </td>
                <td>{c.reason}</td>
                <td>{c.message ?? ''}</td>
                <td>
                  <Ago iso={c.lastTransitionTime} now={now} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h2>Events</h2>
      {m.events.length === 0 ? (
        <Empty>No recent events.</Empty>
      ) : (
        <ul class="events" data-testid="events">
          {m.events.map((e, i) => (
            <li key={i} class={`event-${e.type}`} data-type={e.type}>
              <Ago iso={e.time} now={now} /> <span class={`badge ev-${e.type}`}>{e.type}</span>{' '}
              <span class="strong">{e.reason}</span> {e.message}
              {e.count > 1 && <span class="muted"> (×{e.count})</span>}
            </li>
          ))}
        </ul>
      )}

      <h2>Per cluster</h2>
      {m.perCluster.length === 0 ? (
        <Empty>This mirror reaches no cluster yet.</Empty>
      ) : (
        m.perCluster.map((c) => <ClusterSection key={c.name} c={c} now={now} />)
      )}
    </section>
  );
}

export function MirrorPage({
  mirrorKey,
  result,
  now,
}: {
  mirrorKey: string;
  result: Loaded<MirrorDetail> | undefined;
  now: number;
}) {
  if (!result || result.status === 'loading') {
    return <p class="loading">Loading {mirrorKey}…</p>;
  }
  if (result.status === 'error') {
    if (result.code === 403) {
      return (
        <section class="page denied" data-testid="mirror-forbidden">
          <h1>You may not see this mirror</h1>
          <p class="error-text">{result.error}</p>
        </section>
      );
    }
    if (result.code === 404) {
      return (
        <section class="page notfound" data-testid="mirror-notfound">
          <h1>Mirror not found</h1>
          <p>
            {mirrorKey} not found. <a href="#/mirrors">All mirrors</a>
          </p>
          <p class="muted">{result.error}</p>
        </section>
      );
    }
    return (
      <section class="page">
        <h1>Could not load {mirrorKey}</h1>
        <p class="error-text">{result.error}</p>
      </section>
    );
  }
  return <Detail m={result.data} now={now} />;
}
