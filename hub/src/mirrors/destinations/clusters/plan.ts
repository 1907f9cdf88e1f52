// The mirror controller's decisions, with no I/O: from a mirror, its source and what every
// cluster holds, to the payload Secrets + MirrorDeliveries to write, the deliveries to delete,
// the status to report and the Events to emit. controller.ts gathers the input from caches and
// applies the result.
//
// Rules (docs/architecture.md):
// - One payload Secret + one MirrorDelivery per (mirror, selected cluster), in the cluster's
//   agent namespace, both named deliveryName(mirror, originCluster). Written only when the
//   observed object differs (payload: content hash annotation; delivery: spec, labels,
//   annotations); an agent plans only from a payload and a delivery whose content hashes
//   match (the delivery controller's plan.ts says in which order they are written).
// - Clusters no longer selected lose their delivery and payload (the agent's finalizer on the
//   delivery removes or releases the copies per deletePolicy).
// - A spec only code can judge (regex, selector, a SecretMirror reading another namespace) puts
//   the mirror in phase Error and changes nothing anywhere.
// - A missing source writes nothing: Pending when nothing was delivered yet, Degraded with the
//   copies kept as they are when it disappeared after delivering.
// - suspend: nothing is written or deleted, except that existing deliveries are told to suspend
//   too (spec.suspend), so the agent also stops; content stays as it was.
// - Events are derived from the previous and the next status only, so they fire on
//   transitions and never twice for one.
// - Every MirrorDelivery and payload Secret is signed for the cluster, namespace and name it is
//   written to (shared/src/mirror/signing.ts); the agent acts on nothing else.
// - Tenancy: a SecretMirror (a namespace's own) delivers only to the hub's cluster unless the
//   hub's configuration grants its namespace remote clusters, never adopts, with
//   requireAcceptance only into namespaces labelled accept.mirrorhub.io/<its namespace>=true,
//   and its status never shows what other namespaces hold (docs/security.md).
import {
  deliveryPolicies,
  mirrorPolicies,
  resolveSource,
  sourceText as describeSource,
  targetKindOf,
  API_VERSION,
  type AnyMirror,
  type ClusterSyncStatus,
  type Condition,
  type DeliveryReport,
  type MirrorCounts,
  type MirrorDelivery,
  type MirrorDeliverySpec,
  type MirrorPhase,
  type MirrorProblem,
  type MirrorStatus,
  type Predecessor,
  type ResolvedSource,
  type TakenOverCount,
} from '@mirrorhub/shared/api/index';
import {
  buildPayloadSecret,
  compileNamespaceMatcher,
  contentHash,
  deliveryName,
  deriveHashKey,
  destinationSummary,
  findCondition,
  k8sTime,
  limitProblems,
  mirrorRef,
  originRef,
  parseMirrorRef,
  phaseFromCounts,
  setCondition,
  shapeSource,
  syncedSummary,
  deliveryMessage,
  payloadDigest,
  payloadMessage,
  type MirrorIdentity,
  type PatternMatcher,
  type Signer,
  type PayloadSecret,
} from '@mirrorhub/shared/mirror/index';
import { equalIgnoringTime } from '@mirrorhub/shared/kit/controller/patch';
import { detailsInDelivery, redactNames, type VisibleNames } from '@mirrorhub/shared/mirror/redact';
import { selectClusters } from '../../../clusters/select.js';
import {
  clean,
  CONDITION_READY,
  CONDITION_SOURCE_FOUND,
  identityOf,
  MAX_MESSAGE,
  MAX_SHORT_MESSAGE,
  REASON,
  transitionEvents,
  truncate,
  type PlannedEvent,
  type SourceObservation,
} from '../../status.js';
import {
  ANNOTATION_BINARY_KEYS,
  ANNOTATION_CONTENT_HASH,
  ANNOTATION_MIRROR,
  ANNOTATION_SIGNATURE,
  LABEL_ORIGIN_CLUSTER,
} from '@mirrorhub/shared/api/contract';
import {
  deliveryOwner,
  deliverySequence,
  deliveryUpToDate,
  namesAnotherMirror,
  type DeliveryOwner,
} from './delivery.js';

// ---- input ------------------------------------------------------------------------------------

/** What one registered cluster holds for this mirror, from the hub's caches of that cluster. */
export interface ClusterObservation {
  name: string;
  agentNamespace: string;
  labels: Readonly<Record<string, string>>;
  local: boolean;
  /**
   * The cluster's caches hold a full list: `delivery` and `payload` below are known. When false,
   * nothing is written to or deleted from the cluster.
   */
  synced: boolean;
  /** Why the cluster cannot be reached right now (persistent watch/connect failure). */
  error?: string | undefined;
  /** The MirrorDelivery of this mirror, as last written or seen. */
  delivery?: MirrorDelivery | undefined;
  /** The payload Secret (metadata only): present or not, and the content hash it holds. */
  payload?: { contentHash?: string | undefined; signature?: string | undefined } | undefined;
  /** The last write to this cluster for this mirror failed with this error. */
  writeError?: string | undefined;
  /**
   * Another hub replica owns the cluster: nothing is written to or deleted from it here, and
   * its entry in the status is its owner's report (when the report is for this mirror's
   * current generation and content).
   */
  remote?: RemoteObservation | undefined;
}

/** What this replica knows of a cluster another replica owns. */
export interface RemoteObservation {
  /** The owning replica (its identity); undefined: none yet. */
  owner: string | undefined;
  /** The owner's report on this mirror's delivery there; undefined: none. */
  report: DeliveryReport | undefined;
}

export interface PlanInput {
  mirror: AnyMirror;
  /** Ignored when the spec does not resolve to a source (it is then invalid). */
  source: SourceObservation;
  /**
   * Why the resolved source may not be used by this mirror (e.g. a ClusterVaultConnection that
   * does not allow the mirror's namespace): the mirror is invalid (phase Error).
   */
  sourceError?: string | undefined;
  /** Every registered cluster. */
  clusters: readonly ClusterObservation[];
  /** The hub's random secret (Secret mirrorhub-hash-key); content hashes are keyed with it. */
  hubSecret: string | Uint8Array;
  /** The hub's cluster name. */
  originCluster: string;
  /** Signs every delivery and payload (the hub's Ed25519 key). */
  signer: Signer;
  /** What namespaced mirrors may do (the hub's configuration); default: the strictest. */
  tenancy?: Tenancy | undefined;
  now: Date;
  /** Status to compare with; default mirror.status. */
  previousStatus?: MirrorStatus | undefined;
}

/** The hub's rules for SecretMirrors (namespaced: their authors are tenants, not admins). */
export interface Tenancy {
  /** Namespaces whose SecretMirrors may deliver to clusters other than the hub's own. */
  remoteNamespaces: readonly PatternMatcher[];
  /** Copies of a SecretMirror land only in namespaces that accept its namespace by label. */
  requireAcceptance: boolean;
}

/** Label a namespace carries (value "true") to accept SecretMirrors from `sourceNamespace`. */
export function acceptLabel(sourceNamespace: string): string {
  return `accept.mirrorhub.io/${sourceNamespace}`;
}

// ---- output -----------------------------------------------------------------------------------

export interface DeliveryWrite {
  cluster: string;
  /** The payload Secret to write first, when it differs from the observed one. */
  payload?: PayloadSecret;
  /** The MirrorDelivery to write, when it differs from the observed one. */
  delivery?: MirrorDelivery;
}

export interface MirrorPlan {
  deliveryName: string;
  /** The source to watch; undefined when the spec names none the mirror may read. */
  source?: ResolvedSource;
  /** Why the spec cannot be synced (phase Error). */
  invalid?: string;
  writes: DeliveryWrite[];
  /** Clusters whose delivery and payload must go. */
  deletes: string[];
  status: MirrorStatus;
  events: PlannedEvent[];
  /** The content hash delivered (what a delivery report proves it describes). */
  contentHash?: string;
  /**
   * Another hub replica delivers to a selected cluster: the mirror must hold the hub's
   * finalizer (set by the leader before anything is written anywhere) for it to write there.
   */
  remoteWrites?: boolean;
}

// ---- constants --------------------------------------------------------------------------------

// ---- plan -------------------------------------------------------------------------------------

export function planMirror(input: PlanInput): MirrorPlan {
  const { mirror, originCluster, now } = input;
  const prev = input.previousStatus ?? mirror.status ?? {};
  const generation = mirror.metadata.generation;
  const identity = identityOf(mirror);
  const name = deliveryName(identity, originCluster);
  const spec = mirror.spec;
  const policies = mirrorPolicies(spec);

  // Validate what only code can judge.
  const errors: string[] = [];
  const resolved = resolveSource(mirror);
  if (!resolved.ok) errors.push(resolved.error);
  else if (input.sourceError) errors.push(input.sourceError);
  const matcher = compileNamespaceMatcher(spec.destination, { fieldPath: 'destination' });
  if (!matcher.ok) errors.push(matcher.error);
  const selection = selectClusters(spec.destination.clusters, input.clusters);
  if (selection.error) errors.push(selection.error);
  const tenant = identity.kind === 'SecretMirror' ? (identity.namespace ?? '') : undefined;
  if (tenant !== undefined) errors.push(...tenantErrors(tenant, spec, selection.selected, input));
  const source = resolved.ok ? resolved.source : undefined;

  const base: MirrorStatus = {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    destination: destinationSummary(spec),
    ...(source ? { source: source.kind === 'Vault' ? source.path : source.name } : {}),
  };

  if (errors.length > 0) {
    const message = truncate(errors.join('; '), MAX_MESSAGE);
    let conditions = setCondition(
      prev.conditions,
      {
        type: CONDITION_READY,
        status: 'False',
        reason: REASON.invalidSpec,
        message: truncate(message, MAX_SHORT_MESSAGE),
        observedGeneration: generation,
      },
      now,
    );
    if (!findCondition(conditions, CONDITION_SOURCE_FOUND)) {
      conditions = setCondition(
        conditions,
        {
          type: CONDITION_SOURCE_FOUND,
          status: 'Unknown',
          reason: REASON.invalidSpec,
          message: 'the spec is invalid',
          observedGeneration: generation,
        },
        now,
      );
    }
    // Copies are kept as they are: the last counts stay, only phase and message change.
    const status = clean({ ...prev, ...base, phase: 'Error', message, conditions });
    return withEvents(prev, {
      deliveryName: name,
      ...(source ? { source } : {}),
      invalid: message,
      writes: [],
      deletes: [],
      status,
      events: [],
    });
  }
  const src = source!;
  const sourceKind = targetKindOf(src);
  const sourceText = describeSource(src);

  if (policies.suspend) {
    // Tell existing deliveries to suspend; write nothing else, delete nothing.
    const writes: DeliveryWrite[] = [];
    for (const obs of input.clusters) {
      const d = obs.delivery;
      if (obs.remote || !obs.synced || !d || d.metadata.deletionTimestamp) continue;
      if (deliveryPolicies(d.spec).suspend) continue;
      if (deliveryOwner(obs.delivery, placeOf(obs), mirror, originCluster, input.signer) !== 'ours')
        continue;
      writes.push({
        cluster: obs.name,
        delivery: deliveryObject(
          name,
          obs,
          originCluster,
          sequenced(obs, { ...d.spec, suspend: true }, now),
          input.signer,
        ),
      });
    }
    const message = 'suspended: nothing is written or deleted; the status shows the last state';
    const conditions = setCondition(
      prev.conditions,
      {
        type: CONDITION_READY,
        status: 'False',
        reason: REASON.suspended,
        message,
        observedGeneration: generation,
      },
      now,
    );
    const status = clean({
      ...prev,
      ...base,
      phase: prev.phase ?? 'Pending',
      message,
      conditions,
    });
    return withEvents(prev, {
      deliveryName: name,
      source: src,
      writes,
      deletes: [],
      status,
      events: [],
    });
  }

  const selectedNames = new Set(selection.selected.map((c) => c.name));

  // Whose delivery each cluster holds under this mirror's name (see deliveryOwner).
  const owners = new Map(
    input.clusters.map((obs) => [
      obs.name,
      deliveryOwner(obs.delivery, placeOf(obs), mirror, originCluster, input.signer),
    ]),
  );
  // Clusters no longer selected: remove what is there, unless it is another mirror's. Selected
  // clusters holding a deleted mirror's delivery under this name: that mirror's cleanup is due
  // (as for a delivery seen without its mirror); this mirror delivers once it is gone.
  const deletes = input.clusters
    .filter(
      (obs) =>
        !obs.remote &&
        obs.synced &&
        holdsSomething(obs) &&
        (selectedNames.has(obs.name)
          ? owners.get(obs.name) === 'previous'
          : owners.get(obs.name) !== 'foreign'),
    )
    .map((obs) => obs.name);

  // What every selected cluster should hold (only when the source is there).
  const writes: DeliveryWrite[] = [];
  const desiredSpecs = new Map<string, MirrorDeliverySpec>();
  let warnings: string[] = [];
  let contentHashOut: string | undefined;
  if (input.source.state === 'found') {
    const shaped = shapeSource(sourceKind, input.source.object, spec.template);
    warnings = shaped.warnings;
    const hash = contentHash(deriveHashKey(input.hubSecret, mirror.metadata.uid ?? ''), {
      targetKind: sourceKind,
      data: shaped.data,
      binaryKeys: shaped.binaryKeys,
      type: shaped.template.type,
      labels: shaped.template.labels,
      annotations: shaped.template.annotations,
    });
    contentHashOut = hash;
    const targetName = spec.destination.name ?? (src.kind === 'Vault' ? '' : src.name);
    // The payload is the same for every cluster but for its namespace and signature: built and
    // digested once here, signed per cluster below, copied only for the clusters it is written to.
    const payload = buildPayloadSecret({ name, namespace: '', deliveryName: name, shaped });
    payload.metadata.labels[LABEL_ORIGIN_CLUSTER] = originCluster;
    payload.metadata.annotations = {
      ...(payload.metadata.annotations ?? {}),
      [ANNOTATION_CONTENT_HASH]: hash,
      [ANNOTATION_MIRROR]: mirrorRef(identity),
    };
    const binaryKeys = payload.metadata.annotations[ANNOTATION_BINARY_KEYS];
    const dataSha256 = payloadDigest(payload.data);
    for (const obs of selection.selected) {
      const unsequenced: MirrorDeliverySpec = {
        mirror: {
          kind: identity.kind,
          ...(identity.namespace ? { namespace: identity.namespace } : {}),
          name: identity.name,
          uid: mirror.metadata.uid ?? '',
        },
        originCluster,
        origin:
          src.kind === 'Vault'
            ? `${originCluster}/vault:${src.path}`
            : originRef(originCluster, src.namespace, src.name),
        payloadSecretName: name,
        target: { kind: sourceKind, name: targetName },
        ...(spec.destination.namespaces ? { namespaces: [...spec.destination.namespaces] } : {}),
        ...(spec.destination.namespaceSelector
          ? { namespaceSelector: spec.destination.namespaceSelector }
          : {}),
        ...(spec.destination.excludeNamespaces
          ? { excludeNamespaces: [...spec.destination.excludeNamespaces] }
          : {}),
        ...(src.kind !== 'Vault' && obs.local && targetName === src.name
          ? { sourceNamespace: src.namespace }
          : {}),
        ...(tenant !== undefined && input.tenancy?.requireAcceptance
          ? { acceptLabel: acceptLabel(tenant) }
          : {}),
        template: shaped.template,
        deletePolicy: policies.deletePolicy,
        conflictPolicy: policies.conflictPolicy,
        suspend: false,
        pollPeriodSeconds: policies.pollPeriodSeconds,
        contentHash: hash,
      };
      const deliverySpec = sequenced(obs, unsequenced, now);
      desiredSpecs.set(obs.name, deliverySpec);
      if (obs.remote) continue; // its owner writes there
      if (!obs.synced) continue; // unknown state: write nothing until the caches are there
      if (obs.delivery?.metadata.deletionTimestamp) continue; // wait until the old one is gone
      if (owners.get(obs.name) !== 'ours') continue; // never over another mirror's delivery
      const write: DeliveryWrite = { cluster: obs.name };
      const signature = input.signer.sign(
        payloadMessage(
          { cluster: obs.name, namespace: obs.agentNamespace, name },
          { contentHash: hash, binaryKeys, dataSha256 },
        ),
      );
      if (obs.payload?.contentHash !== hash || obs.payload.signature !== signature) {
        write.payload = {
          ...payload,
          metadata: {
            ...payload.metadata,
            namespace: obs.agentNamespace,
            annotations: { ...payload.metadata.annotations, [ANNOTATION_SIGNATURE]: signature },
          },
        };
      }
      const desired = deliveryObject(name, obs, originCluster, deliverySpec, input.signer);
      if (!deliveryUpToDate(obs.delivery, desired)) write.delivery = desired;
      if (write.payload || write.delivery) writes.push(write);
    }
  }

  // Status per selected cluster, then in total.
  const takenOver = new Map<Predecessor, number>();
  const entries: ClusterSyncStatus[] = [];
  const problems: MirrorProblem[] = [];
  for (const obs of selection.selected) {
    if (obs.remote) {
      const r = remoteStatus(obs, obs.remote, generation, contentHashOut);
      entries.push(r.entry);
      problems.push(...r.problems);
      continue;
    }
    const owner = owners.get(obs.name) ?? 'ours';
    const r = clusterStatus(obs, desiredSpecs.get(obs.name), input.source.state === 'found', {
      owner,
      uid: mirror.metadata.uid ?? '',
    });
    if (tenant !== undefined && owner === 'ours') redactForTenant(tenant, obs, r);
    entries.push(r.entry);
    problems.push(...r.problems);
    if (owner === 'ours') countTakenOver(takenOver, obs.delivery);
  }
  for (const missing of selection.missing) {
    entries.push({
      name: missing,
      phase: 'Error',
      namespaces: 0,
      synced: 0,
      failed: 0,
      conflicts: 0,
      message: `no cluster named "${missing}" is registered`,
    });
  }
  entries.sort((a, b) => compare(a.name, b.name));
  const denied = sum(entries, 'denied');
  const counts: Counts = {
    clusters: entries.length,
    namespaces: sum(entries, 'namespaces'),
    synced: sum(entries, 'synced'),
    failed: sum(entries, 'failed'),
    conflicts: sum(entries, 'conflicts'),
    // Only when there are any: a status without refusals reads as it always did.
    ...(denied > 0 ? { denied } : {}),
  };
  const lastSyncTime = latest(entries.map((e) => e.lastSyncTime)) ?? prev.lastSyncTime;

  let phase: MirrorPhase;
  let message: string;
  let readyReason: string;
  let sourceCondition: { status: 'True' | 'False' | 'Unknown'; reason: string; message: string };
  if (input.source.state === 'found') {
    phase = aggregatePhase(entries);
    message = summary(phase, counts, entries);
    readyReason =
      phase === 'Active'
        ? REASON.synced
        : phase === 'Pending'
          ? REASON.progressing
          : phase === 'Error'
            ? REASON.syncError
            : REASON.degraded;
    sourceCondition = { status: 'True', reason: REASON.sourceFound, message: sourceText };
  } else {
    const delivered = input.clusters.some((obs) =>
      obs.remote
        ? obs.remote.report?.present === true
        : obs.delivery !== undefined && !obs.delivery.metadata.deletionTimestamp,
    );
    const why =
      input.source.state === 'missing'
        ? `${sourceText} not found`
        : `cannot read ${sourceText}: ${input.source.error}`;
    message = delivered ? `${why}; copies are kept as they are` : why;
    phase =
      input.source.state === 'unreadable' && input.source.denied
        ? 'Error'
        : delivered
          ? 'Degraded'
          : input.source.state === 'missing'
            ? 'Pending'
            : 'Error';
    readyReason =
      input.source.state === 'missing' ? REASON.sourceNotFound : REASON.sourceUnreadable;
    sourceCondition =
      input.source.state === 'missing'
        ? { status: 'False', reason: REASON.sourceNotFound, message: `${sourceText} not found` }
        : { status: 'Unknown', reason: REASON.sourceUnreadable, message: why };
  }
  if (warnings.length > 0) message += `; ${warnings.join('; ')}`;
  message = truncate(message, MAX_MESSAGE);

  let conditions: Condition[] = setCondition(
    prev.conditions,
    {
      type: CONDITION_READY,
      status: phase === 'Active' ? 'True' : 'False',
      reason: readyReason,
      message: truncate(message, MAX_SHORT_MESSAGE),
      observedGeneration: generation,
    },
    now,
  );
  conditions = setCondition(
    conditions,
    {
      type: CONDITION_SOURCE_FOUND,
      ...sourceCondition,
      message: truncate(sourceCondition.message, MAX_SHORT_MESSAGE),
      observedGeneration: generation,
    },
    now,
  );

  const status = clean({
    ...base,
    phase,
    message,
    ...(lastSyncTime ? { lastSyncTime } : {}),
    synced: syncedSummary(counts),
    counts,
    clusters: entries,
    problems: limitProblems(problems),
    takenOver: takenOverCounts(takenOver),
    conditions,
  });
  return withEvents(prev, {
    deliveryName: name,
    source: src,
    writes,
    deletes,
    status,
    events: [],
    ...(contentHashOut !== undefined ? { contentHash: contentHashOut } : {}),
    ...(contentHashOut !== undefined && selection.selected.some((c) => c.remote)
      ? { remoteWrites: true }
      : {}),
  });
}

export interface CleanupOptions {
  /** When the mirror's deletion began (metadata.deletionTimestamp). */
  deletingSince?: Date | undefined;
  now?: Date | undefined;
  /**
   * A cluster that still cannot be cleaned up this long after the deletion began (unreachable,
   * not connected, or its deletes failing) is given up on, so the finalizer can go.
   */
  graceMs?: number | undefined;
  /**
   * The mirror being cleaned up. A delivery under its name that names another mirror (forged,
   * or left by someone else) is not its to delete: neither deleted nor waited for.
   */
  mirror?: MirrorIdentity | undefined;
}

export interface AbandonedCleanup {
  cluster: string;
  /** Why it could not be cleaned up (for status and Events). */
  reason: string;
}

export interface CleanupPlan {
  /** Clusters whose delivery and payload are to be deleted now. */
  deletes: string[];
  /** Clusters not clean yet (not synced, or still holding something). */
  waitingFor: string[];
  /** Clusters given up on after the grace period; they still hold, or may hold, copies. */
  abandoned: AbandonedCleanup[];
  /** Every cluster is clean or given up on: the finalizer may go. */
  done: boolean;
  /** When failing clusters will be given up on (when some are failing and the time is known). */
  deadline?: Date;
}

/**
 * A mirror being deleted (or gone while deliveries remain): what to delete, and whether every
 * cluster is clean so the finalizer may go. A delivery already being deleted counts as done: the
 * agent's finalizer on it finishes the job. Clusters whose caches are not synced are waited for,
 * and so are clusters whose deletes fail; once `graceMs` has passed since the deletion began,
 * those (only those: a reachable cluster making progress is still waited for) are abandoned. What
 * they hold is deleted when they are reachable again: the delivery's mirror is gone by then, and
 * deliveries without a mirror are deleted when seen.
 */
export function planCleanup(
  clusters: readonly ClusterObservation[],
  opts: CleanupOptions = {},
): CleanupPlan {
  const deletes: string[] = [];
  const waitingFor: string[] = [];
  const failing: AbandonedCleanup[] = [];
  for (const obs of clusters) {
    if (obs.remote) {
      // Its owner deletes there; its report says when nothing is left.
      const report = obs.remote.report;
      if (report?.present !== true) continue;
      waitingFor.push(obs.name);
      if (obs.remote.owner === undefined) {
        failing.push({ cluster: obs.name, reason: 'no hub replica owns it' });
      } else if (report.phase === 'Error') {
        failing.push({
          cluster: obs.name,
          reason: report.message ?? 'its owner cannot clean it up',
        });
      }
    } else if (!obs.synced) {
      waitingFor.push(obs.name);
      failing.push({
        cluster: obs.name,
        reason: obs.error !== undefined ? `unreachable: ${obs.error}` : 'not connected yet',
      });
    } else if (holdsSomething(obs) && !namesAnotherMirror(obs.delivery, opts.mirror)) {
      deletes.push(obs.name);
      waitingFor.push(obs.name);
      if (obs.error !== undefined) {
        failing.push({ cluster: obs.name, reason: `unreachable: ${obs.error}` });
      } else if (obs.writeError !== undefined) {
        failing.push({ cluster: obs.name, reason: `deleting failed: ${obs.writeError}` });
      }
    }
  }
  const { deletingSince, now, graceMs } = opts;
  const deadline =
    deletingSince && graceMs !== undefined && failing.length > 0
      ? new Date(deletingSince.getTime() + graceMs)
      : undefined;
  const abandoned =
    deadline && now && now.getTime() >= deadline.getTime()
      ? failing.sort((a, b) => compare(a.cluster, b.cluster))
      : [];
  const given = new Set(abandoned.map((a) => a.cluster));
  const done = waitingFor.every((c) => given.has(c));
  return { deletes, waitingFor, abandoned, done, ...(deadline ? { deadline } : {}) };
}

export const REASON_DELETING = 'Deleting';
export const REASON_CLEANUP_PENDING = 'CleanupPending';

/**
 * The status of a mirror being deleted: Ready False/Deleting with what is waited for (and until
 * when), or, when clusters are abandoned, CleanupPending naming them, with a Warning Event. The
 * rest of the status (counts, clusters) stays as last reported.
 */
export function planDeletionStatus(
  prev: MirrorStatus,
  cleanup: CleanupPlan,
  deliveryName: string,
  now: Date,
): { status: MirrorStatus; events: PlannedEvent[] } {
  let message: string;
  let reason: string;
  const events: PlannedEvent[] = [];
  if (cleanup.abandoned.length > 0) {
    reason = REASON_CLEANUP_PENDING;
    const list = cleanup.abandoned.map((a) => `${a.cluster} (${a.reason})`).join('; ');
    message =
      `deleted; cleanup pending in ${cleanup.abandoned.length === 1 ? 'cluster' : 'clusters'} ` +
      `${list}: MirrorDelivery ${deliveryName}, its payload Secret and the copies there are ` +
      `removed when the hub reaches ${cleanup.abandoned.length === 1 ? 'it' : 'them'} again`;
    events.push({
      type: 'Warning',
      reason: REASON_CLEANUP_PENDING,
      message: truncate(message, MAX_SHORT_MESSAGE),
    });
  } else {
    reason = REASON_DELETING;
    const parts: string[] = [];
    if (cleanup.waitingFor.length > 0) {
      parts.push(`removing deliveries from ${cleanup.waitingFor.join(', ')}`);
    }
    if (cleanup.deadline) {
      parts.push(
        `a cluster that cannot be cleaned up by ${k8sTime(cleanup.deadline)} is left for later ` +
          `and the finalizer released`,
      );
    }
    message = `deleting: ${parts.join('; ') || 'releasing the finalizer'}`;
  }
  message = truncate(message, MAX_MESSAGE);
  const conditions = setCondition(
    prev.conditions,
    {
      type: CONDITION_READY,
      status: 'False',
      reason,
      message: truncate(message, MAX_SHORT_MESSAGE),
    },
    now,
  );
  return { status: clean({ ...prev, message, conditions }), events };
}

// ---- helpers ----------------------------------------------------------------------------------

/**
 * `spec` with the sequence it is written with over `obs`'s delivery: the observed one while
 * nothing else changed, a higher one otherwise (see deliverySequence).
 */
function sequenced(
  obs: ClusterObservation,
  spec: MirrorDeliverySpec,
  now: Date,
): MirrorDeliverySpec {
  return { ...spec, sequence: deliverySequence(obs.delivery, spec, now.getTime()) };
}

function deliveryObject(
  name: string,
  obs: ClusterObservation,
  originCluster: string,
  spec: MirrorDeliverySpec,
  signer: Signer,
): MirrorDelivery {
  const signature = signer.sign(
    deliveryMessage({ cluster: obs.name, namespace: obs.agentNamespace, name }, spec),
  );
  return {
    apiVersion: API_VERSION,
    kind: 'MirrorDelivery',
    metadata: {
      name,
      namespace: obs.agentNamespace,
      labels: { [LABEL_ORIGIN_CLUSTER]: originCluster },
      annotations: {
        [ANNOTATION_MIRROR]: mirrorRef(spec.mirror),
        [ANNOTATION_SIGNATURE]: signature,
      },
    },
    spec,
  };
}

/**
 * A SecretMirror's author may read their own namespace only: what the agent says about other
 * namespaces (that an object of the target name exists there, who owns it, the cluster's policy)
 * is replaced by the state alone, and what it says about their own names no other mirror's
 * delivery (a copy planted there by another tenant's mirror). Cluster administrators read it all
 * in the MirrorDelivery.
 */
function redactForTenant(
  namespace: string,
  obs: ClusterObservation,
  r: { entry: ClusterSyncStatus; problems: MirrorProblem[] },
): void {
  const own = obs.delivery?.metadata.name ?? '';
  const where = detailsInDelivery(own, obs.agentNamespace, obs.name);
  const visible: VisibleNames = {
    delivery: (name) => name === own,
    mirror: (ref) => parseMirrorRef(ref)?.namespace === namespace,
  };
  for (const p of r.problems) {
    if (p.namespace !== namespace) p.message = `${p.state}: ${where}`;
    else if (p.message) p.message = redactNames(p.message, visible);
  }
  if (r.entry.message) r.entry.message = redactNames(r.entry.message, visible);
  const e = r.entry;
  if (obs.error === undefined && e.phase === 'Degraded') {
    const parts = [`${e.synced ?? 0}/${e.namespaces ?? 0} namespaces synced`];
    if (e.failed) parts.push(`${e.failed} failed`);
    if (e.conflicts) parts.push(`${e.conflicts} conflict${e.conflicts === 1 ? '' : 's'}`);
    if (e.denied) parts.push(`${e.denied} denied by cluster policy`);
    e.message = `${parts.join(', ')}; ${where}`;
  } else if (
    obs.error === undefined &&
    e.phase === 'Error' &&
    obs.delivery?.status?.phase === 'Error'
  ) {
    e.message = `the agent refused the delivery; ${where}`;
  }
}

/** What a SecretMirror in `namespace` asks beyond the hub's tenancy rules. */
function tenantErrors(
  namespace: string,
  spec: AnyMirror['spec'],
  selected: readonly ClusterObservation[],
  input: PlanInput,
): string[] {
  const errors: string[] = [];
  if (spec.conflictPolicy === 'Adopt') {
    errors.push(
      'conflictPolicy Adopt is for ClusterSecretMirrors only: a SecretMirror never takes over an object it does not own',
    );
  }
  const remote = selected.filter((c) => !c.local).map((c) => c.name);
  const granted = (input.tenancy?.remoteNamespaces ?? []).some((m) => m.ok && m.matches(namespace));
  if (remote.length > 0 && !granted) {
    errors.push(
      `SecretMirrors in namespace ${namespace} may deliver only to the hub's own cluster, not to ${remote.join(', ')}: ` +
        "use a ClusterSecretMirror, or ask the hub's administrators to add the namespace to tenancy.remoteNamespaces",
    );
  }
  return errors;
}

/** Where a cluster keeps this mirror's delivery: its agent namespace. */
function placeOf(obs: ClusterObservation): { cluster: string; namespace: string } {
  return { cluster: obs.name, namespace: obs.agentNamespace };
}

function holdsSomething(obs: ClusterObservation): boolean {
  return (
    (obs.delivery !== undefined && !obs.delivery.metadata.deletionTimestamp) ||
    obs.payload !== undefined
  );
}

/**
 * A remote cluster's entry in status.clusters, and its problems: its owner's report, counted
 * only when it describes this mirror's current generation and content (the same keyed hash is
 * computed by every replica); else Pending, naming the owner.
 */
function remoteStatus(
  obs: ClusterObservation,
  remote: RemoteObservation,
  generation: number | undefined,
  contentHash: string | undefined,
): { entry: ClusterSyncStatus; problems: MirrorProblem[] } {
  const r = remote.report;
  const current =
    r !== undefined &&
    (generation === undefined || r.generation === generation) &&
    r.contentHash === contentHash;
  if (!current) {
    const by = remote.owner ?? '(none yet)';
    return {
      entry: {
        name: obs.name,
        phase: 'Pending',
        namespaces: r?.namespaces ?? 0,
        synced: 0,
        failed: 0,
        conflicts: 0,
        ...(r?.lastSyncTime ? { lastSyncTime: r.lastSyncTime } : {}),
        message: `delivered by hub replica ${by}; waiting for its report`,
      },
      problems: [],
    };
  }
  const entry: ClusterSyncStatus = {
    name: obs.name,
    phase: r.phase ?? 'Pending',
    namespaces: r.namespaces ?? 0,
    synced: r.synced ?? 0,
    failed: r.failed ?? 0,
    conflicts: r.conflicts ?? 0,
    ...(r.denied ? { denied: r.denied } : {}),
    ...(r.lastSyncTime ? { lastSyncTime: r.lastSyncTime } : {}),
    ...(r.message ? { message: truncate(r.message, MAX_MESSAGE) } : {}),
  };
  const problems = (r.problems ?? []).map((p) => ({ ...p, cluster: obs.name }));
  return { entry, problems };
}

/**
 * One cluster's entry in status.clusters, and its problems. The agent's report counts only when
 * it describes the delivery we want there (observedHash = contentHash, observedGeneration =
 * generation); until then the cluster is Pending with nothing counted as synced.
 */
function clusterStatus(
  obs: ClusterObservation,
  desired: MirrorDeliverySpec | undefined,
  sourceFound: boolean,
  ownership: { owner: DeliveryOwner; uid: string } = { owner: 'ours', uid: '' },
): { entry: ClusterSyncStatus; problems: MirrorProblem[] } {
  const r = deliveryState(obs, desired, sourceFound, ownership);
  const entry: ClusterSyncStatus = {
    name: obs.name,
    phase: r.phase,
    ...r.counts,
    ...(r.lastSyncTime ? { lastSyncTime: r.lastSyncTime } : {}),
  };
  if (obs.error !== undefined) {
    // Unreachable wins: what we last saw there may no longer be true.
    entry.phase = 'Error';
    entry.message = truncate(`cluster unreachable: ${obs.error}`, MAX_MESSAGE);
  } else if (r.message) {
    entry.message = truncate(r.message, MAX_MESSAGE);
  }
  return { entry, problems: r.problems };
}

interface DeliveryState {
  phase: MirrorPhase;
  message?: string | undefined;
  counts: {
    namespaces: number;
    synced: number;
    failed: number;
    conflicts: number;
    denied?: number;
  };
  lastSyncTime?: string | undefined;
  problems: MirrorProblem[];
}

function deliveryState(
  obs: ClusterObservation,
  desired: MirrorDeliverySpec | undefined,
  sourceFound: boolean,
  { owner, uid }: { owner: DeliveryOwner; uid: string },
): DeliveryState {
  const zero = { namespaces: 0, synced: 0, failed: 0, conflicts: 0 };
  if (!obs.synced)
    return { phase: 'Pending', message: 'connecting to the cluster', counts: zero, problems: [] };
  const d = obs.delivery;
  if (d && !d.metadata.deletionTimestamp && owner !== 'ours') {
    // Nothing of this mirror's is there: the agent's report on it is not ours to count.
    const name = d.metadata.name ?? '';
    const where = `MirrorDelivery ${name} (namespace ${obs.agentNamespace})`;
    const claimed = d.spec.mirror;
    const message =
      owner === 'previous'
        ? `removing ${where}, left by a deleted mirror with this name (uid ${claimed.uid}); delivering once it is gone`
        : `conflict: ${where} belongs to another mirror (${mirrorRef(claimed)} uid ${claimed.uid || '(none)'} from cluster ${d.spec.originCluster || '(none)'}), ` +
          `not to this one (uid ${uid}). Nothing is written there; if it is stale, delete it ` +
          `(kubectl -n ${obs.agentNamespace} delete mirrordelivery ${name}) and this mirror delivers`;
    return {
      phase: owner === 'previous' ? 'Pending' : 'Error',
      message,
      counts: zero,
      problems: [],
    };
  }
  const report = d?.status;
  const lastSyncTime = report?.lastSyncTime;
  const reported = {
    namespaces: report?.counts?.namespaces ?? 0,
    synced: report?.counts?.synced ?? 0,
    failed: report?.counts?.failed ?? 0,
    conflicts: report?.counts?.conflicts ?? 0,
    ...(report?.counts?.denied ? { denied: report.counts.denied } : {}),
  };
  const stale = { ...zero, namespaces: reported.namespaces };
  if (obs.writeError) {
    return {
      phase: 'Error',
      message: `writing to the cluster failed: ${obs.writeError}`,
      counts: stale,
      lastSyncTime,
      problems: [],
    };
  }
  if (!d) {
    const message = sourceFound ? 'delivering' : 'nothing delivered';
    return { phase: 'Pending', message, counts: zero, problems: [] };
  }
  if (d.metadata.deletionTimestamp) {
    const message = 'waiting for the previous delivery to be removed';
    return { phase: 'Pending', message, counts: stale, problems: [] };
  }
  const current =
    report !== undefined &&
    report.observedHash === d.spec.contentHash &&
    (d.metadata.generation === undefined || report.observedGeneration === d.metadata.generation);
  const wanted = desired === undefined || equalIgnoringTime(d.spec, desired, []);
  if (!wanted || !current) {
    const message = !wanted
      ? 'updating the delivery'
      : report === undefined
        ? 'waiting for the agent (no report yet)'
        : 'waiting for the agent to apply the latest content';
    return { phase: 'Pending', message, counts: stale, lastSyncTime, problems: [] };
  }
  const problems: MirrorProblem[] = (report.namespaces ?? [])
    .filter((n) => n.state !== 'Synced')
    .map((n) => ({
      cluster: obs.name,
      namespace: n.name,
      state: n.state === 'Synced' ? 'Failed' : n.state,
      ...(n.message ? { message: truncate(n.message, MAX_SHORT_MESSAGE) } : {}),
    }));
  return {
    phase: worst(report.phase ?? 'Pending', phaseFromCounts(reported)),
    message: report.message,
    counts: reported,
    lastSyncTime,
    problems,
  };
}

const SEVERITY: Record<MirrorPhase, number> = { Active: 0, Pending: 1, Degraded: 2, Error: 3 };

function worst(a: MirrorPhase, b: MirrorPhase): MirrorPhase {
  return SEVERITY[a] >= SEVERITY[b] ? a : b;
}

function aggregatePhase(entries: readonly ClusterSyncStatus[]): MirrorPhase {
  if (entries.length === 0) return 'Active';
  const phases = entries.map((e) => e.phase ?? 'Pending');
  if (phases.every((p) => p === 'Error')) return 'Error';
  if (phases.some((p) => p === 'Error' || p === 'Degraded')) return 'Degraded';
  if (phases.some((p) => p === 'Pending')) return 'Pending';
  return 'Active';
}

/** Every count but `denied`, which is reported only when non-zero. */
type Counts = Required<Omit<MirrorCounts, 'denied'>> & Pick<MirrorCounts, 'denied'>;

function summary(
  phase: MirrorPhase,
  counts: Counts,
  entries: readonly ClusterSyncStatus[],
): string {
  if (entries.length === 0) return 'no cluster selected';
  const clusters = `${entries.length} cluster${entries.length === 1 ? '' : 's'}`;
  const parts = [`${counts.synced}/${counts.namespaces} namespaces synced in ${clusters}`];
  if (phase === 'Active') return parts[0]!;
  if (counts.failed > 0) parts.push(`${counts.failed} failed`);
  if (counts.conflicts > 0) {
    parts.push(`${counts.conflicts} conflict${counts.conflicts === 1 ? '' : 's'}`);
  }
  if (counts.denied) parts.push(`${counts.denied} denied by cluster policy`);
  for (const e of entries) {
    if (e.phase === 'Active') continue;
    if (e.message) parts.push(`${e.name}: ${e.message}`);
    else if (e.phase !== 'Degraded') parts.push(`${e.name}: ${e.phase ?? 'Pending'}`);
  }
  return parts.join('; ');
}

/**
 * Add the copies a cluster's agent took over from other tools (its delivery's status.takenOver,
 * reported while those copies are there) to `into`, per tool.
 */
function countTakenOver(
  into: Map<Predecessor, number>,
  delivery: MirrorDelivery | undefined,
): void {
  if (!delivery || delivery.metadata.deletionTimestamp) return;
  for (const t of delivery.status?.takenOver ?? []) into.set(t.from, (into.get(t.from) ?? 0) + 1);
}

/** status.takenOver: per tool, by name; undefined (no field) when none were taken over. */
function takenOverCounts(counts: ReadonlyMap<Predecessor, number>): TakenOverCount[] | undefined {
  if (counts.size === 0) return undefined;
  return [...counts]
    .map(([from, copies]) => ({ from, copies }))
    .sort((a, b) => compare(a.from, b.from));
}

function withEvents(prev: MirrorStatus, plan: MirrorPlan): MirrorPlan {
  return { ...plan, events: transitionEvents(prev, plan.status) };
}

function sum(
  entries: readonly ClusterSyncStatus[],
  field: 'namespaces' | 'synced' | 'failed' | 'conflicts' | 'denied',
): number {
  return entries.reduce((n, e) => n + (e[field] ?? 0), 0);
}

function latest(times: readonly (string | undefined)[]): string | undefined {
  let best: string | undefined;
  let bestMs = -Infinity;
  for (const t of times) {
    if (!t) continue;
    const ms = Date.parse(t);
    if (ms > bestMs) {
      best = t;
      bestMs = ms;
    }
  }
  return best;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---- reports (several hub replicas) -----------------------------------------------------------

/** How many problems a delivery report carries (the mirror's status keeps 50 over all clusters). */
const MAX_REPORTED_PROBLEMS = 10;

/**
 * What the replica owning `obs`'s cluster reports of a mirror there, for the leader that writes
 * the mirror's status: this replica's own entry for the cluster in `plan` (computed from the
 * agent's report exactly as with one replica), with the generation and content hash that prove
 * what it describes. Undefined: nothing to report (the cluster is not selected and holds
 * nothing of the mirror).
 */
export function deliveryReportOf(
  mirror: AnyMirror,
  plan: MirrorPlan,
  obs: ClusterObservation,
): DeliveryReport | undefined {
  const entry = plan.status.clusters?.find((e) => e.name === obs.name);
  const present = !obs.synced || holdsSomething(obs);
  if (!entry && !present) return undefined;
  const generation = mirror.metadata.generation;
  const problems = (plan.status.problems ?? [])
    .filter((p) => p.cluster === obs.name)
    .slice(0, MAX_REPORTED_PROBLEMS);
  return definedOnly<DeliveryReport>({
    delivery: plan.deliveryName,
    mirror: mirrorRef(identityOf(mirror)),
    ...(generation !== undefined ? { generation } : {}),
    ...(plan.contentHash !== undefined ? { contentHash: plan.contentHash } : {}),
    present,
    ...(entry
      ? {
          phase: entry.phase,
          namespaces: entry.namespaces,
          synced: entry.synced,
          failed: entry.failed,
          conflicts: entry.conflicts,
          ...(entry.denied ? { denied: entry.denied } : {}),
          ...(entry.lastSyncTime ? { lastSyncTime: entry.lastSyncTime } : {}),
          ...(entry.message ? { message: truncate(entry.message, MAX_SHORT_MESSAGE) } : {}),
        }
      : { phase: 'Pending' as const, message: 'no longer selected: removing the delivery' }),
    ...(problems.length > 0 ? { problems } : {}),
  });
}

/**
 * What the owner reports of a mirror being deleted (or gone) in `obs`'s cluster: whether
 * something of it is still there, and why it cannot be removed (Error) so the leader's grace
 * period applies. Undefined: nothing is left.
 */
export function cleanupReportOf(
  mirror: MirrorIdentity,
  deliveryName: string,
  obs: ClusterObservation,
): DeliveryReport | undefined {
  const present = !obs.synced || (holdsSomething(obs) && !namesAnotherMirror(obs.delivery, mirror));
  if (!present) return undefined;
  const failing =
    obs.error !== undefined
      ? `unreachable: ${obs.error}`
      : obs.writeError !== undefined
        ? `deleting failed: ${obs.writeError}`
        : !obs.synced
          ? 'not connected yet'
          : undefined;
  return {
    delivery: deliveryName,
    mirror: mirrorRef(mirror),
    present: true,
    phase: failing !== undefined && obs.error !== undefined ? 'Error' : 'Pending',
    message: truncate(failing ?? 'removing the delivery', MAX_SHORT_MESSAGE),
  };
}

function definedOnly<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out as T;
}
