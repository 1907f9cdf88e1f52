// A mirror whose destination is a Vault secret (destination.vault), decided with no I/O: from the
// mirror, its source and what Vault holds at the destination, to the write to make (if any), the
// status and the Events. The mirror controller gathers the input, writes, and plans once more
// with the outcome of the write, so the status says what happened, not what was meant to.
//
// Rules (docs/vault.md):
// - The secret is the mirror's when it carries its owner mark (ownerMark). A secret that does not
//   exist yet (KV v2: no metadata at all) is the mirror's to create. Any other secret, also one
//   whose latest version is deleted but whose metadata remains, is foreign: it is never written
//   unless conflictPolicy is Adopt (ClusterSecretMirrors only) and it is unmarked. A secret
//   marked by another mirror is never taken over.
// - A write happens only when the data differs from what Vault holds, with check-and-set on the
//   version that was read (KV v2), so a concurrent writer is never clobbered.
// - Values are text (encoding Plain): a source value that is not valid UTF-8 (a binary keystore)
//   cannot be a Vault string without an encoding the consumer would have to know; the mirror says
//   so (Error) and writes nothing. Encoding Base64 is that encoding, KTS mirrors' own: every value
//   is the base64 of the source's bytes, binary or not, so clusters still running KTS read it.
//   What Vault holds is compared in the same encoding, so an unchanged source writes nothing.
// - A missing or unreadable source writes nothing and keeps what Vault holds.
import {
  LIMITS,
  mirrorPolicies,
  sourceText as describeSource,
  targetKindOf,
  type AnyMirror,
  type Condition,
  type MirrorPhase,
  type MirrorStatus,
  type ResolvedSource,
  type VaultSourceRef,
  type VaultWritten,
} from '@mirrorhub/shared/api/index';
import {
  destinationSummary,
  findCondition,
  k8sTime,
  mirrorRef,
  setCondition,
  shapeSource,
  type MirrorIdentity,
} from '@mirrorhub/shared/mirror/index';
import {
  clean,
  CONDITION_READY,
  CONDITION_SOURCE_FOUND,
  REASON,
  transitionEvents,
  truncate,
  type PlannedEvent,
  type SourceObservation,
} from '../../status.js';

const MAX_MESSAGE = LIMITS.SecretMirrorStatus.message;
const MAX_SHORT_MESSAGE = LIMITS.MirrorProblem.message;

export const REASON_VAULT_WRITTEN = 'VaultWritten';
export const REASON_VAULT_REMOVED = 'VaultRemoved';

/** The owner mark a mirror's Vault secrets carry: the hub's cluster and the mirror. */
export function ownerMark(originCluster: string, mirror: MirrorIdentity): string {
  return `${originCluster}/${mirrorRef(mirror)}`;
}

/** What Vault holds at the destination, as the controller read it. */
export type VaultTarget =
  | {
      state: 'found';
      /** Values as strings (non-strings as JSON text, listed in jsonKeys). */
      data: Readonly<Record<string, string>>;
      jsonKeys: readonly string[];
      owner?: string | undefined;
      /** KV v2: the current version; KV v1: 0. */
      version: number;
      kvVersion: 1 | 2;
    }
  /** Nothing readable there; `version` > 0 (KV v2): metadata remains (deleted versions). */
  | { state: 'absent'; owner?: string | undefined; version: number; kvVersion: 1 | 2 }
  | { state: 'error'; error: string; transient: boolean };

/** How the write went. */
export type WriteOutcome =
  | { ok: true; wrote: boolean; version?: number | undefined }
  /** `transient`: a retry can fix it (Vault down, sealed, a concurrent writer). */
  | { ok: false; error: string; transient: boolean };

export interface VaultDestinationInput {
  mirror: AnyMirror;
  /** The resolved source (undefined when errors say why not). */
  source?: ResolvedSource | undefined;
  /** The resolved destination (undefined when errors say why not). */
  destination?: VaultSourceRef | undefined;
  /** Why the spec cannot be synced: refusals of connections, tenancy; the mirror is in Error. */
  errors: readonly string[];
  observation: SourceObservation;
  /** What Vault holds; undefined when it was not read (nothing to write). */
  target?: VaultTarget | undefined;
  /** The mirror's owner mark (ownerMark). */
  owner: string;
  /** The outcome of the write the first plan asked for. */
  outcome?: WriteOutcome | undefined;
  now: Date;
}

export interface VaultDestinationPlan {
  /** Why the spec cannot be synced (phase Error): only a spec change helps. */
  invalid?: string;
  /** The source's data as Vault strings, when the source is there and convertible. */
  data?: Record<string, string>;
  /** Whether Vault must be read before deciding (the source is there). */
  needsTarget: boolean;
  /** The write to make (KV v2: check-and-set on `cas`). */
  write?: { data: Record<string, string>; cas?: number };
  /** A transient failure: retry sooner than the poll period. */
  retry: boolean;
  status: MirrorStatus;
  events: PlannedEvent[];
}

/**
 * The source's data as Vault strings in destination.vault.encoding, or why it cannot be (never a
 * value in the message).
 */
export function vaultData(
  mirror: AnyMirror,
  source: ResolvedSource,
  object: Parameters<typeof shapeSource>[1],
): { data: Record<string, string>; warnings: string[] } | { error: string } {
  const shaped = shapeSource(targetKindOf(source), object, mirror.spec.template);
  if (mirror.spec.destination.vault?.encoding === 'Base64') {
    // Re-encoded from the bytes: standard base64 with padding, as Go writes a []byte (KTS), and
    // the same string for the same bytes at every poll.
    const data: Record<string, string> = {};
    for (const [key, b64] of Object.entries(shaped.data)) {
      data[key] = Buffer.from(b64, 'base64').toString('base64');
    }
    return { data, warnings: shaped.warnings };
  }
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const data: Record<string, string> = {};
  const binary: string[] = [];
  for (const [key, b64] of Object.entries(shaped.data)) {
    try {
      data[key] = decoder.decode(Buffer.from(b64, 'base64'));
    } catch {
      binary.push(key);
    }
  }
  if (binary.length > 0) {
    return {
      error: `key${binary.length === 1 ? '' : 's'} ${binary.map((k) => JSON.stringify(k)).join(', ')} of the source ${binary.length === 1 ? 'is' : 'are'} not UTF-8 text, and Vault KV stores text: leave ${binary.length === 1 ? 'it' : 'them'} out with template.keys, or store ${binary.length === 1 ? 'it' : 'them'} base64-encoded in the source`,
    };
  }
  return { data, warnings: shaped.warnings };
}

function sameData(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>) {
  const ak = Object.keys(a);
  return (
    ak.length === Object.keys(b).length && ak.every((k) => Object.hasOwn(b, k) && a[k] === b[k])
  );
}

/** The destination as status.vault records it. */
export function writtenRecord(d: VaultSourceRef, version?: number): VaultWritten {
  return {
    connectionRef: { kind: d.connection.kind, name: d.connection.name },
    path: d.path,
    ...(d.kvVersion !== undefined ? { kvVersion: d.kvVersion } : {}),
    ...(version !== undefined && version > 0 ? { version } : {}),
  };
}

/** Whether status.vault names `d` (same connection and path). */
export function recordNames(w: VaultWritten | undefined, d: VaultSourceRef | undefined): boolean {
  return (
    !!w &&
    !!d &&
    w.path === d.path &&
    w.connectionRef.kind === d.connection.kind &&
    w.connectionRef.name === d.connection.name
  );
}

/**
 * The Vault secret an earlier spec had the mirror write, which it no longer names and which
 * deletePolicy Delete says to remove (undefined: nothing to remove).
 */
export function staleWrite(mirror: AnyMirror, current: VaultSourceRef | undefined) {
  const w = mirror.status?.vault;
  if (!w || recordNames(w, current)) return undefined;
  return mirrorPolicies(mirror.spec).deletePolicy === 'Delete' ? w : undefined;
}

/** A status.vault record as a reference for the connection and KV layers. */
export function recordRef(w: VaultWritten, mirrorNamespace: string | undefined): VaultSourceRef {
  return {
    kind: 'Vault',
    connection: {
      kind: w.connectionRef.kind,
      name: w.connectionRef.name,
      ...(w.connectionRef.kind === 'VaultConnection' ? { namespace: mirrorNamespace } : {}),
    },
    path: w.path,
    ...(w.kvVersion === 1 || w.kvVersion === 2 ? { kvVersion: w.kvVersion } : {}),
  };
}

export function planVaultDestination(input: VaultDestinationInput): VaultDestinationPlan {
  const { mirror, now, observation } = input;
  const prev = mirror.status ?? {};
  const generation = mirror.metadata.generation;
  const policies = mirrorPolicies(mirror.spec);
  const dest = input.destination;
  const src = input.source;
  const base: MirrorStatus = {
    // A mirror that wrote to namespaces before: their counts no longer apply.
    clusters: undefined,
    counts: undefined,
    problems: undefined,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    destination: destinationSummary(mirror.spec),
    ...(src ? { source: src.kind === 'Vault' ? src.path : src.name } : {}),
  };
  const conditions = (
    ready: { status: Condition['status']; reason: string; message: string },
    found?: { status: Condition['status']; reason: string; message: string },
  ): Condition[] => {
    let list = setCondition(
      prev.conditions,
      {
        type: CONDITION_READY,
        ...ready,
        message: truncate(ready.message, MAX_SHORT_MESSAGE),
        observedGeneration: generation,
      },
      now,
    );
    if (found || !findCondition(list, CONDITION_SOURCE_FOUND)) {
      list = setCondition(
        list,
        {
          type: CONDITION_SOURCE_FOUND,
          ...(found ?? { status: 'Unknown', reason: ready.reason, message: 'the spec is invalid' }),
          message: truncate(found?.message ?? 'the spec is invalid', MAX_SHORT_MESSAGE),
          observedGeneration: generation,
        },
        now,
      );
    }
    return list;
  };
  const done = (
    p: Omit<VaultDestinationPlan, 'events' | 'needsTarget' | 'retry'> &
      Partial<Pick<VaultDestinationPlan, 'needsTarget' | 'retry'>>,
    extra: PlannedEvent[] = [],
  ): VaultDestinationPlan => ({
    needsTarget: false,
    retry: false,
    ...p,
    events: [...transitionEvents(prev, p.status), ...extra],
  });

  const errors = [...input.errors];
  if (mirror.kind === 'SecretMirror' && policies.conflictPolicy === 'Adopt') {
    errors.push(
      'conflictPolicy Adopt is for ClusterSecretMirrors only: a SecretMirror never takes over a Vault secret it does not own',
    );
  }
  if (errors.length > 0 || !src || !dest) {
    const message = truncate(
      errors.join('; ') || 'destination.vault does not resolve to a Vault secret',
      MAX_MESSAGE,
    );
    return done({
      invalid: message,
      status: clean({
        ...prev,
        ...base,
        phase: 'Error',
        message,
        conditions: conditions({ status: 'False', reason: REASON.invalidSpec, message }),
      }),
    });
  }

  const where = `Vault ${dest.path}`;
  const record = prev.vault && recordNames(prev.vault, dest) ? prev.vault : undefined;
  if (policies.suspend) {
    const message = 'suspended: nothing is written or deleted; the status shows the last state';
    return done({
      status: clean({
        ...prev,
        ...base,
        phase: prev.phase ?? 'Pending',
        message,
        conditions: conditions({ status: 'False', reason: REASON.suspended, message }),
      }),
    });
  }

  const text = describeSource(src);
  if (observation.state !== 'found') {
    const why =
      observation.state === 'missing'
        ? `${text} not found`
        : `cannot read ${text}: ${observation.error}`;
    const message = truncate(record ? `${why}; ${where} is kept as it is` : why, MAX_MESSAGE);
    const phase: MirrorPhase =
      observation.state === 'unreadable' && observation.denied
        ? 'Error'
        : record
          ? 'Degraded'
          : observation.state === 'missing'
            ? 'Pending'
            : 'Error';
    const reason =
      observation.state === 'missing' ? REASON.sourceNotFound : REASON.sourceUnreadable;
    return done({
      retry: observation.state === 'unreadable' && !observation.denied,
      status: clean({
        ...prev,
        ...base,
        phase,
        message,
        conditions: conditions(
          { status: 'False', reason, message },
          observation.state === 'missing'
            ? { status: 'False', reason, message: `${text} not found` }
            : { status: 'Unknown', reason, message: why },
        ),
      }),
    });
  }

  const found = { status: 'True' as const, reason: REASON.sourceFound, message: text };
  const converted = vaultData(mirror, src, observation.object);
  if ('error' in converted) {
    const message = truncate(`cannot write ${where}: ${converted.error}`, MAX_MESSAGE);
    return done({
      invalid: message,
      status: clean({
        ...prev,
        ...base,
        phase: 'Error',
        message,
        conditions: conditions({ status: 'False', reason: REASON.syncError, message }, found),
      }),
    });
  }
  const data = converted.data;
  const warn = (m: string) =>
    truncate(
      converted.warnings.length > 0 ? `${m}; ${converted.warnings.join('; ')}` : m,
      MAX_MESSAGE,
    );
  const target = input.target;
  if (!target) {
    return done({ data, needsTarget: true, status: clean({ ...prev, ...base }) });
  }

  const failed = (error: string, transient: boolean): VaultDestinationPlan => {
    const message = warn(
      transient
        ? `cannot write ${where}: ${error}; ${record ? 'what Vault holds is kept; ' : ''}retrying`
        : `cannot write ${where}: ${error}`,
    );
    const phase: MirrorPhase = transient ? (record ? 'Degraded' : 'Pending') : 'Error';
    return done({
      data,
      retry: transient,
      status: clean({
        ...prev,
        ...base,
        phase,
        message,
        conditions: conditions(
          {
            status: 'False',
            reason: transient ? REASON.degraded : REASON.syncError,
            message,
          },
          found,
        ),
      }),
    });
  };
  if (target.state === 'error') return failed(target.error, target.transient);

  // Whose secret it is.
  const exists = target.state === 'found' || target.version > 0;
  const ours = target.owner === input.owner;
  if (!ours && exists) {
    const adopt = policies.conflictPolicy === 'Adopt' && target.owner === undefined;
    if (!adopt) {
      const message = warn(
        target.owner !== undefined
          ? `${where} belongs to another mirror (${target.owner}); it is left alone`
          : `${where} exists and is not mirrorhub's (it has no owner mark); conflictPolicy Skip leaves it alone: remove it, or set conflictPolicy Adopt on a ClusterSecretMirror to take it over`,
      );
      return done(
        {
          data,
          status: clean({
            ...prev,
            ...base,
            phase: 'Error',
            message,
            synced: '0/1',
            conditions: conditions({ status: 'False', reason: REASON.conflict, message }, found),
          }),
        },
        prev.phase === 'Error' &&
          findCondition(prev.conditions, CONDITION_READY)?.reason === REASON.conflict
          ? []
          : [
              {
                type: 'Warning',
                reason: REASON.conflict,
                message: truncate(message, MAX_SHORT_MESSAGE),
              },
            ],
      );
    }
  }

  const upToDate =
    target.state === 'found' && ours && target.jsonKeys.length === 0 && sameData(target.data, data);
  const outcome = input.outcome;
  if (!upToDate && !outcome) {
    return done({
      data,
      write: { data, ...(target.kvVersion === 2 ? { cas: target.version } : {}) },
      status: clean({ ...prev, ...base }),
    });
  }
  if (outcome && !outcome.ok) return failed(outcome.error, outcome.transient);

  const wrote = outcome?.ok === true && outcome.wrote;
  const version = (outcome?.ok ? outcome.version : undefined) ?? target.version;
  const message = warn(`${where} is up to date${version > 0 ? ` (version ${version})` : ''}`);
  const events: PlannedEvent[] = wrote
    ? [
        {
          type: 'Normal',
          reason: REASON_VAULT_WRITTEN,
          message: truncate(
            `wrote ${where}${version > 0 ? ` version ${version}` : ''} from ${text}`,
            MAX_SHORT_MESSAGE,
          ),
        },
      ]
    : [];
  return done(
    {
      data,
      status: clean({
        ...prev,
        ...base,
        phase: 'Active',
        message,
        synced: '1/1',
        vault: writtenRecord(dest, version),
        lastSyncTime: wrote || !prev.lastSyncTime ? k8sTime(now) : prev.lastSyncTime,
        conditions: conditions({ status: 'True', reason: REASON.synced, message }, found),
      }),
    },
    events,
  );
}
