/**
 * The soak's faults, injected one at a time in a fixed rotation. Each one injects, holds, clears
 * and then says what it saw happen (its evidence), so a fault that did not actually bite is
 * reported as such, not counted as survived.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';

import { scrapeSeries } from '../bench/util.js';
import { MIRROR_COUNT, type Churn } from './churn.js';
import { isMarked, MANAGED_BY } from './model.js';
import { DEADLINE_S, SYSTEM_NS, type Proc, type World } from './world.js';

export const FAULT_KINDS = [
  'leader-kill',
  'agent-kill',
  'apiserver-stop',
  'etcd-restart',
  'watch-expired',
  'conflicting-writer',
  'sts-outage',
  'eks-outage',
  'hub-restart',
  'stall-short',
  'stall-long',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Shorter than the deadline less a bookmark period: a stall no watch can notice. */
const SHORT_STALL_S = DEADLINE_S - 70;
const LONG_STALL_S = DEADLINE_S * 2;

export const FAULT_TEXT: Record<FaultKind, string> = {
  'leader-kill': 'kill -9 of the hub leader; the standby must take over',
  'agent-kill': 'kill -9 of an agent just after a source update (mid fan-out), restarted 3 s later',
  'apiserver-stop': "a follower's API server stopped for 20 s, then started",
  'etcd-restart': 'the etcd under every cluster stopped for 5 s and restarted',
  'watch-expired':
    "the hub cluster's API server restarted under 20 s compaction: watches resume from a resourceVersion it no longer has (410 Gone)",
  'conflicting-writer':
    "another writer rewrites one mirror's copies for 20 s while its source changes (409 conflicts)",
  'sts-outage': 'STS answers 503 for 70 s, longer than half a session (sessions live 120 s)',
  'eks-outage':
    'the EKS API answers 503 for 30 s while the hub leader is killed and must re-describe',
  'hub-restart': 'kill -9 of both hub replicas, both restarted 2 s later',
  'stall-short': `a component's connections stalled silently for ${SHORT_STALL_S} s, then passed again: no watch's deadline can notice (its last bookmark is at most 60 s old, the deadline ${DEADLINE_S} s), a request's timeout may`,
  'stall-long': `a component's connections stalled silently for ${LONG_STALL_S} s, twice the ${DEADLINE_S} s progress deadline: repaired by the deadline, by a new connection after an unanswered request and PING, or by a poll's fresh look`,
};

export interface FaultRecord {
  kind: FaultKind;
  start: number;
  clear: number;
  /** What was seen to happen; `bit` false when the fault did not take effect. */
  bit: boolean;
  evidence: string;
  /** From clear to the first check with nothing older than the checker's grace. */
  convergedMs?: number;
}

/** What a fault reports; the caller adds when it cleared and how long convergence took. */
export type FaultRun = Omit<FaultRecord, 'clear' | 'convergedMs'>;

export class Faults {
  private round = 0;
  constructor(
    private readonly w: World,
    private readonly churn: Churn,
  ) {}

  private pick<T>(xs: readonly T[]): T {
    return xs[this.round % xs.length]!;
  }

  /** The live hub replica holding the Lease, by its pod name (this life's). */
  async leader(): Promise<Proc | undefined> {
    const lease = await this.w.kit
      .cluster('hub')
      .kubeConfig()
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: 'mirrorhub-hub', namespace: SYSTEM_NS })
      .catch(() => undefined);
    const holder = lease?.spec?.holderIdentity ?? '';
    return this.w.hubs.find((h) => h.running() && holder.startsWith(`${h.podName()}_`));
  }

  private async waitLeader(not?: Proc, timeoutMs = 60_000): Promise<Proc | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const l = await this.leader();
      if (l && l !== not) return l;
      await sleep(500);
    }
    return undefined;
  }

  private async metric(p: Proc, name: string, label: string): Promise<number> {
    if (!p.running()) return 0;
    const series = await scrapeSeries(p.port, name).catch(() => new Map<string, number>());
    let n = 0;
    for (const [k, v] of series) if (k.split(' ').includes(label)) n += v;
    return n;
  }

  private count(p: Proc, text: string): number {
    return p.log().split(text).length - 1;
  }

  /** Runs one fault: inject, hold, clear. The caller measures convergence afterwards. */
  async run(kind: FaultKind): Promise<FaultRun> {
    this.round++;
    const start = Date.now();
    const done = (bit: boolean, evidence: string) => ({ kind, start, bit, evidence });
    const followers = this.w.followers;
    switch (kind) {
      case 'leader-kill': {
        const leader = await this.waitLeader();
        if (!leader) return done(false, 'no leader found');
        const other = this.w.hubs.find((h) => h !== leader)!;
        const before = this.count(other, 'became leader');
        await leader.kill9();
        await this.churn.putSource(this.round % MIRROR_COUNT);
        const next = await this.waitLeader(leader);
        await leader.start();
        const took = this.count(other, 'became leader') - before;
        return done(
          next === other && took > 0,
          `${leader.name} killed; ${next?.name ?? 'nobody'} took the Lease (${took} "became leader" in its log)`,
        );
      }
      case 'agent-kill': {
        const agent = this.w.agents.get(this.pick(followers))!;
        const pid = agent.pid;
        await this.churn.putSource(this.round % MIRROR_COUNT);
        await sleep(150);
        await agent.kill9();
        await sleep(3_000);
        await agent.start();
        return done(pid !== agent.pid, `${agent.name} (pid ${pid}) killed, now pid ${agent.pid}`);
      }
      case 'apiserver-stop': {
        const c = this.w.kit.cluster(this.pick(followers));
        await c.stopApiServer();
        const down = !c.running();
        await this.churn.putSource(this.round % MIRROR_COUNT);
        await sleep(20_000);
        await c.startApiServer();
        return done(down, `${c.name}'s API server down for 20 s`);
      }
      case 'etcd-restart': {
        const before = this.w.kit.pids();
        await this.w.kit.restartEtcd(5_000);
        const after = this.w.kit.pids();
        const changed = before.filter((p) => !after.includes(p)).length;
        return done(changed === 1, `etcd restarted (${changed} kit pid changed)`);
      }
      case 'watch-expired': {
        const procs = [...this.w.hubs, this.w.agents.get('hub')!];
        const gone = async () => {
          let n = 0;
          for (const p of procs)
            n += await this.metric(p, 'mirrorhub_watch_restarts_total', 'gone');
          return n;
        };
        const before = await gone();
        const c = this.w.kit.cluster('hub');
        await c.stopApiServer();
        await this.churn.putSource(this.round % MIRROR_COUNT).catch(() => {});
        await sleep(2_000);
        await c.startApiServer();
        await sleep(10_000);
        const n = (await gone()) - before;
        return done(n > 0, `${n} watch restart(s) with reason "gone" (410) on the hub cluster`);
      }
      case 'conflicting-writer': {
        // The source with the most copies in a cluster that has any (churn decides which). When
        // churn has just deleted every mirror, one is put back first.
        let target = await this.busiestCopies();
        for (const deadline = Date.now() + 60_000; !target && Date.now() < deadline;) {
          await this.churn.applyMirror(0, this.churn.mirrorSpec(0, 0)).catch(() => {});
          await sleep(2_000);
          target = await this.busiestCopies();
        }
        if (!target) return done(false, 'no copies anywhere to compete for');
        const { cluster, source } = target;
        const agent = this.w.agents.get(cluster)!;
        const agentConflicts = () => this.metric(agent, 'mirrorhub_write_errors_total', '409');
        const before = await agentConflicts();
        const core = this.w.core(cluster);
        let writes = 0;
        let refused = 0;
        const until = Date.now() + 20_000;
        const i = Number(source.slice('src-'.length));
        while (Date.now() < until) {
          await this.churn.putSource(i).catch(() => {});
          const copies = await this.copiesOf(core, source).catch(() => []);
          await Promise.all(
            copies.map(async (c) => {
              try {
                await core.replaceNamespacedSecret({
                  name: c.name,
                  namespace: c.namespace,
                  body: {
                    metadata: { ...c.meta, resourceVersion: c.resourceVersion },
                    stringData: { value: 'the other writer' },
                  },
                });
                writes++;
              } catch (err) {
                if ((err as { code?: number }).code === 409) refused++;
              }
            }),
          );
          await sleep(200);
        }
        const theirs = (await agentConflicts()) - before;
        return done(
          writes > 0 && refused + theirs > 0,
          `${writes} competing writes in ${cluster}; 409s: ${refused} to the other writer, ${theirs} to the agent`,
        );
      }
      case 'sts-outage':
      case 'eks-outage': {
        const service = kind === 'sts-outage' ? 'sts' : 'eks';
        const aws = this.w.kit.aws!;
        const before = aws.refused(service);
        aws.outage(service, true);
        let killed: Proc | undefined;
        try {
          if (service === 'eks') {
            killed = await this.waitLeader();
            await killed?.kill9();
            await this.churn.putSource(this.round % MIRROR_COUNT);
            await sleep(30_000);
          } else {
            await sleep(70_000);
          }
        } finally {
          aws.outage(service, false);
        }
        await killed?.start();
        const n = aws.refused(service) - before;
        return done(n > 0, `${n} ${service.toUpperCase()} request(s) refused with 503`);
      }
      case 'hub-restart': {
        const pids = this.w.hubs.map((h) => h.pid);
        await Promise.all(this.w.hubs.map((h) => h.kill9()));
        await sleep(2_000);
        await Promise.all(this.w.hubs.map((h) => h.start()));
        const leader = await this.waitLeader();
        return done(
          !!leader && this.w.hubs.every((h, i) => h.pid !== pids[i]),
          `both replicas killed and restarted; ${leader?.name ?? 'nobody'} leads`,
        );
      }
      case 'stall-short':
      case 'stall-long': {
        // In turn: the hub leader's connections to the hub cluster, to a follower, and an
        // agent's to its cluster.
        const way = this.round % 3;
        const leader = way < 2 ? await this.waitLeader() : undefined;
        const cluster = way === 1 ? this.pick(followers) : this.pick(this.w.clusters);
        const proc = leader ?? this.w.agents.get(cluster)!;
        const proxy = !leader
          ? this.w.agentProxies.get(cluster)!
          : way === 0
            ? this.w.hubProxies[this.w.hubs.indexOf(leader)]!
            : this.w.followerProxies.get(cluster)!;
        // A stalled watch is repaired by whichever comes first: the progress deadline ("watch
        // stalled") or the poll period's fresh look finding what it missed (a periodic re-list).
        // Over HTTP/2 every watch and request of the process shares the connection: a quiet watch
        // or an unanswered request has it PINGed, the unanswered PING ends it, and its watches
        // come back on a new one (restarted after an error).
        const repairs = async () => ({
          stalled:
            (await this.metric(proc, 'mirrorhub_watch_restarts_total', 'stalled')) +
            (await this.metric(proc, 'mirrorhub_watch_restarts_total', 'error')),
          looked: await this.metric(proc, 'mirrorhub_watch_relists_total', 'periodic'),
        });
        const before = await repairs();
        // Until resume(), whatever the process sends: a middlebox that lost the way back.
        const stalled = proxy.stall({ untilResume: true });
        await this.churn.putSource(this.round % MIRROR_COUNT);
        await sleep((kind === 'stall-short' ? SHORT_STALL_S : LONG_STALL_S) * 1000);
        proxy.resume();
        const after = await repairs();
        const noticed = after.stalled - before.stalled;
        const looked = after.looked - before.looked;
        const bit = stalled > 0 && (kind === 'stall-long' ? noticed + looked > 0 : true);
        const to = leader && way === 1 ? ` to ${cluster}` : '';
        return done(
          bit,
          `${stalled} connection(s) of ${proc.name}${to} stalled; ${noticed} watch(es) restarted as stalled or after their connection ended, ${looked} periodic look(s) found what they missed`,
        );
      }
    }
  }

  private async busiestCopies(): Promise<{ cluster: string; source: string } | undefined> {
    let best: { cluster: string; source: string; n: number } | undefined;
    for (const cluster of this.w.clusters) {
      const list = await this.w
        .core(cluster)
        .listSecretForAllNamespaces({ labelSelector: MANAGED_BY })
        .catch(() => ({ items: [] }));
      const n = new Map<string, number>();
      for (const s of list.items)
        if (
          isMarked(s.metadata?.labels, s.metadata?.annotations) &&
          /^src-\d+$/.test(s.metadata!.name!)
        )
          n.set(s.metadata!.name!, (n.get(s.metadata!.name!) ?? 0) + 1);
      for (const [source, count] of n)
        if (!best || count > best.n) best = { cluster, source, n: count };
    }
    return best;
  }

  private async copiesOf(core: CoreV1Api, name: string) {
    const list = await core.listSecretForAllNamespaces({ fieldSelector: `metadata.name=${name}` });
    return list.items
      .filter((s) => isMarked(s.metadata?.labels, s.metadata?.annotations))
      .map((s) => ({
        name,
        namespace: s.metadata!.namespace!,
        resourceVersion: s.metadata!.resourceVersion!,
        meta: { name, labels: s.metadata!.labels, annotations: s.metadata!.annotations },
      }));
  }
}
