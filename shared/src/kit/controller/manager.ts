/**
 * The manager every process runs its parts with (hub, agent, and both in one process), after
 * controller-runtime's Manager: the parts are peers registered as runnables, and the manager
 * alone wires what they share, so no entry point repeats it:
 *
 * - the health server (/healthz, /readyz, /metrics), its readiness built from the runnables:
 *   ready when every "always" runnable has synced, and the leader-only ones too while this
 *   process leads (a standby has nothing to sync);
 * - one leader election for the process when any runnable needs it (NeedLeaderElection): the
 *   leader-only runnables start anew in each term, in order, and stop when it ends, so that
 *   the elector releases the Lease only once their last writes are done; a term begins only
 *   once the last one has stopped them all (the elector's wait is bounded, this one is not);
 * - one ordered stop: the term first, then the always runnables, last started first stopped.
 *
 * A second manager in the same process (the agent half of standalone/) may follow this one's
 * election instead of running its own: one Lease, and both halves lead in the same pod.
 * Every main.ts hands its process to runProcess: signals and the deadline (shutdown.ts) end it
 * through the same stop.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { KubeAccess } from '../k8s/access.js';
import { createLeaderElector, type LeaderElector, type LeaseClient } from './leader.js';
import type { ControllerMetrics } from '../runtime/metrics.js';
import { startHealthServer, type HealthServer, type ReadinessCheck } from '../runtime/server.js';
import { createShutdown, type Shutdown } from '../runtime/shutdown.js';

export interface Runnable {
  /** Names it in logs. */
  readonly name: string;
  /** Run only while this process holds the leader Lease, started anew in every term. */
  readonly needLeaderElection?: boolean;
  /**
   * Resolves once it runs (caches synced). `signal` aborts when its term or the manager ends;
   * `fail` reports work that failed after start resolved, which ends the term (a standby may
   * do better).
   */
  start(signal: AbortSignal, fail: (err: unknown) => void): void | Promise<void>;
  /** Stops it and waits; also called while start() still waits, which must end that wait. */
  stop(): void | Promise<void>;
  /** For /readyz: true when synced, else what is not. Absent: nothing to wait for. */
  ready?(): true | string;
}

export interface ManagerElection {
  namespace: string;
  name: string;
  identity: string;
  kubeConfig?: KubeAccess;
  client?: LeaseClient;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** How often the leader renews (default: the elector's, a third of leaseDuration). */
  renewPeriodMs?: number;
}

export interface ManagerOptions {
  logger?: Logger;
  metrics?: ControllerMetrics;
  /** Serve /healthz, /readyz and /metrics (port 0: any free port). Absent: no server. */
  health?: { port: number; host?: string; registry?: Registry };
  /** More /readyz checks, between `leader-election` and `caches`. */
  readinessChecks?: Readonly<Record<string, ReadinessCheck>>;
  /**
   * Elect on this Lease, or lead whenever `follow` leads (one election per process). Absent:
   * the leader-only runnables run from start to stop, as with one replica.
   */
  leaderElection?: ManagerElection | { follow: Manager } | undefined;
  /** The holder changed (undefined: nobody). */
  onNewLeader?(holder: string | undefined): void;
  /** Every leader-only runnable runs (true), or the term's runnables have stopped (false). */
  onLeading?(leading: boolean): void;
}

export class Manager {
  private readonly runnables: Runnable[] = [];
  private readonly followers = new Set<Manager>();
  private readonly lifetime = new AbortController();
  private elector: LeaderElector | undefined;
  private server: HealthServer | undefined;
  private term:
    { signal: AbortSignal; work: Set<Promise<void>>; fail: (err: unknown) => void } | undefined;
  /** Terms under way here, a follower's too: stop() waits for them before the caches stop. */
  private readonly terms = new Set<Promise<void>>();
  /** Settles once the last term has stopped what it started: the next one begins after it. */
  private lastTerm: Promise<void> = Promise.resolve();
  private inTerm = false;
  private leading = false;
  private started: Runnable[] = [];
  private startingAlways: Runnable | undefined;
  private startPromise: Promise<void> | undefined;
  private stopPromise: Promise<void> | undefined;
  private settle!: () => void;
  /** Resolves once leading with every leader-only runnable running, standing by, or stopped. */
  readonly settled = new Promise<void>((resolve) => (this.settle = resolve));

  constructor(private readonly opts: ManagerOptions = {}) {}

  add(r: Runnable): this {
    if (this.startPromise) throw new Error(`manager: ${r.name} added after start`);
    this.runnables.push(r);
    return this;
  }

  /** The health server, once started (routes of the hub's dashboard go on it). */
  get health(): HealthServer | undefined {
    return this.server;
  }

  get port(): number | undefined {
    return this.server?.port;
  }

  isLeader(): boolean {
    const le = this.opts.leaderElection;
    if (le && 'follow' in le) return le.follow.isLeader();
    return this.elector ? this.elector.isLeader() : this.leading;
  }

  /** Health server, always runnables in order, then the election (or the one term). */
  start(): Promise<void> {
    if (this.lifetime.signal.aborted) return Promise.reject(new Error('manager: stopped'));
    this.startPromise ??= this.doStart();
    return this.startPromise;
  }

  /** Ends the term, stops the always runnables last first, closes the server. Idempotent. */
  stop(): Promise<void> {
    this.stopPromise ??= this.doStop();
    return this.stopPromise;
  }

  private get log(): Logger | undefined {
    return this.opts.logger;
  }

  private async doStart(): Promise<void> {
    const health = this.opts.health;
    if (health) {
      const server = await startHealthServer({
        port: health.port,
        ...(health.host ? { host: health.host } : {}),
        ...(health.registry ? { registry: health.registry } : {}),
        ...(this.log ? { logger: this.log } : {}),
      });
      this.server = server;
      const le = this.opts.leaderElection;
      if (le) {
        const check = 'follow' in le ? () => le.follow.electionCheck() : () => this.electionCheck();
        server.addReadinessCheck('leader-election', check);
      }
      for (const [name, check] of Object.entries(this.opts.readinessChecks ?? {}))
        server.addReadinessCheck(name, check);
      server.addReadinessCheck('caches', () => this.caches());
    }
    const fail = (err: unknown) => this.log?.error({ err }, 'runnable failed');
    for (const r of this.runnables.filter((r) => !r.needLeaderElection)) {
      if (this.lifetime.signal.aborted) return;
      this.started.push(r);
      this.startingAlways = r;
      await r.start(this.lifetime.signal, fail);
      this.startingAlways = undefined;
    }
    if (this.lifetime.signal.aborted) return;
    this.campaign();
  }

  /** The election's readiness: a leader that has not renewed for a lease duration is not. */
  private electionCheck() {
    return this.elector?.check() ?? { ok: false, message: 'not started' };
  }

  private caches(): true | string {
    const standby = this.opts.leaderElection !== undefined && !this.isLeader();
    for (const r of this.runnables) {
      if (r.needLeaderElection && standby) continue; // a standby has nothing to sync
      const ready = r.ready?.() ?? true;
      if (ready !== true) return ready;
    }
    return true;
  }

  private campaign(): void {
    const le = this.opts.leaderElection;
    const needed = this.runnables.some((r) => r.needLeaderElection) || this.followers.size > 0;
    if (le && 'follow' in le) {
      le.follow.addFollower(this);
    } else if (le) {
      if (!needed) return void this.settle();
      this.elector = createLeaderElector({
        ...le,
        ...(this.log ? { logger: this.log } : {}),
        ...(this.opts.metrics ? { metrics: this.opts.metrics } : {}),
        onStartedLeading: (signal) => this.lead(signal),
        onNewLeader: (holder) => {
          this.opts.onNewLeader?.(holder);
          if (holder !== undefined && holder !== le.identity) {
            this.log?.info({ leader: holder }, 'standing by');
            this.settle();
          }
        },
      });
      this.elector.start();
    } else {
      void this.lead(this.lifetime.signal).catch((err: unknown) =>
        this.log?.error({ err }, 'controllers failed'),
      );
    }
  }

  /**
   * A manager following this one leads in this one's terms, joining one under way. Its
   * failure ends the term for both, so that both begin again together.
   */
  private addFollower(f: Manager): void {
    this.followers.add(f);
    if (this.term) this.term.work.add(f.lead(this.term.signal).catch(this.term.fail));
  }

  private removeFollower(f: Manager): void {
    this.followers.delete(f);
  }

  /**
   * One term: the leader-only runnables in order, then (once `signal` aborts) stopped last
   * first; followers lead alongside. Rejects when a runnable failed, so the elector steps down.
   */
  private lead(outer: AbortSignal): Promise<void> {
    const term = this.runTerm(outer, this.lastTerm);
    this.lastTerm = term.catch(() => undefined);
    this.terms.add(term);
    void term.finally(() => this.terms.delete(term)).catch(() => undefined);
    return term;
  }

  private async runTerm(outer: AbortSignal, previous: Promise<void>): Promise<void> {
    // The elector waits for a term's work only up to renewDeadline before it campaigns again;
    // under load the last term may still be stopping. Two terms' runnables never run at once:
    // its stops would stop what this term starts.
    const waits = this.inTerm;
    if (waits) this.log?.warn('the last term is still stopping: the new one begins once it has');
    await previous;
    if (waits) this.log?.info('the last term has stopped: beginning the new one');
    this.inTerm = true;
    try {
      await this.termBody(outer);
    } finally {
      this.inTerm = false;
    }
  }

  private async termBody(outer: AbortSignal): Promise<void> {
    const abort = new AbortController();
    const signal = abort.signal;
    const end = () => abort.abort();
    const stopped = AbortSignal.any([outer, this.lifetime.signal]);
    if (stopped.aborted) return;
    stopped.addEventListener('abort', end, { once: true });
    let failure: unknown;
    const fail = (err: unknown) => {
      failure ??= err;
      end();
    };
    const work = new Set<Promise<void>>();
    this.term = { signal, work, fail };
    for (const f of this.followers) work.add(f.lead(signal).catch(fail));
    const started: Runnable[] = [];
    const stop = once();
    let starting: Runnable | undefined;
    // A start waiting for caches ends when its runnable is stopped.
    const interrupt = () => void (starting && stop(starting).catch(() => undefined));
    signal.addEventListener('abort', interrupt, { once: true });
    try {
      for (const r of this.runnables.filter((r) => r.needLeaderElection)) {
        if (signal.aborted) break;
        starting = r;
        started.push(r);
        await r.start(signal, fail);
        starting = undefined;
      }
      if (!signal.aborted) {
        this.leading = true;
        this.opts.onLeading?.(true);
        this.settle();
        await new Promise<void>((resolve) => {
          if (signal.aborted) resolve();
          else signal.addEventListener('abort', () => resolve(), { once: true });
        });
      }
    } catch (err) {
      if (!stopped.aborted) failure ??= err;
      end();
    } finally {
      stopped.removeEventListener('abort', end);
      signal.removeEventListener('abort', interrupt);
      if (this.term?.signal === signal) this.term = undefined;
      const ran = started.length > 0;
      await this.stopAll(started, stop);
      this.leading = false;
      await Promise.all(work);
      if (ran) this.opts.onLeading?.(false);
    }
    if (failure !== undefined && !stopped.aborted) throw failure;
  }

  /** Stops `rs` last first; a failing stop is logged and the rest still stop. */
  private async stopAll(rs: Runnable[], stop: (r: Runnable) => Promise<void>): Promise<void> {
    for (const r of [...rs].reverse()) {
      try {
        await stop(r);
      } catch (err) {
        this.log?.error({ err, runnable: r.name }, 'stopping failed');
      }
    }
    rs.length = 0;
  }

  private async doStop(): Promise<void> {
    this.lifetime.abort();
    this.settle(); // a start() waiting for leadership returns
    const le = this.opts.leaderElection;
    if (le && 'follow' in le) le.follow.removeFollower(this);
    // The always runnable still starting, if any, is stopped at once: that ends its wait.
    const stop = once();
    const pending = this.startingAlways;
    if (pending) void stop(pending).catch(() => undefined);
    await this.startPromise?.catch(() => undefined);
    await this.elector?.stop();
    await Promise.allSettled([...this.terms]);
    await this.stopAll(this.started, stop);
    await this.server?.close();
  }
}

/** Stops a runnable at most once (an interrupted start is stopped again by the ordered stop). */
function once(): (r: Runnable) => Promise<void> {
  const stops = new Map<Runnable, Promise<void>>();
  return (r) => {
    let p = stops.get(r);
    if (!p) stops.set(r, (p = Promise.resolve().then(() => r.stop())));
    return p;
  };
}

export function createManager(opts: ManagerOptions = {}): Manager {
  return new Manager(opts);
}

export interface ProcessOptions {
  logger: Logger;
  /** Names the closer in shutdown's log. */
  name: string;
  /** Installed already when something must close before the process starts (default: new). */
  shutdown?: Shutdown;
  /** Also closed on shutdown, after `stop`. */
  close?(): void;
  /** The fatal line when start fails (default `start-up failed`). */
  failure?: string;
}

/**
 * The one shutdown path of every process: SIGTERM/SIGINT stop it within the shutdown deadline,
 * and so does a failed start, which then exits 1. Resolves true once started.
 */
export async function runProcess(
  proc: { start(): Promise<void>; stop(): Promise<void> },
  opts: ProcessOptions,
): Promise<boolean> {
  const shutdown = opts.shutdown ?? createShutdown({ logger: opts.logger }).install();
  shutdown.register(opts.name, async () => {
    await proc.stop();
    opts.close?.();
  });
  try {
    await proc.start();
    return true;
  } catch (err) {
    if (shutdown.shuttingDown) return false; // a signal came first: its shutdown exits
    opts.logger.fatal({ err }, opts.failure ?? 'start-up failed');
    await shutdown.shutdown('start-up failed');
    process.exit(1);
  }
}
