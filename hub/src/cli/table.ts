// Plain text tables like kubectl's: upper-case headers, columns two spaces apart, `<none>` for
// an empty cell, no colours. Every cell is one line of printable text: messages come from
// objects other people write, so control characters (terminal escapes) are replaced.
import type { Attention, ClusterRow, MirrorRow, Phase } from '../dashboard/types.js';
import type { ClusterSummary, StatusReport, WhereReport } from './gather.js';

const NONE = '<none>';
// C0 and C1 control characters: a message must not move the cursor or colour the terminal.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]+/g;

/** One line of printable text: control characters (ESC, CR, LF, TAB, ...) become spaces. */
export function cell(value: string | number | boolean | undefined): string {
  if (value === undefined || value === '') return NONE;
  const text = String(value).replace(CONTROL, ' ').trim();
  return text === '' ? NONE : text;
}

/** The rows under upper-case headers, each column as wide as its widest cell. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [headers.map((h) => h.toUpperCase()), ...rows.map((r) => r.map((c) => cell(c)))];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** How long ago, the way kubectl prints ages (90s, 5m30s, 3h, 12d, 2y30d). */
export function age(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < -1) return '<invalid>';
  if (s < 0) return '0s';
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 24 * 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  const y = Math.floor(d / 365);
  if (d < 365 * 8) return d % 365 === 0 ? `${y}y` : `${y}y${d % 365}d`;
  return `${y}y`;
}

function since(iso: string | undefined, now: number): string {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(t) ? age(now - t) : NONE;
}

/** A mirror key as people write it: SecretMirror/<ns>/<name>, ClusterSecretMirror/<name>. */
export function mirrorName(key: string): string {
  return key.replace(/^ClusterSecretMirror\/\//, 'ClusterSecretMirror/');
}

function refName(ref: string): string {
  return ref.startsWith('cluster:') ? `MirrorCluster/${ref.slice(8)}` : mirrorName(ref);
}

const PHASES: readonly Phase[] = ['Active', 'Degraded', 'Error', 'Pending'];

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function overviewLines(r: StatusReport): string {
  const o = r.overview;
  const from =
    r.source.kind === 'hub'
      ? `the hub at ${r.source.url}` + (r.whoami ? ` as ${r.whoami.user || 'anonymous'}` : '')
      : `the API server ${r.source.server}` +
        (r.source.context ? ` (context ${r.source.context})` : '');
  const rows = [
    ['Hub cluster', `${r.hubCluster}, read from ${from}`],
    [
      'Clusters',
      `${o.clusters.reachable}/${o.clusters.total} reachable, agents ${o.agents.healthy}/${o.agents.total} healthy`,
    ],
    [
      'Mirrors',
      `${o.mirrors.total}: ` + PHASES.map((p) => `${o.mirrors.byPhase[p] ?? 0} ${p}`).join(', '),
    ],
    [
      'Copies',
      `${o.copies.synced}/${o.copies.namespaces} synced, ${o.copies.failed} failed, ` +
        `${plural(o.copies.conflicts, 'conflict')}, ${o.copies.denied} denied`,
    ],
  ];
  return rows.map(([k, v]) => `${`${k}:`.padEnd(13)}${cell(v)}\n`).join('');
}

function attentionTable(items: readonly Attention[]): string {
  if (items.length === 0) return 'Nothing needs attention.\n';
  return table(
    ['Severity', 'Kind', 'What', 'Reason'],
    items.map((a) => [a.severity, a.kind, refName(a.ref), a.reason]),
  );
}

/** The agent's version (or `present`) and how long ago its last heartbeat was. */
function agentCell(c: ClusterRow): string {
  if (!c.agent.present) return 'missing';
  const beat = c.agent.heartbeatAgeSeconds;
  return `${c.agent.version ?? 'present'}${beat !== undefined ? ` (${age(beat * 1000)})` : ''}`;
}

function clustersTable(r: StatusReport): string {
  if (r.clusters.length === 0) {
    return r.clustersVisible
      ? `No MirrorClusters: the hub delivers only to its own cluster (${r.hubCluster}).\n`
      : 'No clusters you may see.\n';
  }
  return table(
    ['Name', 'Type', 'Account', 'Region', 'Reachable', 'Agent', 'K8s', 'Last error'],
    r.clusters.map((c) => [
      c.name,
      c.type,
      c.account ?? '',
      c.region ?? '',
      c.reachable === undefined ? '<unknown>' : String(c.reachable),
      agentCell(c),
      c.kubernetesVersion ?? '',
      c.lastError ?? '',
    ]),
  );
}

function mirrorStatus(m: MirrorRow): string {
  return m.suspended ? `${m.phase} (suspended)` : m.phase;
}

function mirrorsTable(mirrors: readonly MirrorRow[], now: number): string {
  if (mirrors.length === 0) return 'No mirrors found.\n';
  return table(
    ['Namespace', 'Name', 'Source type', 'Source', 'Destination', 'Status', 'Synced', 'Last sync'],
    mirrors.map((m) => [
      m.namespace ?? '',
      m.name,
      m.sourceType,
      m.source,
      m.destination,
      mirrorStatus(m),
      `${m.synced}/${m.matched}`,
      since(m.lastSyncTime, now),
    ]),
  );
}

/** `mirrorhub status`: the overview, then ATTENTION, CLUSTERS and MIRRORS. */
export function renderStatus(r: StatusReport, now: number): string {
  return [
    overviewLines(r),
    `ATTENTION\n${attentionTable(r.overview.attention)}`,
    `CLUSTERS\n${clustersTable(r)}`,
    `MIRRORS\n${mirrorsTable(r.mirrors, now)}`,
  ].join('\n');
}

/** The cluster's phase and why: the hub's message for it, else its counts. */
function summaryMessage(s: ClusterSummary): string {
  if (s.message) return `${s.phase}: ${s.message}`;
  const parts = [
    s.failed > 0 ? `${s.failed} failed` : '',
    s.conflicts > 0 ? plural(s.conflicts, 'conflict') : '',
    s.denied > 0 ? `${s.denied} denied` : '',
  ].filter(Boolean);
  return parts.length > 0 ? `${s.phase}: ${parts.join(', ')}` : s.phase;
}

/**
 * `mirrorhub where NAME`: one row per copy; for a cluster known only by counts, a `*` row with
 * its totals first, then the problems the mirror's status lists.
 */
export function renderWhere(r: WhereReport): string {
  const clusters = [
    ...new Set([...r.summaries.map((s) => s.cluster), ...r.items.map((i) => i.cluster)]),
  ].sort((a, b) => a.localeCompare(b));
  const rows: string[][] = [];
  for (const cluster of clusters) {
    for (const s of r.summaries.filter((x) => x.cluster === cluster)) {
      rows.push([
        cluster,
        '*',
        `Synced ${s.synced}/${s.namespaces}`,
        mirrorName(s.mirror),
        summaryMessage(s),
      ]);
    }
    for (const i of r.items.filter((x) => x.cluster === cluster)) {
      rows.push([cluster, i.namespace, i.state, mirrorName(i.mirror), i.message ?? '']);
    }
  }
  if (rows.length === 0) return `No copies named ${r.name} that you may see.\n`;
  let out = table(['Cluster', 'Namespace', 'State', 'Mirror', 'Message'], rows);
  if (r.truncated) {
    out += '\nSome agent reported only its first 500 namespaces: the list may be incomplete.\n';
  }
  if (r.summaries.length > 0) {
    out +=
      '\nRows with namespace * are clusters the hub cluster knows only by counts and problems ' +
      '(at most 50 per mirror); their per-namespace list is on the dashboard, or run with --hub-url.\n';
  }
  return out;
}
