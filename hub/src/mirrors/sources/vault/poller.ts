// Vault sources: Vault has no watch, so each distinct (connection, path, kvVersion) gets one
// poller, shared by every mirror that reads it (ref-counted) and stopped when the last lets go.
// It polls at the smallest pollPeriodSeconds of its mirrors, jittered (up to 10 % sooner, never
// later, so a change is seen within one period), and after a
// failure sooner, with backoff (1 s doubling, never later than the period), so a recovered Vault
// is seen quickly.
//
// KV v2: every poll reads only the metadata (current_version); the data is read only when that
// version changed. KV v1 has no versions: the data is read and its hash compared. The mirrors are
// told (onChange) only when what they would plan from changed, so a no-change poll costs one
// Vault request and nothing else: no reconcile, no write anywhere.
//
// The observation is the plan's SourceObservation: a found source is a synthetic Secret (type
// Opaque, values base64), so shaping, hashing, payloads and fan-out are the Kubernetes path's.
// source.vault.encoding says how Vault holds the values (KTS mirrors' Base64, or plain text); it
// is part of the poller's key, so two mirrors that read one path differently never share a poller.
import type { VaultSourceRef, VaultValueEncoding } from '@mirrorhub/shared/api/index';
import {
  realClock,
  type Clock,
  type Counter,
  type Logger,
} from '@mirrorhub/shared/kit/runtime/index';
import {
  apiPath,
  OWNER_DATA_KEY,
  VaultKv,
  type KvLocation,
  type VaultEnvelope,
} from '../../../vault/index.js';
import type { SourceObservation } from '../../status.js';
import type { VaultConnections } from '../../../vault/connections.js';
import { pollOnce } from './poll.js';
import {
  ConnectionConfigError,
  connectionKey,
  jittered,
  outcomeOf,
  pollPeriod,
  retryDelay,
} from '../../../vault/decide.js';
import { EncodingError, fingerprint, secretOf } from './observation.js';

/** A KV source as polled: where it is and how its values are encoded (default Plain). */
export type KvSourceRef = VaultSourceRef & { encoding?: VaultValueEncoding | undefined };

export interface VaultSourcesOptions {
  connections: Pick<VaultConnections, 'client' | 'loginFailed' | 'observed'>;
  /** Which mirrors to reconcile when a source's observation changed. */
  onChange(mirrorKeys: readonly string[]): void;
  requests: Counter<'operation' | 'outcome'>;
  logger: Logger;
  clock?: Clock | undefined;
  /** Jitter fraction of the period (default 0.1); 0 in tests that want exact periods. */
  jitter?: number | undefined;
  /** First retry after a failure (default 1 s). */
  retryInitialMs?: number | undefined;
}

interface Entry {
  key: string;
  source: KvSourceRef;
  mirrors: Map<string, number>;
  observation?: SourceObservation;
  /** Fingerprint of the observation the mirrors were last told about. */
  fingerprint?: string;
  /** KV v2: the version whose data `observation` holds. */
  version?: number;
  kv?: VaultKv;
  kvClient?: unknown;
  /** Where the path is (mount, KV version), once located with this `kv`. */
  loc?: KvLocation;
  timer?: ReturnType<typeof setTimeout>;
  dueAt?: number;
  polling: boolean;
  failures: number;
  stopped: boolean;
}

export function vaultSourceKey(s: KvSourceRef): string {
  return `${connectionKey(s.connection)}|${s.path}|${s.kvVersion ?? ''}|${s.encoding ?? 'Plain'}`;
}

export class VaultSources {
  private readonly entries = new Map<string, Entry>();
  private readonly byMirror = new Map<string, string>();
  private readonly clock: Clock;
  private stopped = false;

  constructor(private readonly opts: VaultSourcesOptions) {
    this.clock = opts.clock ?? realClock;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Mirror `mirrorKey` reads `source` every `periodMs` (undefined: nothing). */
  set(mirrorKey: string, source: KvSourceRef | undefined, periodMs = 300_000): void {
    if (this.stopped) return;
    const next = source ? vaultSourceKey(source) : undefined;
    const current = this.byMirror.get(mirrorKey);
    if (current !== undefined && current !== next) this.release(mirrorKey, current);
    if (!source || next === undefined) return;
    this.byMirror.set(mirrorKey, next);
    let entry = this.entries.get(next);
    if (!entry) {
      entry = {
        key: next,
        source,
        mirrors: new Map(),
        polling: false,
        failures: 0,
        stopped: false,
      };
      this.entries.set(next, entry);
      entry.mirrors.set(mirrorKey, periodMs);
      this.schedule(entry, 0);
      return;
    }
    const before = this.period(entry);
    entry.mirrors.set(mirrorKey, periodMs);
    const after = this.period(entry);
    // A shorter period: poll no later than it says.
    if (after < before && entry.dueAt !== undefined && entry.dueAt - this.clock.now() > after) {
      this.schedule(entry, this.jittered(after));
    }
  }

  /** What the mirror's source looks like; `unknown` until its first poll ended. */
  get(source: KvSourceRef): SourceObservation | { state: 'unknown' } {
    return this.entries.get(vaultSourceKey(source))?.observation ?? { state: 'unknown' };
  }

  /** The connection changed: forget what was read through it and poll again now. */
  connectionChanged(connKey: string): void {
    for (const e of this.entries.values()) {
      if (connectionKey(e.source.connection) !== connKey) continue;
      delete e.version;
      delete e.kv;
      delete e.loc;
      e.failures = 0;
      this.schedule(e, 0);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const e of this.entries.values()) {
      e.stopped = true;
      if (e.timer) clearTimeout(e.timer);
    }
    this.entries.clear();
    this.byMirror.clear();
  }

  // ---- internals --------------------------------------------------------------------------------

  private period(e: Entry): number {
    return pollPeriod(e.mirrors.values());
  }

  private jittered(ms: number): number {
    return jittered(ms, this.opts.jitter ?? 0.1);
  }

  private release(mirrorKey: string, key: string): void {
    this.byMirror.delete(mirrorKey);
    const e = this.entries.get(key);
    if (!e) return;
    e.mirrors.delete(mirrorKey);
    if (e.mirrors.size === 0) {
      e.stopped = true;
      if (e.timer) clearTimeout(e.timer);
      this.entries.delete(key);
    }
  }

  private schedule(e: Entry, delayMs: number): void {
    if (e.stopped) return;
    if (e.timer) clearTimeout(e.timer);
    e.dueAt = this.clock.now() + delayMs;
    e.timer = setTimeout(() => void this.poll(e), delayMs);
    e.timer.unref?.();
  }

  private async poll(e: Entry): Promise<void> {
    delete e.timer;
    delete e.dueAt;
    const result = await pollOnce(
      { ...this.opts, failedMessage: 'reading a Vault source failed' },
      e,
      e.source,
      () => this.read(e),
      (ms) => this.schedule(e, ms),
    );
    if (!result) return;
    const { observation, retry } = result;
    const fp = fingerprint(observation);
    if (fp !== e.fingerprint) {
      e.fingerprint = fp;
      this.opts.onChange([...e.mirrors.keys()]);
    }
    const period = this.period(e);
    const delay = retry
      ? retryDelay(e.failures, this.opts.retryInitialMs ?? 1000, period)
      : this.jittered(period);
    this.schedule(e, delay);
  }

  private count(operation: string, outcome: string): void {
    this.opts.requests.inc({ operation, outcome });
  }

  private async read(e: Entry): Promise<SourceObservation> {
    const client = await this.opts.connections.client(e.source.connection);
    if (!e.kv || e.kvClient !== client) {
      const mount = e.source.path.split('/')[0] ?? '';
      e.kv = new VaultKv(
        client,
        e.source.kvVersion ? { mounts: { [mount]: e.source.kvVersion } } : {},
      );
      e.kvClient = client;
      delete e.version;
      delete e.loc;
    }
    const kv = e.kv;
    let loc = e.loc;
    if (!loc) {
      try {
        loc = await kv.locate(e.source.path);
        // Always asked of Vault, a stated kvVersion too: the mount must really be KV (kv.ts).
        this.count('detect', 'ok');
      } catch (err) {
        this.count('detect', outcomeOf(err));
        throw err;
      }
      e.loc = loc;
    }
    if (loc.key === '') {
      throw new ConnectionConfigError(
        `source.vault.path ${e.source.path} names a mount, not a secret`,
      );
    }
    if (loc.version === 2) {
      type Meta = {
        current_version?: number;
        versions?: Record<string, { deletion_time?: string; destroyed?: boolean }>;
      };
      let res;
      try {
        res = await client.request<VaultEnvelope<Meta>>({
          method: 'GET',
          path: apiPath(loc.mount, 'metadata', loc.key),
          accept: [404],
        });
      } catch (err) {
        this.count('metadata', outcomeOf(err));
        throw err;
      }
      if (res.status === 404) {
        this.count('metadata', 'not_found');
        delete e.version;
        return { state: 'missing' };
      }
      this.count('metadata', 'ok');
      const current = res.body?.data?.current_version ?? 0;
      const v = res.body?.data?.versions?.[String(current)];
      if (current === 0 || v?.destroyed || (v?.deletion_time && v.deletion_time !== '')) {
        delete e.version;
        return { state: 'missing' };
      }
      if (e.version === current && e.observation?.state === 'found') return e.observation;
      let data;
      try {
        data = await client.request<VaultEnvelope<{ data?: Record<string, unknown> }>>({
          method: 'GET',
          path: apiPath(loc.mount, 'data', loc.key),
          query: { version: String(current) },
          accept: [404],
        });
      } catch (err) {
        this.count('read', outcomeOf(err));
        throw err;
      }
      if (data.status === 404 || !data.body?.data?.data) {
        this.count('read', 'not_found');
        delete e.version;
        return { state: 'missing' };
      }
      this.count('read', 'ok');
      const decoded = this.decode(e, data.body.data.data);
      // Data the encoding cannot read: read again at the next poll rather than trust the version.
      if (decoded.state === 'found') e.version = current;
      else delete e.version;
      return decoded;
    }
    let res;
    try {
      res = await client.request<VaultEnvelope<Record<string, unknown>>>({
        method: 'GET',
        path: apiPath(loc.mount, loc.key),
        accept: [404],
      });
    } catch (err) {
      this.count('read', outcomeOf(err));
      throw err;
    }
    if (res.status === 404) {
      this.count('read', 'not_found');
      return { state: 'missing' };
    }
    this.count('read', 'ok');
    // A KV v1 secret mirrorhub wrote carries its owner mark as a data key: not data to copy.
    const { [OWNER_DATA_KEY]: _owner, ...stored } = res.body?.data ?? {};
    const decoded = this.decode(e, stored);
    // Same content as before: keep the very object, so nothing downstream sees a change.
    if (
      decoded.state === 'found' &&
      e.observation?.state === 'found' &&
      fingerprint(e.observation) === fingerprint(decoded)
    ) {
      return e.observation;
    }
    return decoded;
  }

  /**
   * The data as the mirrors see it, in the source's encoding. Data the encoding cannot read puts
   * the mirrors in Error (denied: no retry helps until the data or the spec changes) and keeps
   * their copies; the connection itself is fine.
   */
  private decode(e: Entry, raw: Record<string, unknown>): SourceObservation {
    try {
      return { state: 'found', object: secretOf(raw, e.source.encoding) };
    } catch (err) {
      if (!(err instanceof EncodingError)) throw err;
      return { state: 'unreadable', error: err.message, denied: true };
    }
  }
}
