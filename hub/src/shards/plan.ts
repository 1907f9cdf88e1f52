// Which followers this replica should claim or give up, from what it sees: the live replicas
// (their member Leases), the followers (MirrorClusters) and who holds each follower's Lease.
// Pure: shards.ts does the I/O and calls this again after every change.
//
// Each follower belongs to the live replica that ranks highest for it (rendezvous hashing): every
// replica computes the same owner from the same view, and a replica that joins or leaves moves
// only the followers it ranks highest for, about one in N. The follower's Lease says who holds
// it now: a replica claims a follower only when nobody holds it (released, never claimed, or
// its holder's member Lease expired), so two replicas never hold one follower at once even
// while their views of who is live differ.
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';

export interface ShardView {
  /** This replica's identity. */
  self: string;
  /** This replica may hold followers (false: not started, stopping, or fenced). */
  member: boolean;
  /** The live replicas' identities (this one included when `member`). */
  live: ReadonlySet<string>;
  /** The followers (MirrorCluster names). */
  followers: ReadonlySet<string>;
  /** Each follower Lease's holder, by follower ('' : released). */
  holders: ReadonlyMap<string, string>;
  /** The followers this replica holds. */
  owned: ReadonlySet<string>;
  /** Followers with a claim or release in flight: left alone until it ends. */
  busy: ReadonlySet<string>;
}

export type ShardAction =
  /** Take the follower's Lease (create it, or replace a released or expired one). */
  | { type: 'claim'; follower: string }
  /** Stop writing to the follower, then release its Lease (delete it: the follower is gone). */
  | { type: 'release'; follower: string; remove: boolean }
  /** The Lease names another holder (or is gone): stop writing at once; nothing to write. */
  | { type: 'drop'; follower: string }
  /** A Lease whose follower is gone and whose holder is not live: delete it. */
  | { type: 'forget'; follower: string };

/** The live replica that ranks highest for `follower` (undefined: none live). */
export function ownerFor(follower: string, live: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestRank = '';
  for (const replica of live) {
    const rank = crypto
      .createHash('sha256')
      .update(replica)
      .update('\0')
      .update(follower)
      .digest('hex');
    if (best === undefined || rank > bestRank || (rank === bestRank && replica < best)) {
      best = replica;
      bestRank = rank;
    }
  }
  return best;
}

export function planShards(v: ShardView): ShardAction[] {
  const actions: ShardAction[] = [];
  for (const follower of v.owned) {
    if (v.busy.has(follower)) continue;
    if (v.holders.get(follower) !== v.self) {
      actions.push({ type: 'drop', follower });
    } else if (!v.followers.has(follower)) {
      actions.push({ type: 'release', follower, remove: true });
    } else if (!v.member || ownerFor(follower, v.live) !== v.self) {
      actions.push({ type: 'release', follower, remove: false });
    }
  }
  if (!v.member) return actions;
  for (const follower of v.followers) {
    if (v.owned.has(follower) || v.busy.has(follower)) continue;
    if (ownerFor(follower, v.live) !== v.self) continue;
    const holder = v.holders.get(follower);
    if (holder === undefined || holder === '' || holder === v.self || !v.live.has(holder)) {
      actions.push({ type: 'claim', follower });
    }
  }
  for (const [follower, holder] of v.holders) {
    if (v.owned.has(follower) || v.busy.has(follower)) continue;
    if (holder === v.self) {
      // Named ours but not held (an earlier release or claim did not complete): settle it.
      const mine = v.member && v.followers.has(follower) && ownerFor(follower, v.live) === v.self;
      if (!mine) actions.push({ type: 'release', follower, remove: !v.followers.has(follower) });
    } else if (!v.followers.has(follower) && (holder === '' || !v.live.has(holder))) {
      actions.push({ type: 'forget', follower });
    }
  }
  return actions;
}
