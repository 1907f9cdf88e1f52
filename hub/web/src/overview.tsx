// #/ — the numbers at a glance and what needs a person, worst first.

import type { Attention, Phase, Snapshot } from '../../src/dashboard/types.js';
import { mirrorHref } from './route.js';
import { Empty } from './ui.js';

const PHASES: Phase[] = ['Active', 'Degraded', 'Error', 'Pending'];

function Card({
  label,
  testid,
  value,
  tone,
  href,
}: {
  label: string;
  testid: string;
  value: string | number;
  tone?: string;
  href?: string;
}) {
  const body = (
    <>
      <span class="card-value" data-testid={testid}>
        {value}
      </span>
      <span class="card-label">{label}</span>
    </>
  );
  const cls = `card${tone ? ` tone-${tone}` : ''}`;
  return href ? (
    <a class={cls} href={href}>
      {body}
    </a>
  ) : (
    <div class={cls}>{body}</div>
  );
}

function attentionHref(ref: string): string {
  return ref.startsWith('cluster:') ? '#/clusters' : mirrorHref(ref);
}

function AttentionItem({ item }: { item: Attention }) {
  return (
    <li
      data-ref={item.ref}
      data-kind={item.kind}
      data-terminal={item.terminal === undefined ? undefined : String(item.terminal)}
      class={`attention-${item.severity}`}
    >
      <span class={`badge sev-${item.severity}`}>{item.severity}</span>
      <a href={attentionHref(item.ref)} class="attention-title">
        {item.title}
      </a>
      <span class="attention-reason">
        {item.reason}
        {item.terminal !== undefined && (
          // The conditions' distinction (Stalled / Reconciling), in words.
          <span class="attention-fix">
            {item.terminal
              ? 'stalled: only a change to its spec, a policy or permissions helps'
              : 'retrying'}
          </span>
        )}
      </span>
    </li>
  );
}

export function OverviewPage({ snapshot }: { snapshot: Snapshot }) {
  const o = snapshot.overview;
  const phase = o.mirrors.byPhase;
  return (
    <section class="page overview">
      <h1>Overview</h1>
      <div class="cards">
        <Card
          label="clusters reachable"
          testid="overview-clusters"
          value={`${o.clusters.reachable}/${o.clusters.total}`}
          tone={o.clusters.reachable < o.clusters.total ? 'bad' : 'good'}
          href="#/clusters"
        />
        <Card
          label="agents healthy"
          testid="overview-agents"
          value={`${o.agents.healthy}/${o.agents.total}`}
          tone={o.agents.healthy < o.agents.total ? 'warn' : 'good'}
          href="#/clusters"
        />
        <Card label="mirrors" testid="overview-mirrors" value={o.mirrors.total} href="#/mirrors" />
        {PHASES.map((p) => (
          <Card
            key={p}
            label={p}
            testid={`overview-phase-${p}`}
            value={phase[p] ?? 0}
            tone={(phase[p] ?? 0) > 0 ? `phase-${p}` : undefined}
            href="#/mirrors"
          />
        ))}
      </div>
      <div class="cards">
        <Card label="target namespaces" testid="overview-namespaces" value={o.copies.namespaces} />
        <Card
          label="copies synced"
          testid="overview-synced"
          value={o.copies.synced}
          tone={o.copies.synced > 0 ? 'good' : undefined}
        />
        <Card
          label="copies failed"
          testid="overview-failed"
          value={o.copies.failed}
          tone={o.copies.failed > 0 ? 'bad' : undefined}
        />
        <Card
          label="conflicts"
          testid="overview-conflicts"
          value={o.copies.conflicts}
          tone={o.copies.conflicts > 0 ? 'conflict' : undefined}
        />
        <Card
          label="denied by policy"
          testid="overview-denied"
          value={o.copies.denied}
          tone={o.copies.denied > 0 ? 'warn' : undefined}
        />
      </div>
      <h2>Needs attention</h2>
      <ul class="attention" data-testid="attention">
        {o.attention.map((a) => (
          <AttentionItem key={`${a.kind} ${a.ref}`} item={a} />
        ))}
      </ul>
      {o.attention.length === 0 && <Empty>Nothing needs attention.</Empty>}
    </section>
  );
}
