// The two ideas a mirror is made of: one source and its destinations. Each kind of source
// (a Kubernetes Secret or ConfigMap, a Vault KV secret, Vault dynamic credentials) and each kind
// of destination (the namespaces of the selected clusters, a Vault path) lives in its own folder
// under sources/ or destinations/ and implements one of the two interfaces below; registry.ts
// lists them. The mirror reconcile (controller.ts) knows nothing else of them: it gathers the
// source, asks every destination for its plan, applies the plans, and writes the status once.
import type { AnyMirror, MirrorStatus, ResolvedSource } from '@mirrorhub/shared/api/index';
import type { MirrorIdentity } from '@mirrorhub/shared/mirror/index';
import type { PlannedEvent, SourceObservation } from './status.js';

/** One mirror being reconciled, as every kind sees it. */
export interface MirrorContext {
  /** The mirror's work-queue key (names.ts mirrorKey). */
  key: string;
  id: MirrorIdentity;
  mirror: AnyMirror;
  now: Date;
}

/** The mirror is gone (`mirror` undefined) or being deleted. */
export interface CleanupContext {
  key: string;
  id: MirrorIdentity;
  mirror: AnyMirror | undefined;
  /** The mirror holds the hub's finalizer: something may have been written for it. */
  held: boolean;
  /** When its deletion began (its deletionTimestamp). */
  deletingSince: Date | undefined;
  /**
   * How long a deletion waits for what cannot be removed yet before it gives up on it (with a
   * Warning Event), so that nothing unreachable holds a mirror forever.
   */
  graceMs: number;
  now: Date;
}

/** What a kind adds to the mirror's status, beside the status of the destination it names. */
export interface Report {
  /** Status fields this kind keeps (a lease; the record of a Vault secret still to remove). */
  status?: Partial<MirrorStatus> | undefined;
  /** Appended to status.message: why something could not be released or removed yet. */
  note?: string | undefined;
  events?: readonly PlannedEvent[] | undefined;
  /** A transient failure: look again after the work queue's backoff, within the poll period. */
  retry?: boolean | undefined;
}

export type SourceReading =
  /** Not observed yet: its watch or its first poll enqueues the mirror again. */
  | { state: 'unknown' }
  /**
   * The mirror's source is of this kind. `refusal`: why the mirror may not read it (the mirror is
   * in Error; nothing is read).
   */
  | { state: 'observed'; observation: SourceObservation; refusal?: string; report?: Report }
  /** Not of this kind: followed no more, and what was held for it is released. */
  | { state: 'other'; report?: Report };

export interface SourceKind {
  /** Follow the mirror's source if it is of this kind (else stop); what it holds now. */
  observe(ctx: MirrorContext, source: ResolvedSource | undefined): Promise<SourceReading>;
  /** The mirror is gone or being deleted: stop following its source, release what is held. */
  release(ctx: CleanupContext): Promise<Report>;
  /** How often caches take a fresh look (the shortest poll period of the mirrors). */
  setResyncPeriod?(ms: number): void;
  start?(): Promise<void>;
  stop(): Promise<void>;
}

/** The source as gathered for the destinations. */
export interface GatheredSource {
  observation: SourceObservation;
  /** Why the mirror may not read the source its spec names (it is then invalid). */
  refusal?: string | undefined;
}

/** A destination's plan: final when returned, applied by the same destination. */
export interface DestinationPlan {
  /** Applying it writes something: the mirror takes the hub's finalizer first. */
  writes: boolean;
}

/** What applying a plan did. */
export interface DestinationReport extends Report {
  /**
   * The mirror's whole status, from the destination its spec names (exactly one does); the
   * others only add to it (Report).
   */
  mirrorStatus?: MirrorStatus | undefined;
  /** Only a spec change can help: no periodic look. */
  invalid?: boolean | undefined;
}

/** What removing a gone mirror's writes did. */
export interface CleanupReport extends Report {
  /** The mirror's status while it is being deleted (from the destination of its deliveries). */
  mirrorStatus?: MirrorStatus | undefined;
  /** Still removing: look again after this long at the latest. */
  waitMs?: number | undefined;
}

export interface DestinationKind<P extends DestinationPlan = DestinationPlan> {
  /**
   * The writes this destination needs for the mirror, from what it holds now: the destination
   * the spec names plans the copies; every other one plans the removal of what an earlier spec
   * wrote there.
   */
  plan(ctx: MirrorContext, source: GatheredSource): Promise<P>;
  /** Makes the writes of `plan`; what to report. */
  apply(ctx: MirrorContext, plan: P): Promise<DestinationReport>;
  /** The mirror is gone or being deleted: remove what this destination holds for it. */
  cleanUp(ctx: CleanupContext): Promise<CleanupReport>;
  setResyncPeriod?(ms: number): void;
  start?(): Promise<void>;
  stop(): Promise<void>;
}
