import type { MirrorDelivery } from '@mirrorhub/shared';
import {
  deliveryName,
  mirrorRef,
  type MirrorIdentity,
  type PayloadSecret,
} from '@mirrorhub/shared/mirror/index';
import { describe, expect, it } from 'vitest';
import {
  FOREIGN_RECHECK_MAX_MS,
  FOREIGN_RECHECK_MS,
  deliveryPatch,
  deliveryRefusal,
  deliverySequence,
  fingerprintOf,
  foreignLook,
  foreignRecheckMs,
  heldOf,
  needsLookUp,
  observation,
  payloadRefusal,
  planWrites,
  type Held,
  type NameState,
} from './delivery.js';

const ORIGIN = 'hub';
const NS = 'mirrorhub-system';
const MIRROR: MirrorIdentity = { kind: 'SecretMirror', namespace: 'src', name: 'db' };
const NAME = deliveryName(MIRROR, ORIGIN);
const NOW = 1_000_000;

function delivery(
  o: {
    uid?: string;
    name?: string;
    mirror?: MirrorIdentity;
    origin?: string;
    hash?: string;
    deleting?: boolean;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    generation?: number;
    status?: MirrorDelivery['status'];
  } = {},
): MirrorDelivery {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: {
      name: o.name ?? NAME,
      namespace: NS,
      labels: o.labels ?? { 'mirrorhub.io/origin-cluster': ORIGIN },
      annotations: o.annotations ?? { 'mirrorhub.io/mirror': mirrorRef(o.mirror ?? MIRROR) },
      ...(o.generation !== undefined ? { generation: o.generation } : {}),
      ...(o.deleting ? { deletionTimestamp: new Date('2026-01-01T00:00:00Z') } : {}),
    },
    spec: {
      mirror: { ...(o.mirror ?? MIRROR), uid: o.uid ?? 'uid-1' },
      originCluster: o.origin ?? ORIGIN,
      payloadSecretName: o.name ?? NAME,
      target: { name: 'db' },
      contentHash: o.hash ?? 'h1',
    } as MirrorDelivery['spec'],
    ...(o.status ? { status: o.status } : {}),
  };
}

function payload(hash = 'h1', signature = 'sig-1'): PayloadSecret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: NAME,
      namespace: NS,
      labels: { 'mirrorhub.io/payload': 'true', 'mirrorhub.io/origin-cluster': ORIGIN },
      annotations: { 'mirrorhub.io/content-hash': hash, 'mirrorhub.io/signature': signature },
    },
    type: 'Opaque',
    data: { key: 'dmFsdWU=' },
  } as PayloadSecret;
}

function state(o: Partial<NameState> = {}): NameState {
  return {
    cached: {},
    written: {},
    deleted: { delivery: false, payload: false },
    ...o,
  };
}

const marks = { contentHash: 'h1', signature: 'sig-1' };

describe('what plans see (heldOf, observation)', () => {
  const cachedD = delivery({ hash: 'cached' });
  const writtenD = delivery({ hash: 'written' });
  const foreignD = delivery({ uid: 'someone-else' });

  it.each<[string, NameState, Held]>([
    ['nothing', state(), {}],
    [
      'the cache',
      state({ cached: { delivery: cachedD, payload: marks } }),
      { delivery: cachedD, payload: marks },
    ],
    [
      'our write over the cache, until the watch shows it',
      state({
        cached: { delivery: cachedD, payload: { contentHash: 'old' } },
        written: { delivery: writtenD, payload: marks },
      }),
      { delivery: writtenD, payload: marks },
    ],
    [
      'nothing of what we deleted, though an agent finalizer keeps it',
      state({
        cached: { delivery: cachedD, payload: marks },
        deleted: { delivery: true, payload: true },
      }),
      {},
    ],
    [
      'a delivery read and found not ours, while its recheck period lasts',
      state({
        foreign: {
          delivery: foreignD,
          since: NOW - FOREIGN_RECHECK_MS + 1,
          ttlMs: FOREIGN_RECHECK_MS,
        },
      }),
      { delivery: foreignD },
    ],
    [
      'not after it',
      state({
        foreign: { delivery: foreignD, since: NOW - FOREIGN_RECHECK_MS, ttlMs: FOREIGN_RECHECK_MS },
      }),
      {},
    ],
    [
      'the watch over a foreign one read before',
      state({
        cached: { delivery: cachedD },
        foreign: { delivery: foreignD, since: NOW, ttlMs: FOREIGN_RECHECK_MS },
      }),
      { delivery: cachedD },
    ],
  ])('%s', (_, s, want) => {
    expect(heldOf(s, NOW)).toEqual(want);
  });

  it('reports the write error', () => {
    const current = state({ cached: { delivery: cachedD }, writeError: 'boom' });
    expect(observation(current, NOW)).toEqual({
      delivery: cachedD,
      writeError: 'boom',
    });
  });
});

describe('planWrites: apply', () => {
  const want = delivery();

  it('reads first a delivery the caches do not show', () => {
    expect(needsLookUp({ op: 'apply', delivery: want }, {})).toBe(true);
    expect(needsLookUp({ op: 'apply', delivery: want }, { delivery: want })).toBe(false);
    expect(needsLookUp({ op: 'apply', payload: payload() }, {})).toBe(false);
    expect(needsLookUp({ op: 'delete' }, {})).toBe(false);
  });

  it('creates payload first, then the delivery', () => {
    const p = payload();
    expect(planWrites(NAME, { op: 'apply', payload: p, delivery: want }, {})).toEqual({
      writes: [
        { kind: 'Secret', verb: 'create', name: NAME, payload: p },
        { kind: 'MirrorDelivery', verb: 'create', name: NAME, delivery: want },
      ],
    });
  });

  it.each<[string, Held, string[]]>([
    ['up to date: nothing', { delivery: want, payload: marks }, []],
    [
      'another content hash: the payload',
      { delivery: want, payload: { ...marks, contentHash: 'h0' } },
      ['Secret update'],
    ],
    [
      'another signature: the payload',
      { delivery: want, payload: { ...marks, signature: 'sig-0' } },
      ['Secret update'],
    ],
    ['no payload: created', { delivery: want }, ['Secret create']],
    [
      'another spec: the delivery',
      { delivery: delivery({ hash: 'h0' }), payload: marks },
      ['MirrorDelivery patch'],
    ],
    [
      'our annotation missing: the delivery',
      { delivery: delivery({ annotations: {} }), payload: marks },
      ['MirrorDelivery patch'],
    ],
  ])('%s', (_, held, writes) => {
    const plan = planWrites(NAME, { op: 'apply', payload: payload(), delivery: want }, held);
    expect(plan.writes.map((w) => `${w.kind} ${w.verb}`)).toEqual(writes);
    expect(plan.notOurs).toBeUndefined();
  });

  it('sends a new payload and its delivery at once only when both exist', () => {
    const p = payload();
    const changed = {
      delivery: delivery({ hash: 'h0' }),
      payload: { ...marks, contentHash: 'h0' },
    };
    const both = planWrites(NAME, { op: 'apply', payload: p, delivery: want }, changed);
    expect(both.writes.map((w) => `${w.kind} ${w.verb}`)).toEqual([
      'Secret update',
      'MirrorDelivery patch',
    ]);
    expect(both.together).toBe(true);
    // A first delivery waits for its payload; one write alone is just that write.
    for (const held of [{}, { payload: marks }, { delivery: delivery({ hash: 'h0' }) }]) {
      expect(
        planWrites(NAME, { op: 'apply', payload: p, delivery: want }, held).together,
      ).toBeUndefined();
    }
  });

  it('keeps labels others added and patches only ours in', () => {
    const seen = delivery({ hash: 'h0', labels: { team: 'a' } });
    expect(deliveryPatch(seen, want)).toEqual([
      { op: 'add', path: '/spec', value: want.spec },
      { op: 'add', path: '/metadata/labels/mirrorhub.io~1origin-cluster', value: ORIGIN },
    ]);
    expect(deliveryPatch({ ...seen, metadata: { name: NAME } }, want)).toEqual([
      { op: 'add', path: '/spec', value: want.spec },
      { op: 'add', path: '/metadata/labels', value: want.metadata.labels },
      { op: 'add', path: '/metadata/annotations', value: want.metadata.annotations },
    ]);
  });

  it.each<[string, MirrorDelivery]>([
    ['another uid (a mirror of the same name, or one planted)', delivery({ uid: 'uid-0' })],
    ['another mirror', delivery({ mirror: { kind: 'SecretMirror', namespace: 'x', name: 'y' } })],
    ['another origin cluster', delivery({ origin: 'other-hub' })],
    ['one being deleted', delivery({ deleting: true })],
  ])('never over %s: nothing, not even the payload', (_, seen) => {
    expect(
      planWrites(NAME, { op: 'apply', payload: payload(), delivery: want }, { delivery: seen }),
    ).toEqual({ writes: [], notOurs: seen });
  });

  it('writes only the payload when only the payload is asked for', () => {
    const p = payload();
    expect(planWrites(NAME, { op: 'apply', payload: p }, { delivery: want })).toEqual({
      writes: [{ kind: 'Secret', verb: 'create', name: NAME, payload: p }],
    });
  });
});

describe('planWrites: delete', () => {
  const d = delivery();
  const order = (h: Held) =>
    planWrites(NAME, { op: 'delete' }, h).writes.map((w) => `${w.kind} ${w.verb} ${w.name}`);

  it('deletes the delivery, then the payload', () => {
    expect(order({ delivery: d, payload: marks })).toEqual([
      `MirrorDelivery delete ${NAME}`,
      `Secret delete ${NAME}`,
    ]);
  });

  it('deletes only what is there, and not a delivery already being deleted', () => {
    expect(order({ delivery: delivery({ deleting: true }), payload: marks })).toEqual([
      `Secret delete ${NAME}`,
    ]);
    expect(order({})).toEqual([]);
  });
});

describe('refusals: never over another’s object', () => {
  const want = delivery();

  it('a delivery of the same mirror uid and origin may be written over', () => {
    expect(deliveryRefusal(delivery({ hash: 'h0' }), want, NS)).toBeUndefined();
  });

  it('says whose a delivery is that belongs to another mirror', () => {
    const msg = deliveryRefusal(
      delivery({
        uid: 'uid-x',
        mirror: { kind: 'SecretMirror', namespace: 'elsewhere', name: 'other' },
      }),
      want,
      NS,
    );
    expect(msg).toBe(
      `MirrorDelivery ${NAME} (namespace ${NS}) belongs to another mirror (SecretMirror/elsewhere/other uid uid-x), ` +
        'not to this one (uid uid-1): nothing is written there; if it is stale, delete it',
    );
  });

  it('waits for a delivery being deleted', () => {
    expect(deliveryRefusal(delivery({ deleting: true }), want, NS)).toBe(
      `MirrorDelivery ${NAME} (namespace ${NS}) is being deleted; writing once it is gone`,
    );
  });

  it('replaces a Secret only when it is labelled as this hub’s payload', () => {
    const labels = { 'mirrorhub.io/payload': 'true', 'mirrorhub.io/origin-cluster': ORIGIN };
    expect(payloadRefusal({ metadata: { labels } }, NAME, NS, ORIGIN)).toBeUndefined();
    for (const other of <Record<string, string>[]>[
      {},
      { ...labels, 'mirrorhub.io/origin-cluster': 'other-hub' },
      { 'mirrorhub.io/origin-cluster': ORIGIN },
    ]) {
      expect(payloadRefusal({ metadata: { labels: other } }, NAME, NS, ORIGIN)).toBe(
        `Secret ${NAME} (namespace ${NS}) exists and is not a payload of this hub ` +
          `(labels mirrorhub.io/payload=true, mirrorhub.io/origin-cluster=${ORIGIN}): ` +
          'nothing is written there; if it is stale, delete it',
      );
    }
  });

  it('keeps the recheck when a plan sees the remembered foreign delivery again', () => {
    // Two reconciles of one mirror racing at its start both plan against the foreign delivery;
    // only the first looked. The second must not push the recheck out (it did: to 60 s, 120 s).
    const first = foreignLook(undefined, NOW);
    expect(first).toEqual({ since: NOW, ttlMs: FOREIGN_RECHECK_MS });
    expect(foreignLook(first, NOW + 1)).toBe(first);
    expect(foreignLook(first, NOW + FOREIGN_RECHECK_MS - 1)).toBe(first);
    // Past the window the plan read it again (it was still there): that look doubles the wait.
    expect(foreignLook(first, NOW + FOREIGN_RECHECK_MS)).toEqual({
      since: NOW + FOREIGN_RECHECK_MS,
      ttlMs: 2 * FOREIGN_RECHECK_MS,
    });
  });

  it('looks again at a foreign delivery after 30 s, doubling to 5 min', () => {
    const seq = [foreignRecheckMs(undefined)];
    for (let i = 0; i < 5; i++) seq.push(foreignRecheckMs(seq[seq.length - 1]));
    expect(seq).toEqual([
      30_000,
      60_000,
      120_000,
      240_000,
      FOREIGN_RECHECK_MAX_MS,
      FOREIGN_RECHECK_MAX_MS,
    ]);
  });
});

describe('fingerprintOf', () => {
  it('tells requests apart by content hash and metadata, never by data', () => {
    const a = fingerprintOf({ op: 'apply', payload: payload('h1'), delivery: delivery() });
    expect(fingerprintOf({ op: 'apply', payload: payload('h1'), delivery: delivery() })).toBe(a);
    expect(fingerprintOf({ op: 'apply', payload: payload('h2'), delivery: delivery() })).not.toBe(
      a,
    );
    expect(fingerprintOf({ op: 'apply', payload: payload('h1') })).not.toBe(a);
    expect(a).not.toContain('dmFsdWU=');
    expect(fingerprintOf({ op: 'delete' })).toBe('delete');
  });
});

describe('deliverySequence', () => {
  /** The observed delivery with `sequence` (absent: an older hub's) and the agent's report. */
  const seen = (sequence: number | undefined, o: { hash?: string; newest?: number } = {}) => {
    const d = delivery({
      hash: o.hash ?? 'h1',
      ...(o.newest !== undefined
        ? { status: { phase: 'Error' as const, newestSequence: o.newest } }
        : {}),
    });
    if (sequence !== undefined) d.spec.sequence = sequence;
    return d;
  };
  const want = (hash = 'h1') => delivery({ hash }).spec;

  it.each<[string, MirrorDelivery | undefined, MirrorDelivery['spec'], number, number]>([
    // No write when nothing changed: the same spec signs to the same annotation.
    ['unchanged: the observed sequence', seen(500), want(), NOW, 500],
    ['unchanged, the clock far ahead: still the observed one', seen(500), want(), NOW * 9, 500],
    [
      'the desired spec carries another sequence: ignored',
      seen(500),
      { ...want(), sequence: 7 },
      NOW,
      500,
    ],
    // A change: higher than before, from the clock.
    ['changed: the clock', seen(500, { hash: 'h0' }), want(), NOW, NOW],
    // The clock behind what the hub wrote (two changes in one millisecond, a clock set back).
    [
      'changed, the clock behind: one above the observed',
      seen(NOW + 5, { hash: 'h0' }),
      want(),
      NOW,
      NOW + 6,
    ],
    // A hub that remembers nothing of the name: nothing observed (a restart, a deleted delivery).
    ['nothing observed: the clock', undefined, want(), NOW, NOW],
    ['nothing observed, a fractional clock: whole milliseconds', undefined, want(), NOW + 0.5, NOW],
    // An older hub's delivery (no sequence): gets one, even with the spec otherwise unchanged.
    ['an older hub’s delivery, unchanged: the clock', seen(undefined), want(), NOW, NOW],
    ['a sequence of 0 is none', seen(0), want(), NOW, NOW],
    // The agent refused what is there as older than what it applied (a replay): above that.
    [
      'refused as a replay, spec what the hub wants: above the agent’s newest',
      seen(500, { newest: 900 }),
      want(),
      100,
      901,
    ],
    [
      'refused as a replay of the same sequence (a new object): above it',
      seen(500, { newest: 500 }),
      want(),
      100,
      501,
    ],
    ['refused, the clock ahead: the clock', seen(500, { newest: 900 }), want(), NOW, NOW],
    // A report older than the hub's last write (newest below what is there): not a refusal of it.
    [
      'an old report below the observed sequence: unchanged',
      seen(950, { newest: 900 }),
      want(),
      NOW,
      950,
    ],
  ])('%s', (_name, observed, spec, now, expected) => {
    expect(deliverySequence(observed, spec, now)).toBe(expected);
  });

  it('increases over a hub’s successive writes, restarts included; the agent’s report heals a clock set back', () => {
    let observed: MirrorDelivery | undefined;
    const write = (now: number, hash: string) => {
      const sequence = deliverySequence(observed, want(hash), now);
      observed = { ...delivery({ hash }), spec: { ...want(hash), sequence } };
      return sequence;
    };
    expect(write(1000, 'h1')).toBe(1000);
    expect(write(1000, 'h2')).toBe(1001); // two changes in one millisecond
    observed = undefined; // a restart, and the delivery deleted meanwhile: no memory at all
    expect(write(1500, 'h2')).toBe(1500);
    expect(write(2000, 'h2')).toBe(1500); // nothing changed: nothing written
    // No memory and a clock set back: a lower sequence, which the agent refuses as older than
    // the 1500 it applied, and says so; the next plan goes above it.
    observed = undefined;
    expect(write(900, 'h2')).toBe(900);
    observed = { ...observed!, status: { phase: 'Error', newestSequence: 1500 } };
    expect(write(900, 'h2')).toBe(1501);
  });
});
