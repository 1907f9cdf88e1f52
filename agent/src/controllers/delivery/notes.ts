// What the delivery controller remembers about each delivery between reconciles: the namespaces
// where the last write failed or found someone else's object (the plan reports them until a
// write there works), how many namespaces the follower's policy refused, and the delivery's
// compiled namespace matcher.

import type { MirrorDelivery } from '@mirrorhub/shared/api/types.gen';
import type { NamespaceMatcher } from '@mirrorhub/shared/mirror/namespaces';
import { compileDeliveryMatcher, type ConflictInfo, type Outcome } from './plan.js';

export class DeliveryNote {
  /** The delivery these notes are about: a delivery re-created under the same name starts clean. */
  uid?: string | undefined;
  /** namespace -> message of the last failed write there. */
  readonly failures = new Map<string, string>();
  /** namespace -> the conflict a create found there, and when. */
  readonly conflicts = new Map<string, { info: ConflictInfo; at: number }>();
  /** Selected namespaces the follower's policy refused in the last plan (PolicyDenied). */
  denied = 0;
  matcher?: { uid: string | undefined; generation: number | undefined; matcher: NamespaceMatcher };

  /**
   * Conflicts are rechecked every `ttlMs` (a resync): we do not watch objects we do not own.
   * Returns the conflicts still known, as the plan takes them.
   */
  conflictsAt(now: number, ttlMs: number): Map<string, ConflictInfo> {
    for (const [ns, c] of this.conflicts) if (now - c.at >= ttlMs) this.conflicts.delete(ns);
    return new Map([...this.conflicts].map(([ns, c]) => [ns, c.info]));
  }

  /**
   * Fold this round's outcomes into what we remember per namespace; `planned` are the plan's
   * entries (the namespaces it reported on).
   */
  remember(
    outcomes: readonly Outcome[],
    planned: readonly { name: string; state?: string | undefined }[],
    now: number,
  ): void {
    this.denied = planned.filter((e) => e.state === 'PolicyDenied').length;
    for (const o of outcomes) {
      switch (o.result) {
        case 'ok':
        case 'unchanged':
          this.failures.delete(o.namespace);
          this.conflicts.delete(o.namespace);
          break;
        case 'failed':
          this.failures.set(o.namespace, o.message);
          break;
        case 'conflict':
          this.failures.delete(o.namespace);
          this.conflicts.set(o.namespace, {
            info: { message: o.message, adoptable: o.adoptable },
            at: now,
          });
          break;
        case 'retry':
          break;
      }
    }
    // Forget namespaces the plan no longer reports on (unselected, gone, copy now present).
    const relevant = new Set([...planned.map((e) => e.name), ...outcomes.map((o) => o.namespace)]);
    for (const ns of this.failures.keys()) if (!relevant.has(ns)) this.failures.delete(ns);
    for (const ns of this.conflicts.keys()) if (!relevant.has(ns)) this.conflicts.delete(ns);
  }
}

/** The notes on every delivery, by name. */
export class DeliveryNotes {
  private readonly byName = new Map<string, DeliveryNote>();

  /** The notes on `d`; fresh when `d` is a new delivery under a name we had notes for. */
  of(d: MirrorDelivery): DeliveryNote {
    const name = d.metadata.name ?? '';
    let note = this.named(name);
    if (note.uid !== undefined && note.uid !== d.metadata.uid) {
      this.byName.delete(name);
      note = this.named(name);
    }
    note.uid = d.metadata.uid;
    return note;
  }

  /** The delivery is gone. */
  forget(name: string): void {
    this.byName.delete(name);
  }

  /** Compiled matcher, cached per delivery uid and generation. */
  matcherFor(d: MirrorDelivery): NamespaceMatcher {
    const note = this.named(d.metadata.name ?? '');
    const { uid, generation } = d.metadata;
    if (!note.matcher || note.matcher.uid !== uid || note.matcher.generation !== generation) {
      note.matcher = { uid, generation, matcher: compileDeliveryMatcher(d) };
    }
    return note.matcher.matcher;
  }

  /** Namespaces with a conflict, with a failed write, and refused by policy (gauges). */
  totals(): { conflicts: number; failures: number; denied: number } {
    let conflicts = 0;
    let failures = 0;
    let denied = 0;
    for (const n of this.byName.values()) {
      conflicts += n.conflicts.size;
      failures += n.failures.size;
      denied += n.denied;
    }
    return { conflicts, failures, denied };
  }

  private named(name: string): DeliveryNote {
    let note = this.byName.get(name);
    if (!note) this.byName.set(name, (note = new DeliveryNote()));
    return note;
  }
}
