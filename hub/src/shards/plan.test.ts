import { describe, expect, it } from 'vitest';
import { ownerFor, planShards, type ShardView } from './plan.js';

const followers = Array.from({ length: 600 }, (_, i) => `follower-${String(i).padStart(3, '0')}`);

function view(over: Partial<ShardView> = {}): ShardView {
  return {
    self: 'a',
    member: true,
    live: new Set(['a', 'b']),
    followers: new Set(['f1']),
    holders: new Map(),
    owned: new Set(),
    busy: new Set(),
    ...over,
  };
}

/** A follower `a` ranks highest for among {a, b}, and one `b` does. */
const mineOfTwo = followers.find((f) => ownerFor(f, ['a', 'b']) === 'a')!;
const theirsOfTwo = followers.find((f) => ownerFor(f, ['a', 'b']) === 'b')!;

describe('rendezvous ownership', () => {
  it('gives every follower to one live replica, the same whoever computes it', () => {
    const owners = followers.map((f) => ownerFor(f, ['a', 'b', 'c']));
    expect(owners.every((o) => o === 'a' || o === 'b' || o === 'c')).toBe(true);
    expect(followers.map((f) => ownerFor(f, ['c', 'a', 'b']))).toEqual(owners);
    // Roughly even: each of three replicas gets between a quarter and a half.
    for (const r of ['a', 'b', 'c']) {
      const n = owners.filter((o) => o === r).length;
      expect(n).toBeGreaterThan(followers.length / 4);
      expect(n).toBeLessThan(followers.length / 2);
    }
  });

  it('moves only what the joining or leaving replica ranks highest for', () => {
    const before = followers.map((f) => ownerFor(f, ['a', 'b', 'c']));
    const joined = followers.map((f) => ownerFor(f, ['a', 'b', 'c', 'd']));
    const moved = followers.filter((_, i) => before[i] !== joined[i]);
    expect(moved.every((f) => ownerFor(f, ['a', 'b', 'c', 'd']) === 'd')).toBe(true);
    expect(moved.length).toBeLessThan(followers.length / 3);
    const left = followers.map((f) => ownerFor(f, ['a', 'c']));
    followers.forEach((f, i) => {
      if (before[i] !== 'b') expect(left[i]).toBe(before[i]);
    });
  });

  it('has no owner without live replicas', () => {
    expect(ownerFor('f1', [])).toBeUndefined();
  });
});

describe('planShards', () => {
  it('claims its followers when nobody holds them, and only those', () => {
    const actions = planShards(view({ followers: new Set([mineOfTwo, theirsOfTwo]) }));
    expect(actions).toEqual([{ type: 'claim', follower: mineOfTwo }]);
  });

  it('waits while a live replica holds one of its followers, and takes it once released', () => {
    const followersSet = new Set([mineOfTwo]);
    expect(
      planShards(view({ followers: followersSet, holders: new Map([[mineOfTwo, 'b']]) })),
    ).toEqual([]);
    expect(
      planShards(view({ followers: followersSet, holders: new Map([[mineOfTwo, '']]) })),
    ).toEqual([{ type: 'claim', follower: mineOfTwo }]);
  });

  it('takes a follower over from a replica no longer live', () => {
    const f = followers.find((x) => ownerFor(x, ['a']) === 'a')!;
    expect(
      planShards(
        view({ live: new Set(['a']), followers: new Set([f]), holders: new Map([[f, 'b']]) }),
      ),
    ).toEqual([{ type: 'claim', follower: f }]);
  });

  it('gives up what another replica now ranks highest for, to let it claim it', () => {
    expect(
      planShards(
        view({
          followers: new Set([theirsOfTwo]),
          holders: new Map([[theirsOfTwo, 'a']]),
          owned: new Set([theirsOfTwo]),
        }),
      ),
    ).toEqual([{ type: 'release', follower: theirsOfTwo, remove: false }]);
  });

  it('gives everything up when it is no longer a member (stopping or fenced), claiming nothing', () => {
    expect(
      planShards(
        view({
          member: false,
          live: new Set(['b']),
          followers: new Set([mineOfTwo, 'other']),
          holders: new Map([[mineOfTwo, 'a']]),
          owned: new Set([mineOfTwo]),
        }),
      ),
    ).toEqual([{ type: 'release', follower: mineOfTwo, remove: false }]);
  });

  it('stops writing at once to a follower whose Lease names someone else', () => {
    expect(
      planShards(
        view({
          followers: new Set([mineOfTwo]),
          holders: new Map([[mineOfTwo, 'b']]),
          owned: new Set([mineOfTwo]),
        }),
      ),
    ).toEqual([{ type: 'drop', follower: mineOfTwo }]);
  });

  it('removes the Lease of a follower that is gone', () => {
    expect(
      planShards(
        view({ followers: new Set(), holders: new Map([['gone', 'a']]), owned: new Set(['gone']) }),
      ),
    ).toEqual([{ type: 'release', follower: 'gone', remove: true }]);
    expect(
      planShards(view({ followers: new Set(), holders: new Map([['gone', 'dead']]) })),
    ).toEqual([{ type: 'forget', follower: 'gone' }]);
    // A live holder removes its own.
    expect(planShards(view({ followers: new Set(), holders: new Map([['gone', 'b']]) }))).toEqual(
      [],
    );
  });

  it('settles a Lease still naming it after an unfinished release', () => {
    expect(
      planShards(
        view({ followers: new Set([theirsOfTwo]), holders: new Map([[theirsOfTwo, 'a']]) }),
      ),
    ).toEqual([{ type: 'release', follower: theirsOfTwo, remove: false }]);
    expect(
      planShards(view({ followers: new Set([mineOfTwo]), holders: new Map([[mineOfTwo, 'a']]) })),
    ).toEqual([{ type: 'claim', follower: mineOfTwo }]);
  });

  it('leaves a follower alone while a claim or release of it runs', () => {
    expect(
      planShards(view({ followers: new Set([mineOfTwo]), busy: new Set([mineOfTwo]) })),
    ).toEqual([]);
  });
});
