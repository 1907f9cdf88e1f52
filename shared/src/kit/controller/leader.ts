/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm.
 *
 * Why not client-node's `leaderelection` module: @kubernetes/client-node 1.4.0 as published does
 * not ship it (dist/ has no leaderelection/ and index.js does not export it), so there is nothing
 * to wrap. This is a small port of client-go's tools/leaderelection:
 *
 * - Every `retryPeriod` (jittered) a candidate reads the Lease. It may take it when nobody holds
 *   it, when it was released (empty holder), or when the holder has not changed the record for
 *   `leaseDuration` as measured on *our* clock since we first saw that record (no cross-machine
 *   clock comparisons: renewTime is informational only).
 * - Writes are optimistic: `replace` carries the resourceVersion we read, so two candidates
 *   racing for an expired lease cannot both win; the loser gets 409 and tries next period.
 * - The leader renews every `renewPeriod` (default a third of `leaseDuration`), not every
 *   `retryPeriod` as client-go does: a standby only needs to see the record change within each
 *   leaseDuration, and every renewal is a write the API server, etcd and every watcher of
 *   Leases pay for, all the time, in every cluster. A renewal that fails is retried every
 *   `retryPeriod`; if the leader cannot renew for `renewDeadline` (counted from the last
 *   renewal that succeeded), it stops leading (aborts the signal given to `onStartedLeading`,
 *   calls `onStoppedLeading`) before anyone else can take over, since
 *   `renewDeadline < leaseDuration`. It then becomes a candidate again. So the renew period
 *   changes how often we write, not when a standby may take over: that is still leaseDuration
 *   after the record last changed, on the standby's own clock.
 * - `stop()` ends leadership and, unless told otherwise, releases the lease (empty holder) so a
 *   standby takes over within one retryPeriod instead of waiting out leaseDuration.
 *
 * The Lease calls go over the lean REST client (k8s/rest.ts), not client-node's generated
 * CoordinationV1Api: importing client-node loads its whole generated API, which a process that
 * needs three Lease calls should not pay for (k8s/access.ts says why). A client-node KubeConfig
 * still works as `kubeConfig`: it is a KubeAccess.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeAccess } from '../k8s/access.js';
import { groupPath, isNotFound, microTime, RestClient } from '../k8s/rest.js';
import { jitterUp } from '../runtime/backoff.js';
import { realClock, sleep, type Clock } from '../runtime/clock.js';
import { errorMessage, httpStatusOf } from '../runtime/errors.js';
import type { ControllerMetrics } from '../runtime/metrics.js';
import type { CheckResult } from '../runtime/server.js';

/** A coordination.k8s.io/v1 Lease as it is on the wire (MicroTimes are RFC 3339 strings). */
export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: V1ObjectMeta;
  spec?: LeaseSpec;
}

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** metav1.MicroTime: `2024-01-02T03:04:05.123456Z`. */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/** The three Lease calls the elector makes; `get` resolves undefined on 404. */
export interface LeaseClient {
  get(namespace: string, name: string): Promise<Lease | undefined>;
  create(namespace: string, lease: Lease): Promise<Lease>;
  /** A replace carrying `metadata.resourceVersion`: 409 when the Lease changed since the read. */
  replace(namespace: string, name: string, lease: Lease): Promise<Lease>;
}

/** The elector's Lease calls over a REST client (to share the caller's connection pool). */
export function restLeaseClient(rest: RestClient): LeaseClient {
  const path = (namespace: string, name?: string) =>
    groupPath('coordination.k8s.io', 'v1', 'leases', namespace, name);
  return {
    async get(namespace, name) {
      try {
        return await rest.get<Lease>(path(namespace, name));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    create: (namespace, lease) => rest.post<Lease>(path(namespace), lease),
    replace: (namespace, name, lease) => rest.put<Lease>(path(namespace, name), lease),
  };
}

const USER_AGENT = 'mirrorhub-leader-election';

/** The elector's Lease calls on the cluster of `access` (any KubeAccess, or a KubeConfig). */
export function leaseClient(access: KubeAccess): LeaseClient {
  return restLeaseClient(new RestClient(access, { userAgent: USER_AGENT }));
}

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  /** Unique per process: pod name (+ a random suffix if pods can restart in place). */
  identity: string;
  /** Where the Lease lives: any KubeAccess (client-node's KubeConfig is one)... */
  kubeConfig?: KubeAccess;
  /** ...or the Lease calls themselves (a shared REST client: `restLeaseClient(rest)`; tests). */
  client?: LeaseClient;
  /** How long a non-renewed lease keeps standbys away (default 15 s). */
  leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before it steps down (default 10 s). */
  renewDeadlineMs?: number;
  /** Between a candidate's attempts, and between retries of a failed renewal (default 2 s). */
  retryPeriodMs?: number;
  /**
   * How often the leader renews (default leaseDuration / 3, never less than retryPeriod, and
   * leaving a retry before renewDeadline when the other timings allow it). Must be at least
   * retryPeriod, and renewPeriod + retryPeriod must be less than renewDeadline, so that a
   * failed renewal is retried at least once before the leader steps down.
   */
  renewPeriodMs?: number;
  /** Release the lease on stop() (default true). */
  releaseOnStop?: boolean;
  /**
   * Called when this process becomes leader. `signal` aborts when leadership ends; stop work
   * then. If it returns a promise, stop() waits (up to renewDeadline) for it before releasing
   * the lease, so the next leader does not overlap with our last writes. A rejection is logged
   * and makes us step down, so a standby can try.
   */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  onStoppedLeading?(): void;
  /** Called when the observed holder changes (undefined: nobody). */
  onNewLeader?(identity: string | undefined): void;
  logger?: Logger;
  metrics?: ControllerMetrics;
  clock?: Clock;
  random?: () => number;
}

export class LeaderElector {
  private readonly client: LeaseClient;
  /** The REST client we made from `kubeConfig` (closed on stop). */
  private readonly ownedRest: RestClient | undefined;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly renewPeriodMs: number;
  private readonly stopController = new AbortController();
  private loopDone: Promise<void> = Promise.resolve();
  private started = false;
  private leading = false;
  private leaderWork: Promise<void> | undefined;
  private leaderAbort: AbortController | undefined;
  private lastRenew = 0;
  private observedKey = '';
  private observedTime = 0;
  private observedHolder: string | undefined;
  private stepDown = false;
  /** Aborts the wait for the next renewal: the leader's work failed, step down now. */
  private stepDownNow: AbortController | undefined;

  constructor(private readonly opts: LeaderElectionOptions) {
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    if (!opts.identity) throw new Error('leader election: identity must not be empty');
    if (this.leaseDurationMs <= this.renewDeadlineMs) {
      throw new Error('leader election: leaseDuration must be greater than renewDeadline');
    }
    if (this.renewDeadlineMs <= this.retryPeriodMs * 1.2) {
      throw new Error('leader election: renewDeadline must be greater than 1.2 x retryPeriod');
    }
    if (this.leaseDurationMs < 1000) {
      throw new Error(
        'leader election: leaseDuration must be at least 1 s (the Lease counts seconds)',
      );
    }
    this.renewPeriodMs =
      opts.renewPeriodMs ??
      defaultRenewPeriod(this.leaseDurationMs, this.renewDeadlineMs, this.retryPeriodMs);
    checkRenewPeriod(this.renewPeriodMs, this.renewDeadlineMs, this.retryPeriodMs);
    if (opts.client) {
      this.client = opts.client;
    } else if (opts.kubeConfig) {
      // No single Lease call may outlast a third of the renew deadline, so one request stuck on
      // a dead connection leaves time to retry on another (the HTTP/2 pool, k8s/h2.ts, sends the
      // retry over a new connection once a request got no answer) before the lease is lost.
      this.ownedRest = new RestClient(opts.kubeConfig, {
        userAgent: USER_AGENT,
        timeoutMs: Math.max(1_000, Math.floor(this.renewDeadlineMs / 3)),
        maxSockets: 2,
      });
      this.client = restLeaseClient(this.ownedRest);
    } else {
      throw new Error('leader election needs kubeConfig or client');
    }
  }

  /** Start campaigning (idempotent). */
  start(): this {
    if (this.started) return this;
    this.started = true;
    this.loopDone = this.loop().catch((err: unknown) => {
      this.opts.logger?.error({ err }, 'leader election loop crashed');
    });
    return this;
  }

  /** Stop leading (waiting for the leader's work to wind down), release the lease, stop campaigning. */
  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loopDone;
    this.ownedRest?.close();
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** The holder we last observed (ourselves when leading). */
  get leader(): string | undefined {
    return this.observedHolder;
  }

  /**
   * Readiness/health: fine as leader or standby; not fine when we believe we lead but have not
   * renewed for longer than leaseDuration (someone else may be leading too).
   */
  check(): CheckResult {
    if (!this.started) return { ok: false, message: 'not started' };
    if (this.leading) {
      const since = this.clock.now() - this.lastRenew;
      if (since > this.leaseDurationMs)
        return { ok: false, message: `leader but lease not renewed for ${since}ms` };
      return { ok: true, message: 'leader' };
    }
    return { ok: true, message: `standby (leader: ${this.observedHolder ?? 'none'})` };
  }

  private get log(): Logger | undefined {
    return this.opts.logger;
  }

  private get stopped(): boolean {
    return this.stopController.signal.aborted;
  }

  private async loop(): Promise<void> {
    const signal = this.stopController.signal;
    while (!this.stopped) {
      // Campaign.
      while (!this.stopped && !(await this.tryAcquireOrRenew())) {
        await sleep(this.clock, jitterUp(this.retryPeriodMs, 0.2, this.random), signal);
      }
      if (this.stopped) break;
      const stepDownNow = new AbortController();
      this.stepDownNow = stepDownNow;
      const wake = AbortSignal.any([signal, stepDownNow.signal]);
      this.becomeLeader();
      // Renew until we cannot, or are told to stop. The next renewal is due renewPeriod after
      // the last one began, however long its request took, so the retries it may need still
      // fit before renewDeadline.
      while (!this.stopped && !this.stepDown) {
        const due = this.lastRenew + this.renewPeriodMs - this.clock.now();
        await sleep(this.clock, Math.max(0, due), wake);
        if (this.stopped || this.stepDown) break;
        if (await this.renewWithinDeadline()) continue;
        this.log?.warn(
          { lease: this.leaseName, renewDeadlineMs: this.renewDeadlineMs },
          'failed to renew the lease in time: stepping down',
        );
        break;
      }
      const release = this.stopped || this.stepDown;
      await this.endLeadership();
      if (release && (this.opts.releaseOnStop ?? true)) await this.release();
      if (this.stepDown && !this.stopped) {
        this.stepDown = false;
        await sleep(this.clock, this.retryPeriodMs, signal);
      }
    }
  }

  private get leaseName(): string {
    return `${this.opts.namespace}/${this.opts.name}`;
  }

  private becomeLeader(): void {
    this.leading = true;
    this.opts.metrics?.isLeader.set({ lease: this.opts.name }, 1);
    this.log?.info({ lease: this.leaseName, identity: this.opts.identity }, 'became leader');
    const abort = new AbortController();
    this.leaderAbort = abort;
    this.leaderWork = Promise.resolve()
      .then(() => this.opts.onStartedLeading(abort.signal))
      .then(
        () => undefined,
        (err: unknown) => {
          if (abort.signal.aborted) return;
          this.log?.error({ err, lease: this.leaseName }, 'leader work failed: stepping down');
          this.stepDown = true;
          this.stepDownNow?.abort();
        },
      );
  }

  private async endLeadership(): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    this.leaderAbort?.abort(new Error('leadership lost'));
    this.opts.metrics?.isLeader.set({ lease: this.opts.name }, 0);
    this.log?.info({ lease: this.leaseName }, 'stopped leading');
    try {
      this.opts.onStoppedLeading?.();
    } catch (err) {
      this.log?.error({ err }, 'onStoppedLeading failed');
    }
    // Let the leader's work wind down before anyone else may start (bounded).
    const work = this.leaderWork;
    this.leaderWork = undefined;
    if (work) {
      let timer: { cancel(): void } | undefined;
      await Promise.race([
        work,
        new Promise<void>((resolve) => {
          timer = this.clock.setTimer(resolve, this.renewDeadlineMs);
        }),
      ]);
      timer?.cancel();
    }
  }

  /** Retry renewal every retryPeriod until success or renewDeadline since the last renewal. */
  private async renewWithinDeadline(): Promise<boolean> {
    for (;;) {
      const remaining = this.lastRenew + this.renewDeadlineMs - this.clock.now();
      if (remaining <= 0) return false;
      const ok = await this.withTimeout(this.tryAcquireOrRenew(), remaining);
      if (ok) return true;
      if (this.stopped) return false;
      const left = this.lastRenew + this.renewDeadlineMs - this.clock.now();
      if (left <= 0) return false;
      await sleep(this.clock, Math.min(this.retryPeriodMs, left), this.stopController.signal);
      if (this.stopped) return false;
    }
  }

  private async withTimeout(p: Promise<boolean>, ms: number): Promise<boolean> {
    let timer: { cancel(): void } | undefined;
    const r = await Promise.race([
      p,
      new Promise<boolean>((resolve) => {
        timer = this.clock.setTimer(() => resolve(false), ms);
      }),
    ]);
    timer?.cancel();
    return r;
  }

  private noteObserved(lease: Lease, now: number): void {
    const spec = lease.spec ?? {};
    const key = `${spec.holderIdentity ?? ''}|${spec.renewTime ?? ''}|${lease.metadata?.resourceVersion ?? ''}`;
    if (key !== this.observedKey) {
      this.observedKey = key;
      this.observedTime = now;
    }
    const holder = spec.holderIdentity || undefined;
    if (holder !== this.observedHolder) {
      this.observedHolder = holder;
      if (holder !== this.opts.identity) {
        this.log?.info({ lease: this.leaseName, leader: holder ?? null }, 'observed new leader');
      }
      try {
        this.opts.onNewLeader?.(holder);
      } catch (err) {
        this.log?.error({ err }, 'onNewLeader failed');
      }
    }
  }

  /** One attempt, client-go's tryAcquireOrRenew. Never throws. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.clock.now();
    const { namespace, name, identity } = this.opts;
    const leaseDurationSeconds = Math.ceil(this.leaseDurationMs / 1000);
    const stamp = microTime(now);
    let lease: Lease | undefined;
    try {
      lease = await this.client.get(namespace, name);
    } catch (err) {
      this.log?.warn({ lease: this.leaseName, err }, 'reading the lease failed');
      return false;
    }
    if (!lease) {
      try {
        const created = await this.client.create(namespace, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds,
            acquireTime: stamp,
            renewTime: stamp,
            leaseTransitions: 0,
          },
        });
        this.noteObserved(created, now);
        this.lastRenew = now;
        return true;
      } catch (err) {
        this.log?.debug(
          { lease: this.leaseName, err: errorMessage(err) },
          'creating the lease failed',
        );
        return false;
      }
    }

    this.noteObserved(lease, now);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const held = holder !== '' && holder !== identity;
    if (held) {
      const durMs = (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
      if (this.observedTime + durMs > now) return false; // someone else holds a live lease
    }
    const mine = holder === identity;
    const next: Lease = {
      ...lease,
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds,
        renewTime: stamp,
        acquireTime: mine && spec.acquireTime ? spec.acquireTime : stamp,
        leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    try {
      const updated = await this.client.replace(namespace, name, next);
      this.noteObserved(updated, now);
      this.lastRenew = now;
      if (!mine)
        this.log?.info({ lease: this.leaseName, previous: holder || null }, 'acquired the lease');
      return true;
    } catch (err) {
      if (httpStatusOf(err) === 409) {
        this.log?.debug(
          { lease: this.leaseName },
          'lease changed under us (409); retrying next period',
        );
      } else {
        this.log?.warn({ lease: this.leaseName, err }, 'updating the lease failed');
      }
      return false;
    }
  }

  /** Give the lease up so a standby need not wait for it to expire. Best effort. */
  private async release(): Promise<void> {
    const { namespace, name, identity } = this.opts;
    try {
      const lease = await this.client.get(namespace, name);
      if (!lease || lease.spec?.holderIdentity !== identity) return;
      const now = microTime(this.clock.now());
      await this.client.replace(namespace, name, {
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: '',
          leaseDurationSeconds: 1,
          renewTime: now,
          acquireTime: now,
        },
      });
      this.observedHolder = undefined;
      this.log?.info({ lease: this.leaseName }, 'released the lease');
    } catch (err) {
      this.log?.warn(
        { lease: this.leaseName, err },
        'releasing the lease failed; standbys will wait for it to expire',
      );
    }
  }
}

/**
 * A third of leaseDuration: a standby then sees the record change about three times in every
 * leaseDuration it waits, so one lost or slow renewal does not make the lease look abandoned.
 * Never below retryPeriod (renewing more often than a failed renewal is retried buys nothing),
 * and, where the timings allow, short enough that a failed renewal is retried before
 * renewDeadline; where they do not (renewDeadline < 2 x retryPeriod), retryPeriod, client-go's
 * cadence.
 */
function defaultRenewPeriod(
  leaseDurationMs: number,
  renewDeadlineMs: number,
  retryPeriodMs: number,
): number {
  const third = Math.floor(leaseDurationMs / 3);
  const latest = renewDeadlineMs - retryPeriodMs - 1; // still leaves one retry
  return Math.max(retryPeriodMs, Math.min(third, latest));
}

/** Throws, saying what to change, when renewPeriod does not fit the other timings. */
function checkRenewPeriod(renewPeriodMs: number, renewDeadlineMs: number, retryPeriodMs: number) {
  if (!(renewPeriodMs >= retryPeriodMs)) {
    throw new Error(
      `leader election: renewPeriod (${renewPeriodMs} ms) must be at least retryPeriod (${retryPeriodMs} ms): ` +
        `raise renewPeriodMs to ${retryPeriodMs} or more, or leave it unset (default: a third of leaseDuration)`,
    );
  }
  // The default may equal retryPeriod without room for a retry (renewDeadline < 2 x retryPeriod,
  // which client-go allows): today's cadence, which a configuration that was valid keeps.
  if (renewPeriodMs === retryPeriodMs) return;
  if (renewPeriodMs + retryPeriodMs >= renewDeadlineMs) {
    throw new Error(
      `leader election: renewPeriod (${renewPeriodMs} ms) + retryPeriod (${retryPeriodMs} ms) must be less than renewDeadline (${renewDeadlineMs} ms), ` +
        'so that a failed renewal is retried at least once before the leader steps down: ' +
        `lower renewPeriodMs below ${renewDeadlineMs - retryPeriodMs} ms, or raise renewDeadlineMs above ${renewPeriodMs + retryPeriodMs} ms (keeping it below leaseDuration)`,
    );
  }
}

export function createLeaderElector(opts: LeaderElectionOptions): LeaderElector {
  return new LeaderElector(opts);
}
