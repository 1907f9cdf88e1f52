// Hub replicas sharing the fleet, on Kubernetes Leases in the hub's namespace (plan.ts decides,
// this does the I/O):
//
// - A member Lease per replica (`<lease>-replica-<hash of identity>`), renewed every
//   renewPeriod. Another replica counts it live while it keeps changing: for leaseDuration after
//   the last change it saw, on its own clock (no cross-machine clock comparison, as the leader
//   election). A replica that cannot renew for renewDeadline (< leaseDuration) stops writing to
//   every follower before anyone may take one over; one that stops gives its followers up and
//   deletes its member Lease, so the others take them over at once.
// - A Lease per follower (`<lease>-follower-<MirrorCluster name>`) naming the replica that holds
//   it, written only when it moves: claimed with the resourceVersion it was read at, so of two
//   replicas claiming one follower exactly one wins; given up (holder '') only after every write
//   to the follower ended. Nothing renews it: its holder's member Lease says whether it is live.
//
// At idle a replica writes its member Lease and nothing else.
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { MIRROR_CLUSTER, GROUP, VERSION } from '@mirrorhub/shared/api/index';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import {
  CONTENT_TYPE,
  groupPath,
  isAlreadyExists,
  isNotFound,
  microTime,
  RestClient,
} from '@mirrorhub/shared/kit/k8s/rest';
import { createWatcher, watchTuning, type Watcher } from '@mirrorhub/shared/kit/k8s/watcher';
import type { Lease } from '@mirrorhub/shared/kit/controller/leader';
import {
  childLogger,
  errorMessage,
  realClock,
  sleep,
  type Clock,
  type ControllerMetrics,
  type Gauge,
  type Logger,
  type Timer,
} from '@mirrorhub/shared/kit/runtime/index';
import { USER_AGENT } from '@mirrorhub/shared/api/contract';
import type { Ownership } from './ownership.js';
import { ownerFor, planShards, type ShardAction } from './plan.js';

/** Label on every Lease of the shards: the hub's election Lease name (one set per hub). */
export const SHARDS_LABEL = 'mirrorhub.io/shards';
/** `replica` or `follower`. */
export const SHARD_ROLE_LABEL = 'mirrorhub.io/shard-role';
/** On a follower Lease: the MirrorCluster it is for. */
export const FOLLOWER_ANNOTATION = 'mirrorhub.io/follower';

export interface FleetShardsOptions {
  /** The hub's own cluster (the Leases, the MirrorClusters). */
  kubeConfig: KubeAccess;
  namespace: string;
  /** The hub's election Lease name: the shards' Leases are named after it and labelled with it. */
  leaseName: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** How often the member Lease is renewed (default leaseDuration / 3). */
  renewPeriodMs?: number | undefined;
  /** Claims and releases in flight at once (default 8). */
  concurrency?: number;
  watchProgressDeadlineMs?: number | undefined;
  logger: Logger;
  metrics?: ControllerMetrics;
  clock?: Clock;
}

type Listener = (name: string, owned: boolean) => void | Promise<void>;

export function memberLeaseName(leaseName: string, identity: string): string {
  const hash = crypto.createHash('sha256').update(identity).digest('hex').slice(0, 12);
  return `${leaseName}-replica-${hash}`;
}

export function followerLeaseName(leaseName: string, follower: string): string {
  return `${leaseName}-follower-${follower}`;
}

export class FleetShards implements Ownership {
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly rest: RestClient;
  private readonly leases: Watcher<Lease>;
  private readonly clusters: Watcher<{ metadata?: V1ObjectMeta }>;
  private readonly renewPeriodMs: number;
  private readonly memberName: string;
  private readonly owned = new Set<string>();
  private readonly busy = new Set<string>();
  private readonly listeners = new Set<Listener>();
  /** Each follower Lease as last known, from the watch or our own writes (newest wins). */
  private readonly followerLeases = new Map<string, Lease>();
  /** Each member Lease's last change we saw: its resourceVersion and when (our clock). */
  private readonly seen = new Map<
    string,
    { holder: string; rv: string; at: number; ttlMs: number }
  >();
  private readonly queue: (() => Promise<void>)[] = [];
  private readonly ownedGauge: Gauge<never> | undefined;
  private running = 0;
  private member = false;
  private stopping = false;
  private started = false;
  private lastRenew = 0;
  private fenceTimer: Timer | undefined;
  private scheduled = false;
  private readonly stopController = new AbortController();
  private loops: Promise<void>[] = [];

  constructor(private readonly opts: FleetShardsOptions) {
    this.log = childLogger(opts.logger, { controller: 'shards', replica: opts.identity });
    this.clock = opts.clock ?? realClock;
    this.renewPeriodMs = Math.max(
      opts.retryPeriodMs,
      opts.renewPeriodMs ?? Math.floor(opts.leaseDurationMs / 3),
    );
    if (opts.renewDeadlineMs >= opts.leaseDurationMs) {
      throw new Error('hub replicas: renewDeadline must be shorter than leaseDuration');
    }
    this.memberName = memberLeaseName(opts.leaseName, opts.identity);
    this.rest = new RestClient(opts.kubeConfig, {
      userAgent: USER_AGENT.hub,
      timeoutMs: Math.max(1_000, Math.floor(opts.renewDeadlineMs / 3)),
    });
    const tuning = watchTuning(opts.watchProgressDeadlineMs);
    this.leases = createWatcher<Lease>(
      opts.kubeConfig,
      {
        group: 'coordination.k8s.io',
        version: 'v1',
        plural: 'leases',
        namespace: opts.namespace,
        labelSelector: `${SHARDS_LABEL}=${opts.leaseName}`,
      },
      { resource: 'shard-leases', ...tuning },
    );
    this.clusters = createWatcher(
      opts.kubeConfig,
      { group: GROUP, version: VERSION, plural: MIRROR_CLUSTER.plural, metadataOnly: true },
      { resource: 'shard-mirrorclusters', ...tuning },
    );
    this.ownedGauge = opts.metrics?.gauge(
      'followers_owned',
      'Follower clusters this hub replica holds (writes to).',
    );
  }

  // ---- Ownership ------------------------------------------------------------------------------

  owns(name: string): boolean {
    return this.owned.has(name);
  }

  ownerOf(name: string): string | undefined {
    if (this.owned.has(name)) return this.opts.identity;
    const holder = this.followerLeases.get(name)?.spec?.holderIdentity ?? '';
    return holder !== '' && this.live().has(holder) ? holder : undefined;
  }

  onChange(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The followers this replica holds, sorted (tests, logs). */
  ownedFollowers(): string[] {
    return [...this.owned].sort();
  }

  /** Joined: member Lease written and both caches synced. */
  ready(): true | string {
    if (!this.member) return 'not a member of the hub replicas yet (member Lease not written)';
    if (!this.leases.hasSynced() || !this.clusters.hasSynced()) return 'shard caches not synced';
    return true;
  }

  // ---- life -----------------------------------------------------------------------------------

  /** Joins: writes the member Lease, fills the caches, and takes this replica's followers. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const changed = () => this.schedule();
    this.leases.addHandler({
      onAdd: (l) => this.observed(l),
      onUpdate: (l) => this.observed(l),
      onDelete: (l) => this.forgotten(l),
    });
    this.clusters.addHandler({ onAdd: changed, onUpdate: changed, onDelete: changed });
    this.leases.start();
    this.clusters.start();
    await Promise.all([this.join(), this.leases.synced, this.clusters.synced]);
    this.loops = [this.renewLoop(), this.tickLoop()];
    this.schedule();
    this.log.info({ lease: this.memberName }, 'joined the hub replicas');
  }

  /** Gives every follower up (after its writes end), leaves, and stops watching. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.member = false;
    this.fenceTimer?.cancel();
    this.stopController.abort();
    await Promise.all(this.loops);
    if (this.started) {
      this.schedule();
      await this.settled();
      try {
        await this.rest.delete(this.leasePath(this.memberName));
      } catch (err) {
        if (!isNotFound(err))
          this.log.warn({ err: errorMessage(err) }, 'could not delete the member Lease');
      }
    }
    await Promise.all([this.leases.stop(), this.clusters.stop()]);
    this.rest.close();
    this.log.info('left the hub replicas');
  }

  // ---- membership -----------------------------------------------------------------------------

  private leasePath(name?: string): string {
    return groupPath('coordination.k8s.io', 'v1', 'leases', this.opts.namespace, name);
  }

  private lease(
    name: string,
    role: 'replica' | 'follower',
    spec: Lease['spec'],
    follower?: string,
  ): Lease {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name,
        namespace: this.opts.namespace,
        labels: { [SHARDS_LABEL]: this.opts.leaseName, [SHARD_ROLE_LABEL]: role },
        ...(follower ? { annotations: { [FOLLOWER_ANNOTATION]: follower } } : {}),
      },
      spec,
    };
  }

  private get durationSeconds(): number {
    return Math.ceil(this.opts.leaseDurationMs / 1000);
  }

  /** Write the member Lease, retrying until it is written or we stop. */
  private async join(): Promise<void> {
    while (!this.stopController.signal.aborted) {
      const now = this.clock.now();
      const spec = {
        holderIdentity: this.opts.identity,
        leaseDurationSeconds: this.durationSeconds,
        acquireTime: microTime(now),
        renewTime: microTime(now),
      };
      try {
        await this.rest.post(this.leasePath(), this.lease(this.memberName, 'replica', spec));
        this.renewed(now);
        return;
      } catch (err) {
        if (isAlreadyExists(err) && (await this.renew())) return;
        this.log.warn({ err: errorMessage(err) }, 'could not write the member Lease; retrying');
      }
      await sleep(this.clock, this.opts.retryPeriodMs, this.stopController.signal);
    }
  }

  private renewed(at: number): void {
    this.lastRenew = at;
    if (this.stopping) return;
    // The deadline runs on a timer of its own: a renewal stuck on a dead connection must not
    // hold the fence back.
    this.fenceTimer?.cancel();
    this.fenceTimer = this.clock.setTimer(
      () => this.fence(),
      Math.max(0, at + this.opts.renewDeadlineMs - this.clock.now()),
    );
    if (!this.member) {
      this.member = true;
      this.schedule();
    }
  }

  /**
   * Nothing renewed for renewDeadline: stop writing to every follower before another replica may
   * count this one gone (leaseDuration after the last renewal it saw).
   */
  private fence(): void {
    if (!this.member || this.clock.now() - this.lastRenew < this.opts.renewDeadlineMs) return;
    this.member = false;
    this.log.error(
      { renewDeadlineMs: this.opts.renewDeadlineMs, followers: this.owned.size },
      'the member Lease was not renewed in time: giving every follower up',
    );
    this.schedule();
  }

  /** One renewal of the member Lease (a merge patch: only this replica writes it). */
  private async renew(): Promise<boolean> {
    const now = this.clock.now();
    try {
      await this.rest.patch(
        this.leasePath(this.memberName),
        {
          metadata: {
            labels: { [SHARDS_LABEL]: this.opts.leaseName, [SHARD_ROLE_LABEL]: 'replica' },
          },
          spec: {
            holderIdentity: this.opts.identity,
            leaseDurationSeconds: this.durationSeconds,
            renewTime: microTime(now),
          },
        },
        CONTENT_TYPE.merge,
      );
      this.renewed(now);
      return true;
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'renewing the member Lease failed');
      if (isNotFound(err)) void this.join(); // deleted under us: write it again
      return false;
    }
  }

  /** Renew every renewPeriod; after a failure every retryPeriod (fence() watches the deadline). */
  private async renewLoop(): Promise<void> {
    const signal = this.stopController.signal;
    let wait = this.renewPeriodMs;
    while (!signal.aborted) {
      if (!(await sleep(this.clock, wait, signal))) break;
      wait = (await this.renew()) ? this.renewPeriodMs : this.opts.retryPeriodMs;
    }
  }

  /** Expiries are seen only as time passes: look again every retryPeriod. */
  private async tickLoop(): Promise<void> {
    const signal = this.stopController.signal;
    while (await sleep(this.clock, this.opts.retryPeriodMs, signal)) this.schedule();
  }

  private observed(lease: Lease): void {
    const name = lease.metadata?.name ?? '';
    const role = lease.metadata?.labels?.[SHARD_ROLE_LABEL];
    if (role === 'replica') {
      const rv = lease.metadata?.resourceVersion ?? '';
      const holder = lease.spec?.holderIdentity ?? '';
      const prev = this.seen.get(name);
      if (!prev || prev.rv !== rv) {
        const ttlMs = (lease.spec?.leaseDurationSeconds ?? this.durationSeconds) * 1000;
        this.seen.set(name, { holder, rv, at: this.clock.now(), ttlMs });
        if (!prev || prev.holder !== holder) this.schedule();
      }
    } else if (role === 'follower') {
      this.noteFollowerLease(lease);
    }
  }

  private forgotten(lease: Lease): void {
    const name = lease.metadata?.name ?? '';
    const follower = lease.metadata?.annotations?.[FOLLOWER_ANNOTATION];
    if (lease.metadata?.labels?.[SHARD_ROLE_LABEL] === 'follower' && follower) {
      const known = this.followerLeases.get(follower);
      if (known && !newer(known, lease)) this.followerLeases.delete(follower);
    } else {
      this.seen.delete(name);
    }
    this.schedule();
  }

  private noteFollowerLease(lease: Lease): void {
    const follower = lease.metadata?.annotations?.[FOLLOWER_ANNOTATION];
    if (!follower) return;
    const known = this.followerLeases.get(follower);
    if (known && newer(known, lease)) return; // an event older than our own write
    this.followerLeases.set(follower, lease);
    this.schedule();
  }

  /** The live replicas: member Leases changed within their duration, and this one if a member. */
  private live(): Set<string> {
    const now = this.clock.now();
    const live = new Set<string>();
    for (const s of this.seen.values()) {
      if (s.holder !== '' && s.holder !== this.opts.identity && now - s.at < s.ttlMs) {
        live.add(s.holder);
      }
    }
    if (this.member) live.add(this.opts.identity);
    return live;
  }

  // ---- claims and releases --------------------------------------------------------------------

  private schedule(): void {
    if (this.scheduled || !this.started) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.reconcile();
    });
  }

  private reconcile(): void {
    if (!this.leases.hasSynced() || !this.clusters.hasSynced()) return;
    if (this.member) this.forgetDeadMembers();
    const holders = new Map<string, string>();
    for (const [follower, l] of this.followerLeases)
      holders.set(follower, l.spec?.holderIdentity ?? '');
    const followers = new Set(
      this.clusters.list().flatMap((c) => (c.metadata?.name ? [c.metadata.name] : [])),
    );
    const actions = planShards({
      self: this.opts.identity,
      member: this.member,
      live: this.live(),
      followers,
      holders,
      owned: this.owned,
      busy: this.busy,
    });
    for (const a of actions) {
      this.busy.add(a.follower);
      this.enqueue(() => this.act(a));
    }
    this.ownedGauge?.set({}, this.owned.size);
  }

  /**
   * A replica that died (SIGKILL, a lost node) leaves its member Lease behind: once nobody has
   * seen it change for twice its duration, a live replica deletes it (if still that version).
   */
  private forgetDeadMembers(): void {
    const now = this.clock.now();
    for (const [name, s] of this.seen) {
      if (name === this.memberName || this.forgetting.has(name)) continue;
      if (now - s.at < 2 * s.ttlMs) continue;
      this.forgetting.add(name);
      this.enqueue(async () => {
        try {
          await this.rest.delete(this.leasePath(name), {
            preconditions: { resourceVersion: s.rv },
          });
          this.log.info({ lease: name, replica: s.holder }, 'removed the Lease of a replica gone');
        } catch (err) {
          if (!isNotFound(err))
            this.log.debug({ lease: name, err: errorMessage(err) }, 'not removing a replica Lease');
        } finally {
          this.forgetting.delete(name);
        }
      });
    }
  }

  private readonly forgetting = new Set<string>();

  private enqueue(task: () => Promise<void>): void {
    this.queue.push(task);
    this.drain();
  }

  private drain(): void {
    const limit = this.opts.concurrency ?? 8;
    while (this.running < limit && this.queue.length > 0) {
      const task = this.queue.shift()!;
      this.running++;
      void task().finally(() => {
        this.running--;
        this.drain();
        if (this.running === 0 && this.queue.length === 0)
          this.idleWaiters.splice(0).forEach((w) => w());
      });
    }
  }

  private readonly idleWaiters: (() => void)[] = [];

  /** Until no claim or release is queued or running, and nothing is held. */
  private async settled(): Promise<void> {
    for (;;) {
      if (this.running === 0 && this.queue.length === 0 && this.busy.size === 0) {
        if (this.owned.size === 0) return;
        this.schedule();
      }
      await new Promise<void>((resolve) => {
        this.idleWaiters.push(resolve);
        setTimeout(resolve, 200).unref();
      });
    }
  }

  private async act(a: ShardAction): Promise<void> {
    let failed = false;
    try {
      switch (a.type) {
        case 'claim':
          return await this.claim(a.follower);
        case 'release':
          return await this.release(a.follower, a.remove);
        case 'drop':
          await this.giveUp(a.follower);
          this.log.warn(
            { follower: a.follower },
            'follower Lease taken or deleted: stopped writing to it',
          );
          return;
        case 'forget':
          return await this.forget(a.follower);
      }
    } catch (err) {
      failed = true;
      this.log.warn(
        { follower: a.follower, action: a.type, err: errorMessage(err) },
        'shard action failed; retrying',
      );
    } finally {
      // A failure is retried after retryPeriod (the API server may be unreachable for a while).
      const done = () => {
        this.busy.delete(a.follower);
        this.schedule();
      };
      if (failed && !this.stopping) setTimeout(done, this.opts.retryPeriodMs).unref();
      else done();
    }
  }

  private async claim(follower: string): Promise<void> {
    const name = followerLeaseName(this.opts.leaseName, follower);
    const known = this.followerLeases.get(follower);
    const holder = known?.spec?.holderIdentity ?? '';
    if (holder !== '' && holder !== this.opts.identity && !(await this.confirmGone(holder))) return;
    const now = microTime(this.clock.now());
    const spec = {
      holderIdentity: this.opts.identity,
      leaseDurationSeconds: this.durationSeconds,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: known ? (known.spec?.leaseTransitions ?? 0) + 1 : 0,
    };
    let written: Lease;
    try {
      written = known
        ? await this.rest.put<Lease>(this.leasePath(name), {
            ...this.lease(name, 'follower', spec, follower),
            metadata: {
              ...this.lease(name, 'follower', spec, follower).metadata,
              resourceVersion: known.metadata?.resourceVersion,
            },
          })
        : await this.rest.post<Lease>(
            this.leasePath(),
            this.lease(name, 'follower', spec, follower),
          );
    } catch (err) {
      // Another replica won it (409), or it changed since we read it: the watch shows who.
      this.log.debug({ follower, err: errorMessage(err) }, 'claim lost');
      return;
    }
    this.followerLeases.set(follower, written);
    if (this.stopping || !this.member) {
      await this.writeRelease(follower, false); // lost membership while claiming
      return;
    }
    this.owned.add(follower);
    this.ownedGauge?.set({}, this.owned.size);
    this.log.info(
      { follower, previous: known?.spec?.holderIdentity || null },
      'follower claimed: this replica writes to it',
    );
    await this.notify(follower, true);
  }

  /**
   * Whether `holder` is gone, read afresh: its member Lease is deleted, or unchanged since we
   * first saw that version at least its duration ago. Our watch may have missed its renewals (this
   * replica was cut off itself), so the cache alone never takes a follower from anyone; as the
   * leader election, only a record unchanged on our clock for the lease duration counts.
   */
  private async confirmGone(holder: string): Promise<boolean> {
    const name = memberLeaseName(this.opts.leaseName, holder);
    let lease: Lease;
    try {
      lease = await this.rest.get<Lease>(this.leasePath(name));
    } catch (err) {
      if (isNotFound(err)) return true; // it left, after giving its followers up
      throw err;
    }
    this.observed(lease);
    const seen = this.seen.get(name);
    const gone =
      (lease.spec?.holderIdentity ?? '') !== holder ||
      (seen !== undefined && this.clock.now() - seen.at >= seen.ttlMs);
    if (!gone) this.log.debug({ holder }, 'the holder renewed after all: not taking its follower');
    return gone;
  }

  /** Stop writing to the follower: listeners' promises end when every write to it has. */
  private async giveUp(follower: string): Promise<void> {
    if (!this.owned.delete(follower)) return;
    this.ownedGauge?.set({}, this.owned.size);
    await this.notify(follower, false);
    this.log.info({ follower }, 'follower given up: nothing writes to it any more');
  }

  private async release(follower: string, remove: boolean): Promise<void> {
    await this.giveUp(follower);
    await this.writeRelease(follower, remove);
    this.log.info({ follower }, 'follower released');
  }

  private async writeRelease(follower: string, remove: boolean): Promise<void> {
    const known = this.followerLeases.get(follower);
    if (!known || known.spec?.holderIdentity !== this.opts.identity) return;
    const name = followerLeaseName(this.opts.leaseName, follower);
    const rv = known.metadata?.resourceVersion;
    if (remove) {
      await this.rest
        .delete(this.leasePath(name), { preconditions: { resourceVersion: rv } })
        .catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
      this.followerLeases.delete(follower);
      return;
    }
    const written = await this.rest.put<Lease>(this.leasePath(name), {
      ...known,
      spec: { ...known.spec, holderIdentity: '', renewTime: microTime(this.clock.now()) },
    });
    this.followerLeases.set(follower, written);
  }

  private async forget(follower: string): Promise<void> {
    const known = this.followerLeases.get(follower);
    if (!known) return;
    const name = followerLeaseName(this.opts.leaseName, follower);
    try {
      await this.rest.delete(this.leasePath(name), {
        preconditions: { resourceVersion: known.metadata?.resourceVersion },
      });
      this.followerLeases.delete(follower);
    } catch (err) {
      if (isNotFound(err)) this.followerLeases.delete(follower);
      // 409: it changed; the watch shows how.
    }
  }

  private async notify(follower: string, owned: boolean): Promise<void> {
    await Promise.all(
      [...this.listeners].map(async (l) => {
        try {
          await l(follower, owned);
        } catch (err) {
          this.log.error({ follower, owned, err: errorMessage(err) }, 'ownership listener failed');
        }
      }),
    );
  }
}

/** `a` is newer than `b` (resourceVersions of one object are increasing integers in etcd3). */
function newer(a: Lease, b: Lease): boolean {
  const x = a.metadata?.resourceVersion;
  const y = b.metadata?.resourceVersion;
  if (!x || !y || !/^\d+$/.test(x) || !/^\d+$/.test(y)) return false;
  return BigInt(x) > BigInt(y);
}

/** The replica that ranks highest for each follower among `replicas` (tests, docs). */
export function assignment(
  followers: readonly string[],
  replicas: readonly string[],
): Map<string, string> {
  return new Map(followers.map((f) => [f, ownerFor(f, replicas)!]));
}
