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
 * - The leader renews every `retryPeriod`. If it cannot renew for `renewDeadline`, it stops
 *   leading (aborts the signal given to `onStartedLeading`, calls `onStoppedLeading`) before
 *   anyone else can take over, since `renewDeadline < leaseDuration`. It then becomes a
 *   candidate again.
 * - `stop()` ends leadership and, unless told otherwise, releases the lease (empty holder) so a
 *   standby takes over within one retryPeriod instead of waiting out leaseDuration.
 */
import {
  CoordinationV1Api,
  V1MicroTime,
  type KubeConfig,
  type V1Lease,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { jitterUp } from './backoff.js';
import { realClock, sleep, type Clock } from './clock.js';
import { errorMessage, httpStatusOf } from './errors.js';
import type { ControllerMetrics } from './metrics.js';
import type { CheckResult } from './server.js';

/** The three Lease calls the elector makes; `get` resolves undefined on 404. */
export interface LeaseClient {
  get(namespace: string, name: string): Promise<V1Lease | undefined>;
  create(namespace: string, lease: V1Lease): Promise<V1Lease>;
  replace(namespace: string, name: string, lease: V1Lease): Promise<V1Lease>;
}

export function leaseClient(kc: KubeConfig): LeaseClient {
  const api = kc.makeApiClient(CoordinationV1Api);
  return {
    async get(namespace, name) {
      try {
        return await api.readNamespacedLease({ namespace, name });
      } catch (err) {
        if (httpStatusOf(err) === 404) return undefined;
        throw err;
      }
    },
    create: (namespace, body) => api.createNamespacedLease({ namespace, body }),
    replace: (namespace, name, body) => api.replaceNamespacedLease({ namespace, name, body }),
  };
}

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  /** Unique per process: pod name (+ a random suffix if pods can restart in place). */
  identity: string;
  /** A KubeConfig, or a LeaseClient (tests). */
  kubeConfig?: KubeConfig;
  client?: LeaseClient;
  /** How long a non-renewed lease keeps standbys away (default 15 s). */
  leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before it steps down (default 10 s). */
  renewDeadlineMs?: number;
  /** Interval between attempts (default 2 s). */
  retryPeriodMs?: number;
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
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
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

  constructor(private readonly opts: LeaderElectionOptions) {
    const client = opts.client ?? (opts.kubeConfig ? leaseClient(opts.kubeConfig) : undefined);
    if (!client) throw new Error('leader election needs kubeConfig or client');
    this.client = client;
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
      this.becomeLeader();
      // Renew until we cannot, or are told to stop.
      while (!this.stopped && !this.stepDown) {
        await sleep(this.clock, this.retryPeriodMs, signal);
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

  private noteObserved(lease: V1Lease, now: number): void {
    const spec = lease.spec ?? {};
    const key = `${spec.holderIdentity ?? ''}|${String(spec.renewTime ?? '')}|${lease.metadata?.resourceVersion ?? ''}`;
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
    const stamp = new V1MicroTime(now);
    let lease: V1Lease | undefined;
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
    const next: V1Lease = {
      ...lease,
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds,
        renewTime: stamp,
        acquireTime: mine && spec.acquireTime ? asMicroTime(spec.acquireTime) : stamp,
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
      const now = new V1MicroTime(this.clock.now());
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
 * client-node 1.4 declares MicroTime fields as Date but deserialises them as strings (the
 * serializer does not know the `V1MicroTime` type), and a plain Date would serialise with
 * millisecond precision, which the API server rejects for MicroTime. Normalise both ways.
 */
function asMicroTime(v: Date | string): V1MicroTime {
  return new V1MicroTime(typeof v === 'string' ? Date.parse(v) : v.getTime());
}

export function createLeaderElector(opts: LeaderElectionOptions): LeaderElector {
  return new LeaderElector(opts);
}
