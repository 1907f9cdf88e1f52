// Dynamic Vault sources (source.vault.dynamic): one poller per mirror, which reads credentials
// once, renews their lease at every poll, rotates them ahead of expiry, revokes old leases after
// their grace, and keeps every lease in the hub's Secret mirrorhub-leases (store.ts) so a
// restart or a new leader renews instead of minting. leases.ts decides; this does the I/O.
//
// Per mirror, not shared like KV pollers: every mirror owns its lease (and revokes it on its
// way out). The mirror controller runs only on the leader, so only the leader renews or mints.
import type { LeaseStatus, VaultSourceRef } from '@mirrorhub/shared/api/index';
import { k8sTime } from '@mirrorhub/shared/mirror/index';
import {
  errorMessage,
  realClock,
  type Clock,
  type Counter,
  type Logger,
} from '@mirrorhub/shared/kit/runtime/index';
import {
  isVaultError,
  lookupMount,
  readLeased,
  renewLease,
  revokeLease,
  type VaultClient,
} from '../../../vault/index.js';
import type { PlannedEvent, SourceObservation } from '../../status.js';
import type { VaultConnections } from '../../../vault/connections.js';
import {
  ConnectionConfigError,
  PathRefused,
  isTransient,
  jittered,
  outcomeOf,
  retryDelay,
} from '../../../vault/decide.js';
import { fingerprint, secretOf } from '../vault/observation.js';
import type { LeaseStore } from './store.js';
import { dynamicEngineRefusal } from '../../../vault/paths.js';
import { pollOnce } from '../vault/poll.js';
import {
  afterRenewal,
  dueRevocations,
  leaseSource,
  nextStep,
  parseLeaseSource,
  nextWakeMs,
  retiringSource,
  rotated,
  rotationWindowMs,
  type LeaseRecord,
} from './rules.js';

export const REASON_LEASE_ROTATED = 'LeaseRotated';
export const REASON_LEASE_EXPIRED = 'LeaseExpired';
export const REASON_LEASE_REVOKE_FAILED = 'LeaseRevokeFailed';

export interface DynamicSourcesOptions {
  connections: Pick<VaultConnections, 'client' | 'loginFailed' | 'observed'>;
  store: Pick<LeaseStore, 'get' | 'put'>;
  /** Which mirror to reconcile when its observation or lease status changed. */
  onChange(mirrorKey: string): void;
  requests: Counter<'operation' | 'outcome'>;
  logger: Logger;
  clock?: Clock | undefined;
  jitter?: number | undefined;
  retryInitialMs?: number | undefined;
}

interface Entry {
  key: string;
  ref: VaultSourceRef;
  periodMs: number;
  /** A SecretMirror through a ClusterVaultConnection: only a credential endpoint (paths.ts). */
  engineCheck: boolean;
  record?: LeaseRecord | undefined;
  loaded: boolean;
  observation?: SourceObservation;
  fingerprint?: string;
  status?: LeaseStatus;
  lastRenewed?: number;
  events: PlannedEvent[];
  timer?: ReturnType<typeof setTimeout>;
  polling: boolean;
  failures: number;
  stopped: boolean;
}

export class DynamicSources {
  private readonly entries = new Map<string, Entry>();
  /** Mount type per path, per connection client (a new client asks again). */
  private readonly mounts = new WeakMap<
    VaultClient,
    Map<string, { mount: string; type: string }>
  >();
  private readonly clock: Clock;
  private stopped = false;

  constructor(private readonly opts: DynamicSourcesOptions) {
    this.clock = opts.clock ?? realClock;
  }

  /**
   * Mirror `mirrorKey` reads dynamic source `ref` every `periodMs`; with `engineCheck`, only if
   * the path is a credential endpoint of an issuing engine (paths.ts, dynamicEngineRefusal).
   */
  set(mirrorKey: string, ref: VaultSourceRef, periodMs: number, engineCheck = false): void {
    if (this.stopped) return;
    const e = this.entries.get(mirrorKey);
    if (e && leaseSource(e.ref) === leaseSource(ref)) {
      const sooner = periodMs < e.periodMs || (engineCheck && !e.engineCheck);
      e.ref = ref;
      e.periodMs = periodMs;
      e.engineCheck = engineCheck;
      if (sooner) this.schedule(e, 0);
      return;
    }
    if (e) this.forget(e);
    const entry: Entry = {
      key: mirrorKey,
      ref,
      periodMs,
      engineCheck,
      loaded: false,
      events: [],
      polling: false,
      failures: 0,
      stopped: false,
    };
    this.entries.set(mirrorKey, entry);
    this.schedule(entry, 0);
  }

  has(mirrorKey: string): boolean {
    return this.entries.has(mirrorKey);
  }

  get(mirrorKey: string): SourceObservation | { state: 'unknown' } {
    return this.entries.get(mirrorKey)?.observation ?? { state: 'unknown' };
  }

  /** The lease as status.lease shows it (never its id). */
  leaseStatus(mirrorKey: string): LeaseStatus | undefined {
    return this.entries.get(mirrorKey)?.status;
  }

  /** Events since the last call (rotations, expiries, failed revocations). */
  takeEvents(mirrorKey: string): PlannedEvent[] {
    const e = this.entries.get(mirrorKey);
    return e ? e.events.splice(0) : [];
  }

  /**
   * The mirror no longer reads a dynamic source (deleted, or its spec changed): stop polling;
   * with `revoke`, revoke its leases first (deletePolicy Delete); then forget them. Resolves with
   * what failed, if anything (the record is then kept, to try again).
   */
  async release(mirrorKey: string, revoke: boolean): Promise<string | undefined> {
    const e = this.entries.get(mirrorKey);
    if (e) this.forget(e);
    this.entries.delete(mirrorKey);
    const record = e?.loaded ? e.record : await this.opts.store.get(mirrorKey);
    if (!record) return undefined;
    if (revoke) {
      // Each through the connection it was issued with, whatever the spec says now.
      const { path } = parseLeaseSource(record.source);
      const failures: string[] = [];
      const leases = [
        { leaseId: record.leaseId, source: record.source },
        ...record.retiring.map((r) => ({ leaseId: r.leaseId, source: retiringSource(r, record) })),
      ];
      for (const l of leases) {
        try {
          const client = await this.opts.connections.client(parseLeaseSource(l.source).connection);
          await revokeLease(client, l.leaseId);
          this.count('revoke', 'ok');
        } catch (err) {
          this.count('revoke', outcomeOf(err));
          failures.push(errorMessage(err));
        }
      }
      if (failures.length > 0) {
        // The record stays in mirrorhub-leases: the next attempt revokes what is left.
        return `revoking the lease of ${path} failed: ${failures[0]}`;
      }
      this.opts.logger.info(
        { mirror: mirrorKey, source: path },
        'dynamic Vault source: lease revoked',
      );
    }
    await this.opts.store.put(mirrorKey, undefined);
    return undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const e of this.entries.values()) this.forget(e);
    this.entries.clear();
  }

  // ---- internals --------------------------------------------------------------------------------

  private forget(e: Entry): void {
    e.stopped = true;
    if (e.timer) clearTimeout(e.timer);
  }

  private schedule(e: Entry, delayMs: number): void {
    if (e.stopped) return;
    if (e.timer) clearTimeout(e.timer);
    e.timer = setTimeout(() => void this.poll(e), delayMs);
    e.timer.unref?.();
  }

  private count(operation: string, outcome: string): void {
    this.opts.requests.inc({ operation, outcome });
  }

  private async poll(e: Entry): Promise<void> {
    delete e.timer;
    const result = await pollOnce(
      { ...this.opts, failedMessage: 'a dynamic Vault source failed' },
      e,
      e.ref,
      () => this.step(e),
      (ms) => this.schedule(e, ms),
    );
    if (!result) return;
    const { observation, retry } = result;
    const now = this.clock.now();
    const status = this.statusOf(e, now);
    const fp = `${fingerprint(observation)}|${JSON.stringify(status ?? {})}`;
    if (status) e.status = status;
    if (fp !== e.fingerprint || e.events.length > 0) {
      e.fingerprint = fp;
      this.opts.onChange(e.key);
    }
    const delay = retry
      ? retryDelay(e.failures, this.opts.retryInitialMs ?? 1000, e.periodMs)
      : Math.min(
          jittered(e.periodMs, this.opts.jitter ?? 0.1),
          nextWakeMs(e.record, now, e.periodMs),
        );
    this.schedule(e, delay);
  }

  private statusOf(e: Entry, now: number): LeaseStatus | undefined {
    const r = e.record;
    if (!r || r.source !== leaseSource(e.ref)) return undefined;
    const window = rotationWindowMs(e.ref.dynamic!, e.periodMs);
    return {
      expiresAt: k8sTime(new Date(r.expiresAt)),
      renewable: r.renewable,
      issuedAt: k8sTime(new Date(r.issuedAt)),
      ...(e.lastRenewed !== undefined ? { lastRenewed: k8sTime(new Date(e.lastRenewed)) } : {}),
      nextRotation: k8sTime(new Date(Math.max(now, r.expiresAt - window))),
      retiring: r.retiring.length,
    };
  }

  /** One poll: revocations due, then issue, renew or rotate. Throws what the mirror must see. */
  private async step(e: Entry): Promise<SourceObservation> {
    if (!e.loaded) {
      e.record = await this.opts.store.get(e.key);
      e.loaded = true;
    }
    const client = await this.opts.connections.client(e.ref.connection);
    const policy = e.ref.dynamic!;
    let now = this.clock.now();
    if (e.engineCheck) await this.checkEngine(e, client);

    if (e.record) await this.revokeDue(e, now);

    const step = nextStep(e.record, e.ref, now, e.periodMs);
    if (step.action === 'renew' && e.record) {
      try {
        const lease = await renewLease(client, e.record.leaseId, policy.renewIncrementSeconds);
        this.count('renew', 'ok');
        now = this.clock.now();
        const after = afterRenewal(e.record, lease.leaseDuration, now, policy, e.periodMs);
        e.record = { ...e.record, expiresAt: after.expiresAt, renewable: lease.renewable };
        e.lastRenewed = now;
        if (after.rotate) await this.issue(e, client, 'rotate');
      } catch (err) {
        this.count('renew', outcomeOf(err));
        if (isTransient(err) || !isVaultError(err)) throw err;
        if (err.kind === 'invalid-request' || err.kind === 'not-found') {
          // Vault no longer knows the lease (revoked by hand, or lost): new credentials now.
          e.events.push({
            type: 'Warning',
            reason: REASON_LEASE_EXPIRED,
            message: `Vault refused to renew the lease of ${e.ref.path} (${err.status ?? ''} ${err.errors.join('; ')}); reading new credentials`,
          });
          await this.issue(e, client, 'lost');
        } else {
          throw err;
        }
      }
    } else if (step.action === 'rotate') {
      await this.issue(e, client, 'rotate');
    } else if (step.action === 'issue') {
      if (step.why === 'expired') {
        e.events.push({
          type: 'Warning',
          reason: REASON_LEASE_EXPIRED,
          message: `the lease of ${e.ref.path} expired before it could be renewed (Vault was unreachable?); reading new credentials`,
        });
      }
      await this.issue(
        e,
        client,
        step.why === 'first' ? 'first' : step.why === 'expired' ? 'lost' : 'moved',
      );
    }
    return { state: 'found', object: secretOf(e.record!.data) };
  }

  /** Reads new credentials, records them (before anything is delivered) and retires the old. */
  private async issue(
    e: Entry,
    client: VaultClient,
    why: 'first' | 'rotate' | 'lost' | 'moved',
  ): Promise<void> {
    const policy = e.ref.dynamic!;
    let leased;
    try {
      leased = await readLeased(client, e.ref.path, { method: policy.method });
      this.count('issue', 'ok');
    } catch (err) {
      this.count('issue', outcomeOf(err));
      throw err;
    }
    const now = this.clock.now();
    if (!leased.lease) {
      throw new ConnectionConfigError(
        `${e.ref.path} answered without a lease: it is not a dynamic secret; remove source.vault.dynamic to read it as a KV secret`,
      );
    }
    const old = e.record;
    const next = rotated(
      old,
      {
        source: leaseSource(e.ref),
        leaseId: leased.lease.leaseId,
        data: leased.data,
        renewable: leased.lease.renewable,
        issuedAt: now,
        expiresAt: now + leased.lease.leaseDuration * 1000,
      },
      now,
      policy,
      why === 'lost' || why === 'moved',
    );
    // Recorded first: a crash after this line renews these credentials; one before it leaves
    // a lease nobody knows, which expires on its own.
    await this.opts.store.put(e.key, next);
    e.record = next;
    delete e.lastRenewed;
    if (why !== 'first') {
      const retiring = next.retiring.at(-1);
      e.events.push({
        type: 'Normal',
        reason: REASON_LEASE_ROTATED,
        message: `new credentials from ${e.ref.path} (lease until ${k8sTime(new Date(next.expiresAt))})${retiring && old && retiring.leaseId === old.leaseId ? `; the old lease is revoked at ${k8sTime(new Date(retiring.revokeAt))}` : ''}`,
      });
      this.opts.logger.info(
        { source: e.ref.path, mirror: e.key, why },
        'dynamic Vault source: new credentials',
      );
    }
  }

  /** Refuses a path that is not a credential endpoint of an issuing engine (one lookup per client). */
  private async checkEngine(e: Entry, client: VaultClient): Promise<void> {
    const path = e.ref.path; // normalised by resolveSource
    let known = this.mounts.get(client);
    if (!known) this.mounts.set(client, (known = new Map()));
    let m = known.get(path);
    if (!m) {
      try {
        m = await lookupMount(client, path);
        this.count('detect', 'ok');
      } catch (err) {
        this.count('detect', outcomeOf(err));
        throw err;
      }
      known.set(path, { mount: m.mount, type: m.type });
    }
    const refused = dynamicEngineRefusal(path, m.mount, m.type, e.ref.dynamic?.method ?? 'GET');
    if (refused !== undefined) throw new PathRefused(refused);
  }

  private async revokeDue(e: Entry, now: number): Promise<void> {
    const record = e.record!;
    const due = dueRevocations(record, now);
    if (due.length === 0) return;
    const done = new Set<string>();
    let changed = false;
    for (const r of due) {
      try {
        // Through the connection that issued it: after a switch of connection, the current one
        // may be another Vault (or another namespace), where the lease id means nothing.
        const { connection } = parseLeaseSource(retiringSource(r, record));
        await revokeLease(await this.opts.connections.client(connection), r.leaseId);
        this.count('revoke', 'ok');
        done.add(r.leaseId);
        changed = true;
      } catch (err) {
        this.count('revoke', outcomeOf(err));
        const message = errorMessage(err);
        if (r.error === undefined) {
          e.events.push({
            type: 'Warning',
            reason: REASON_LEASE_REVOKE_FAILED,
            message: `revoking an old lease of ${e.ref.path} failed: ${message}; retrying at every poll`,
          });
          changed = true;
        }
        r.error = message;
      }
    }
    if (!changed) return;
    const next: LeaseRecord = {
      ...record,
      retiring: record.retiring.filter((r) => !done.has(r.leaseId)),
    };
    await this.opts.store.put(e.key, next);
    e.record = next;
  }
}
