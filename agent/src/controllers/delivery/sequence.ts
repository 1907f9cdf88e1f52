// Replayed deliveries, refused: a MirrorDelivery and its payload are signed by the hub, but a
// signature says nothing about time. Anyone who may write in the agent namespace (the hub's
// group in a follower, a namespace admin) could keep a signed delivery and its payload and write
// them back later, while the hub cannot reach the cluster: the copies would go back to the old
// content, and a deleted Retain mirror's delivery would bring its copies back for good.
//
// So each delivery carries spec.sequence, signed with the rest of the spec and higher on every
// change the hub writes (hub/src/mirrors/destinations/clusters/delivery.ts, deliverySequence),
// and the agent remembers, per delivery name, the newest sequence it applied and the object (uid)
// that carried it. It refuses:
// - a sequence older than the newest it applied under the name;
// - on a new object under the name (the one it applied was deleted, or deleted and replayed),
//   a sequence not newer than that: so a deleted delivery's last word cannot come back.
// The memory stays after a delivery is deleted (a tombstone); only the tombstones beyond
// MAX_GONE, the oldest, are forgotten, and their highest sequence becomes the bar for every name
// the agent does not remember. Deliveries of older hubs carry no sequence (0): accepted only
// while nothing newer was applied under the name and nothing was forgotten.
//
// Pure: the verdict, the memory's upkeep and its form in the ConfigMap (memory.ts keeps it).

import type { MirrorDelivery } from '@mirrorhub/shared/api/types.gen';

/** The newest sequence applied under a name, and the delivery object (uid) that carried it. */
export interface Applied {
  sequence: number;
  uid: string;
}

/** What the agent remembers of the deliveries it applied. */
export interface Remembered {
  /** Delivery name -> the newest it applied under that name. */
  applied: ReadonlyMap<string, Applied>;
  /**
   * The highest sequence among the names forgotten to keep the memory bounded (0: none): a name
   * not in `applied` must carry a higher one.
   */
  forgottenUpTo: number;
}

export const EMPTY_MEMORY: Remembered = { applied: new Map(), forgottenUpTo: 0 };

/**
 * Tombstones kept (names remembered whose delivery is gone): the oldest beyond this many are
 * forgotten into `forgottenUpTo`. With the live deliveries they make the ConfigMap (1 MiB at
 * most), at about 80 bytes a name.
 */
export const MAX_GONE = 1000;

export type SequenceVerdict =
  /** Act on it; `remember`: write this into the memory first. */
  | { ok: true; remember?: Applied | undefined }
  /** A replay: nothing is written; `newest` goes into status.newestSequence for the hub. */
  | { ok: false; reason: string; newest: number };

const HUB_REWRITES = 'the hub writes its current delivery when it next reaches this cluster';

/** Whether the agent may act on `delivery`, given what it remembers. */
export function judgeSequence(delivery: MirrorDelivery, memory: Remembered): SequenceVerdict {
  const name = delivery.metadata.name ?? '';
  const uid = delivery.metadata.uid ?? '';
  const sequence = delivery.spec.sequence ?? 0;
  const seen = memory.applied.get(name);
  const refuse = (why: string, newest: number): SequenceVerdict => ({
    ok: false,
    reason: `Replayed: nothing is written for this delivery: MirrorDelivery ${name} ${why}; ${HUB_REWRITES}`,
    newest,
  });

  if (sequence === 0) {
    // An older hub's delivery: nothing to compare, so only while nothing newer was seen.
    if (seen) {
      return refuse(
        `carries no sequence (written by a hub older than this agent), and this agent applied sequence ${seen.sequence} under this name`,
        seen.sequence,
      );
    }
    if (memory.forgottenUpTo > 0) {
      return refuse(
        `carries no sequence (written by a hub older than this agent), and this agent applied sequences up to ${memory.forgottenUpTo} to deliveries it no longer remembers by name`,
        memory.forgottenUpTo,
      );
    }
    return { ok: true };
  }
  if (seen && seen.uid === uid) {
    // The object it applied: its spec may only move forward.
    if (sequence < seen.sequence) {
      return refuse(
        `carries sequence ${sequence}, older than ${seen.sequence}, the newest this agent applied under this name`,
        seen.sequence,
      );
    }
  } else if (seen) {
    // A new object under the name: newer than everything applied under it, or a replay.
    if (sequence <= seen.sequence) {
      return refuse(
        `is a new object carrying sequence ${sequence}, not newer than ${seen.sequence}, which this agent applied under this name to an earlier object (deleted since)`,
        seen.sequence,
      );
    }
  } else if (sequence <= memory.forgottenUpTo) {
    return refuse(
      `carries sequence ${sequence}, not newer than ${memory.forgottenUpTo}, the newest of the deliveries this agent no longer remembers by name`,
      memory.forgottenUpTo,
    );
  }
  const known = seen && seen.uid === uid && seen.sequence === sequence;
  return known ? { ok: true } : { ok: true, remember: { sequence, uid } };
}

/** `memory` with `entries` remembered: per name, the higher sequence (the later, on a tie). */
export function withApplied(memory: Remembered, entries: ReadonlyMap<string, Applied>): Remembered {
  const applied = new Map(memory.applied);
  for (const [name, a] of entries) {
    const had = applied.get(name);
    if (!had || a.sequence >= had.sequence) applied.set(name, a);
  }
  return { applied, forgottenUpTo: memory.forgottenUpTo };
}

/** Two memories (ours and one another writer left) as one: nothing either remembers is lost. */
export function mergeMemories(a: Remembered, b: Remembered): Remembered {
  const merged = withApplied(a, b.applied);
  return { ...merged, forgottenUpTo: Math.max(a.forgottenUpTo, b.forgottenUpTo) };
}

/**
 * `memory` bounded: of the names whose delivery is gone (`live` says which are not), the `max`
 * with the newest sequences are kept; the others are forgotten, and `forgottenUpTo` rises to the
 * highest sequence among them, so none of them can come back either.
 */
export function bounded(
  memory: Remembered,
  live: (name: string) => boolean,
  max = MAX_GONE,
): { memory: Remembered; forgotten: number } {
  const gone = [...memory.applied].filter(([name]) => !live(name));
  if (gone.length <= max) return { memory, forgotten: 0 };
  gone.sort(([, a], [, b]) => b.sequence - a.sequence);
  const drop = gone.slice(max);
  const applied = new Map(memory.applied);
  let forgottenUpTo = memory.forgottenUpTo;
  for (const [name, a] of drop) {
    applied.delete(name);
    forgottenUpTo = Math.max(forgottenUpTo, a.sequence);
  }
  return { memory: { applied, forgottenUpTo }, forgotten: drop.length };
}

// ---- the ConfigMap ----------------------------------------------------------------------------

/** Annotation on the ConfigMap: Remembered.forgottenUpTo. */
export const ANNOTATION_FORGOTTEN_UP_TO = 'mirrorhub.io/forgotten-up-to';

const SEQUENCE = /^[1-9][0-9]{0,15}$/;

function parseSequence(text: string | undefined): number | undefined {
  if (text === undefined || !SEQUENCE.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * The memory a ConfigMap holds: data `<delivery name>: "<sequence> <uid>"`, and the annotation
 * ANNOTATION_FORGOTTEN_UP_TO. `invalid` names entries that are not of that form (ignored).
 */
export function readMemory(
  cm:
    | {
        data?: Record<string, string> | undefined;
        metadata?: { annotations?: Record<string, string> | undefined } | undefined;
      }
    | undefined,
): { memory: Remembered; invalid: string[] } {
  const applied = new Map<string, Applied>();
  const invalid: string[] = [];
  for (const [name, value] of Object.entries(cm?.data ?? {})) {
    const [seq, uid, ...rest] = value.split(' ');
    const sequence = parseSequence(seq);
    if (sequence === undefined || !uid || rest.length > 0) invalid.push(name);
    else applied.set(name, { sequence, uid });
  }
  const forgottenUpTo = parseSequence(cm?.metadata?.annotations?.[ANNOTATION_FORGOTTEN_UP_TO]) ?? 0;
  return { memory: { applied, forgottenUpTo }, invalid };
}

/** The ConfigMap's data and annotations for `memory` (names sorted, so a diff reads well). */
export function memoryContent(memory: Remembered): {
  data: Record<string, string>;
  annotations: Record<string, string>;
} {
  const data: Record<string, string> = {};
  for (const name of [...memory.applied.keys()].sort()) {
    const a = memory.applied.get(name)!;
    data[name] = `${a.sequence} ${a.uid}`;
  }
  return {
    data,
    annotations:
      memory.forgottenUpTo > 0
        ? { [ANNOTATION_FORGOTTEN_UP_TO]: String(memory.forgottenUpTo) }
        : {},
  };
}
