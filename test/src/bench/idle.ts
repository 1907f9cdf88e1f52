/**
 * The idle benchmark: what each cluster of a fleet pays when nothing changes. Every shape an
 * install takes runs side by side on one real API server, each as its chart starts it and in
 * a namespace of its own, for the same window: hub + agent as two processes, the one process
 * (hub chart with localAgent.inProcess), a follower's agent alone, and a follower's agent with
 * two replicas (the agent chart turns leader election on). The API server's audit log says
 * who sent each request (every shape runs as a ServiceAccount of its own), which Lease each
 * write renewed, and that nothing else was written; /proc says each process's CPU and RSS.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';

import { findFreePort } from '@mirrorhub/infra/components/cache';
import type { Kit } from '@mirrorhub/infra/kit/index';

import { installCrds } from '../support/crds.js';
import { serviceAccountKubeConfig } from '../support/serviceaccount.js';
import type { ProcessNodeOptions } from './node-options.js';
import { startMain, stopAll, waitHttp } from './procs.js';
import { figureTable, type DocSection, type Figure } from './record.js';
import { cpuSeconds, rssMb } from './util.js';

/** The API server's audit log: every request's metadata, as JSON lines (see auditLog). */
export interface AuditLog {
  /** kube-apiserver flags that write it (KitOptions.apiserverArgs). */
  args: string[];
  path: string;
}

/**
 * An audit policy that records every request at Metadata level (who, verb, object, user
 * agent; no bodies): once when a watch starts, once when any other request completes.
 */
export async function auditLog(): Promise<AuditLog> {
  const dir = await mkdtemp(join(tmpdir(), 'mirrorhub-bench-audit-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const policy = join(dir, 'policy.yaml');
  await writeFile(
    policy,
    [
      'apiVersion: audit.k8s.io/v1',
      'kind: Policy',
      'omitStages: [RequestReceived]',
      'rules:',
      '  - level: Metadata',
      '',
    ].join('\n'),
  );
  const path = join(dir, 'audit.log');
  return {
    path,
    args: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${path}`,
      // Written as each request ends, so the window's last requests are in the file at its end.
      '--audit-log-mode=blocking',
      '--audit-log-maxsize=0',
    ],
  };
}

export interface IdleBenchOptions {
  auditLogPath: string;
  /** How long every shape is measured, at once. */
  windowMs: number;
  /** From every process ready to the window (first terms, hash key, first heartbeats). */
  settleMs: number;
  nodeOptions: ProcessNodeOptions;
  root: string;
  log: (line: string) => void;
}

/** One shape of install, its processes in the namespace `namespace`. */
interface Shape {
  name: string;
  what: string;
  namespace: string;
  processes: {
    name: string;
    program: 'hub' | 'agent' | 'standalone';
    env: Record<string, string>;
  }[];
}

export interface IdleRow {
  name: string;
  what: string;
  namespace: string;
  /** Writes per minute by Lease name (leader elections and heartbeats). */
  leaseWrites: Record<string, number>;
  /** Every other write per minute, by `verb resource` (none expected). */
  otherWrites: Record<string, number>;
  /** GET and LIST per minute, and of those the Lease GETs. */
  reads: number;
  leaseReads: number;
  /** Watches started per minute (a watch the API server ended and the client resumed). */
  watches: number;
  /** By process: CPU over the window in % of one core, RSS at its end in MB. */
  processes: { name: string; cpuPercent: number; rssMb: number }[];
}

export interface IdleBenchResult {
  windowMs: number;
  rows: IdleRow[];
  /** Requests in the window sent by nobody the shapes run as (the API server's own included). */
  others: Record<string, number>;
}

const SERVICE_ACCOUNT = 'bench';

const SHAPES: Shape[] = [
  {
    name: 'separate',
    what: 'hub + agent, two processes (hub chart + agent chart, one replica each)',
    namespace: 'idle-separate',
    processes: [
      { name: 'hub', program: 'hub', env: { MIRRORHUB_CLUSTER_NAME: 'hub' } },
      { name: 'agent', program: 'agent', env: { MIRRORHUB_CLUSTER_NAME: 'hub' } },
    ],
  },
  {
    name: 'one-process',
    what: 'hub and agent in one process (hub chart with localAgent.inProcess)',
    namespace: 'idle-one',
    processes: [{ name: 'hub + agent', program: 'standalone', env: {} }],
  },
  {
    name: 'follower',
    what: "a follower's agent (agent chart, one replica: no leader election)",
    namespace: 'idle-follower',
    processes: [{ name: 'agent', program: 'agent', env: { MIRRORHUB_CLUSTER_NAME: 'follower' } }],
  },
  {
    name: 'follower-ha',
    what: "a follower's agent with replicaCount 2 (leader election on): leader + standby",
    namespace: 'idle-follower-ha',
    processes: ['agent-0', 'agent-1'].map((name) => ({
      name,
      program: 'agent' as const,
      env: { MIRRORHUB_CLUSTER_NAME: 'follower-ha', MIRRORHUB_LEADER_ELECTION: 'true' },
    })),
  },
];

interface AuditEvent {
  stage?: string;
  verb?: string;
  stageTimestamp?: string;
  userAgent?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; namespace?: string; name?: string; subresource?: string };
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export async function runIdleBench(kit: Kit, o: IdleBenchOptions): Promise<IdleBenchResult> {
  const cluster = kit.cluster('hub');
  const kc = cluster.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const log = o.log;
  await installCrds(kc, 'mirrorhub-hub');

  // Each shape runs as a ServiceAccount of its own (cluster-admin, as the kit's admin the other
  // benchmarks use), so the audit log tells its requests from the others'.
  const dir = await mkdtemp(join(tmpdir(), 'mirrorhub-bench-idle-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const kubeconfigs: Record<string, string> = {};
  for (const s of SHAPES) {
    await core.createNamespace({ body: { metadata: { name: s.namespace } } });
    await core.createNamespacedServiceAccount({
      namespace: s.namespace,
      body: { metadata: { name: SERVICE_ACCOUNT } },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: `bench-${s.namespace}` },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'cluster-admin',
        },
        subjects: [{ kind: 'ServiceAccount', namespace: s.namespace, name: SERVICE_ACCOUNT }],
      },
    });
    const sa = await serviceAccountKubeConfig(kc, {
      namespace: s.namespace,
      name: SERVICE_ACCOUNT,
      expirationSeconds: 3 * 3600,
    });
    kubeconfigs[s.name] = join(dir, `${s.name}.kubeconfig`);
    await writeFile(kubeconfigs[s.name]!, sa.exportConfig(), { mode: 0o600 });
  }

  const procs: { shape: Shape; name: string; child: ChildProcess }[] = [];
  try {
    const ready: Promise<void>[] = [];
    for (const s of SHAPES) {
      for (const p of s.processes) {
        const port = await findFreePort();
        const agentPort = p.program === 'standalone' ? await findFreePort() : undefined;
        const child = startMain(o.root, p.program, {
          KUBECONFIG: kubeconfigs[s.name]!,
          MIRRORHUB_NAMESPACE: s.namespace,
          POD_NAME: `${s.name}-${p.name.replace(/\W+/g, '-')}`,
          PORT: String(port),
          NODE_OPTIONS: p.program === 'agent' ? o.nodeOptions.agent : o.nodeOptions.hub,
          ...(agentPort !== undefined ? { MIRRORHUB_LOCAL_AGENT_PORT: String(agentPort) } : {}),
          ...p.env,
        });
        procs.push({ shape: s, name: p.name, child });
        ready.push(waitHttp(`http://127.0.0.1:${port}/readyz`));
      }
    }
    await Promise.all(ready);
    log(`idle: ${procs.length} processes ready; settling ${o.settleMs / 1000}s`);
    await sleep(o.settleMs);

    log(`idle: measuring ${o.windowMs / 1000}s`);
    const pid = (p: (typeof procs)[number]) => p.child.pid!;
    const cpu0 = procs.map((p) => cpuSeconds(pid(p)));
    const t0 = Date.now();
    await sleep(o.windowMs);
    const t1 = Date.now();
    const cpu1 = procs.map((p) => cpuSeconds(pid(p)));
    const rss = procs.map((p) => rssMb(pid(p)));
    const seconds = (t1 - t0) / 1000;
    const perMinute = (n: number) => (n * 60) / seconds;

    const events = await auditEvents(o.auditLogPath, t0, t1);
    const byUser = new Map(
      SHAPES.map((s) => [`system:serviceaccount:${s.namespace}:${SERVICE_ACCOUNT}`, s.name]),
    );
    const others: Record<string, number> = {};
    const rows: IdleRow[] = SHAPES.map((s) => ({
      name: s.name,
      what: s.what,
      namespace: s.namespace,
      leaseWrites: {},
      otherWrites: {},
      reads: 0,
      leaseReads: 0,
      watches: 0,
      processes: [],
    }));
    const add = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);
    for (const e of events) {
      const shape = byUser.get(e.user?.username ?? '');
      const row = rows.find((r) => r.name === shape);
      const verb = e.verb ?? '';
      // A watch counts when it starts; every other request when it completes.
      if (e.stage !== (verb === 'watch' ? 'ResponseStarted' : 'ResponseComplete')) continue;
      if (!row) {
        add(others, `${e.userAgent?.split(' ')[0] ?? '?'} ${verb} ${e.objectRef?.resource ?? ''}`);
        continue;
      }
      const resource = e.objectRef?.resource ?? '';
      if (verb === 'watch') row.watches++;
      else if (verb === 'get' || verb === 'list') {
        row.reads++;
        if (resource === 'leases') row.leaseReads++;
      } else if (WRITE_VERBS.has(verb)) {
        if (resource === 'leases') add(row.leaseWrites, e.objectRef?.name ?? '?');
        else add(row.otherWrites, `${verb} ${resource}`);
      }
    }
    for (const row of rows) {
      for (const m of [row.leaseWrites, row.otherWrites])
        for (const k of Object.keys(m)) m[k] = perMinute(m[k]!);
      row.reads = perMinute(row.reads);
      row.leaseReads = perMinute(row.leaseReads);
      row.watches = perMinute(row.watches);
      procs.forEach((p, i) => {
        if (p.shape.name !== row.name) return;
        row.processes.push({
          name: p.name,
          cpuPercent: ((cpu1[i]! - cpu0[i]!) / seconds) * 100,
          rssMb: rss[i]!,
        });
      });
      log(`idle: ${row.name}: ${rowText(row)}`);
    }
    for (const k of Object.keys(others)) others[k] = perMinute(others[k]!);
    return { windowMs: t1 - t0, rows, others };
  } finally {
    await stopAll(procs.map((p) => p.child));
    await rm(dir, { recursive: true, force: true }); // the ServiceAccounts' tokens, at once
  }
}

/** The audit events whose stage ended within [t0, t1] (ms). */
async function auditEvents(path: string, t0: number, t1: number): Promise<AuditEvent[]> {
  const out: AuditEvent[] = [];
  for (const line of (await readFile(path, 'utf8')).split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line) as AuditEvent;
    const at = Date.parse(e.stageTimestamp ?? '');
    if (at >= t0 && at <= t1) out.push(e);
  }
  return out;
}

const LEASES: Record<string, string> = {
  'mirrorhub-hub': "the hub's leader election",
  'mirrorhub-agent': "the agent's heartbeat",
  'mirrorhub-agent-leader': "the agent's leader election",
};

function leaseText(row: IdleRow): string {
  const entries = Object.entries(row.leaseWrites).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return 'none';
  return entries.map(([name, n]) => `${n.toFixed(1)} ${name}`).join(' + ');
}

function total(m: Record<string, number>): number {
  return Object.values(m).reduce((a, b) => a + b, 0);
}

function rowText(row: IdleRow): string {
  const other = Object.entries(row.otherWrites)
    .map(([k, n]) => `${k} ${n.toFixed(1)}`)
    .join(', ');
  return (
    `Lease writes/min ${total(row.leaseWrites).toFixed(1)} (${leaseText(row)}); ` +
    `other writes/min ${other || '0'}; reads/min ${row.reads.toFixed(1)} (Lease ${row.leaseReads.toFixed(1)}); ` +
    `watches started/min ${row.watches.toFixed(1)}; ` +
    row.processes
      .map((p) => `${p.name} CPU ${p.cpuPercent.toFixed(2)}% RSS ${p.rssMb.toFixed(0)} MB`)
      .join(', ')
  );
}

/** The idle table for docs/BENCHMARKS.md (record.ts puts it between its markers). */
export function renderIdle(r: IdleBenchResult, command: string, machine: string): DocSection {
  const title = 'Idle: what each cluster pays when nothing changes';
  const cell = (f: (row: IdleRow) => string) => r.rows.map(f);
  const processes = (f: (p: IdleRow['processes'][number]) => string) =>
    cell((row) => row.processes.map((p) => `${p.name} ${f(p)}`).join(', '));
  const rows: { figure: string; cells: string[] }[] = [
    {
      figure: 'Lease writes per minute, by Lease',
      cells: cell((row) => `**${total(row.leaseWrites).toFixed(1)}**: ${leaseText(row)}`),
    },
    {
      figure: 'all other writes per minute (target 0)',
      cells: cell((row) => {
        const n = total(row.otherWrites);
        return n === 0
          ? '0'
          : `**${n.toFixed(1)}**: ${Object.entries(row.otherWrites)
              .map(([k, v]) => `${k} ${v.toFixed(1)}`)
              .join(', ')}`;
      }),
    },
    {
      figure: 'reads (GET, LIST) per minute, of them Lease GETs',
      cells: cell((row) => `${row.reads.toFixed(1)} (${row.leaseReads.toFixed(1)})`),
    },
    { figure: 'watches started per minute', cells: cell((row) => row.watches.toFixed(1)) },
    { figure: 'CPU, % of one core', cells: processes((p) => `${p.cpuPercent.toFixed(2)} %`) },
    { figure: 'RSS at the end of the window', cells: processes((p) => `${p.rssMb.toFixed(0)} MB`) },
  ];
  const met = r.rows.every((row) => total(row.otherWrites) === 0);
  const summaryRows: Figure[] = [
    {
      figure: 'writes at idle other than Leases, every shape',
      now: String(r.rows.reduce((sum, row) => sum + total(row.otherWrites), 0).toFixed(1)),
      target: '0',
      met,
    },
  ];
  const summary = [
    `## ${title}`,
    '',
    `Command: \`${command}\`. Recorded on ${machine}.`,
    '',
    `| per cluster, at idle | ${r.rows.map((row) => row.name).join(' | ')} |`,
    `| --- | ${r.rows.map(() => '---').join(' | ')} |`,
    ...rows.map((x) => `| ${x.figure} | ${x.cells.join(' | ')} |`),
    '',
    ...figureTable(summaryRows),
    '',
  ].join('\n');
  const others = Object.entries(r.others)
    .sort(([, a], [, b]) => b - a)
    .map(([k, n]) => `${k} ${n.toFixed(1)}`)
    .join(', ');
  const method = [
    `### ${title}`,
    '',
    `Setup: one kube-apiserver + etcd with the hub chart's CRDs and no mirrors; the shapes below run side by side, each in a namespace of its own as a ServiceAccount of its own (cluster-admin), started as their charts start them (\`startMain\`: the charts' NODE_OPTIONS, V8 flags and MALLOC_ARENA_MAX), and are measured over the same ${(r.windowMs / 1000).toFixed(0)} s window once every process answered /readyz and settled.`,
    '',
    ...r.rows.map((row) => `- ${row.name} (namespace ${row.namespace}): ${row.what}.`),
    '',
    "Requests are counted from the API server's audit log (Metadata level), by the ServiceAccount that sent them: a write to a Lease by the Lease's name, a watch when it starts, every other request when it completes. " +
      `Leases: ${Object.entries(LEASES)
        .map(([name, what]) => `${name} is ${what}`)
        .join('; ')}. ` +
      'CPU is user + system time from /proc over the window, in % of one core; RSS is VmRSS at the end of the window. ' +
      'Per-minute figures are counts over the window: a heartbeat every 30 s (jittered up to 10%) may land once more or less in it.',
    '',
    `Requests in the window from anyone else (the API server's own loopback client, by user agent, verb and resource, per minute): ${others || 'none'}.`,
    '',
  ].join('\n');
  return { name: 'idle', summary, method };
}
