import { describe, expect, it } from 'vitest';
import type { MirrorDelivery } from '@mirrorhub/shared/api/types.gen';
import {
  ANNOTATION_FORGOTTEN_UP_TO,
  bounded,
  judgeSequence,
  memoryContent,
  mergeMemories,
  readMemory,
  withApplied,
  type Applied,
  type Remembered,
  type SequenceVerdict,
} from './sequence.js';

const NAME = 'sm-apps-tls-0123456789abcdef';

function delivery(sequence: number | undefined, uid = 'uid-1'): MirrorDelivery {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: { name: NAME, namespace: 'mirrorhub-system', uid },
    spec: {
      mirror: { kind: 'SecretMirror', namespace: 'apps', name: 'tls', uid: 'm1' },
      originCluster: 'hub',
      payloadSecretName: NAME,
      target: { kind: 'Secret', name: 'tls' },
      namespaces: ['team-.+'],
      contentHash: 'h',
      ...(sequence !== undefined ? { sequence } : {}),
    },
  };
}

const memory = (applied: Record<string, Applied> = {}, forgottenUpTo = 0): Remembered => ({
  applied: new Map(Object.entries(applied)),
  forgottenUpTo,
});
const at = (sequence: number, uid = 'uid-1'): Record<string, Applied> => ({
  [NAME]: { sequence, uid },
});
const SUFFIX = '; the hub writes its current delivery when it next reaches this cluster';
const refused = (why: string, newest: number): SequenceVerdict => ({
  ok: false,
  reason: `Replayed: nothing is written for this delivery: MirrorDelivery ${NAME} ${why}${SUFFIX}`,
  newest,
});

describe('judgeSequence', () => {
  it.each<[string, MirrorDelivery, Remembered, SequenceVerdict]>([
    // Accepted.
    [
      'a first delivery: remembered',
      delivery(500),
      memory(),
      { ok: true, remember: { sequence: 500, uid: 'uid-1' } },
    ],
    ['the one applied: nothing new to remember', delivery(500), memory(at(500)), { ok: true }],
    [
      'a newer spec of the same object',
      delivery(600),
      memory(at(500)),
      { ok: true, remember: { sequence: 600, uid: 'uid-1' } },
    ],
    [
      'a new object, newer (the hub re-created it)',
      delivery(600, 'uid-2'),
      memory(at(500)),
      { ok: true, remember: { sequence: 600, uid: 'uid-2' } },
    ],
    [
      'a name not remembered, above what was forgotten',
      delivery(600),
      memory({}, 500),
      { ok: true, remember: { sequence: 600, uid: 'uid-1' } },
    ],
    [
      'an older hub’s (no sequence), nothing newer seen',
      delivery(undefined),
      memory(),
      { ok: true },
    ],
    ['a sequence of 0 is none', delivery(0), memory(), { ok: true }],
    [
      'another name’s memory does not matter',
      delivery(100),
      memory({ other: { sequence: 900, uid: 'x' } }),
      { ok: true, remember: { sequence: 100, uid: 'uid-1' } },
    ],
    // Refused.
    [
      'an older spec written back over the object',
      delivery(400),
      memory(at(500)),
      refused(
        'carries sequence 400, older than 500, the newest this agent applied under this name',
        500,
      ),
    ],
    [
      'the deleted delivery’s last word, re-created (a Retain mirror brought back)',
      delivery(500, 'uid-2'),
      memory(at(500)),
      refused(
        'is a new object carrying sequence 500, not newer than 500, which this agent applied under this name to an earlier object (deleted since)',
        500,
      ),
    ],
    [
      'an older one, re-created',
      delivery(400, 'uid-2'),
      memory(at(500)),
      refused(
        'is a new object carrying sequence 400, not newer than 500, which this agent applied under this name to an earlier object (deleted since)',
        500,
      ),
    ],
    [
      'a forgotten name’s delivery',
      delivery(450),
      memory({}, 500),
      refused(
        'carries sequence 450, not newer than 500, the newest of the deliveries this agent no longer remembers by name',
        500,
      ),
    ],
    [
      'no sequence where one was applied (an older hub’s, or one from before the upgrade)',
      delivery(undefined),
      memory(at(500)),
      refused(
        'carries no sequence (written by a hub older than this agent), and this agent applied sequence 500 under this name',
        500,
      ),
    ],
    [
      'no sequence, with names forgotten',
      delivery(undefined),
      memory({}, 500),
      refused(
        'carries no sequence (written by a hub older than this agent), and this agent applied sequences up to 500 to deliveries it no longer remembers by name',
        500,
      ),
    ],
  ])('%s', (_name, d, m, verdict) => {
    expect(judgeSequence(d, m)).toEqual(verdict);
  });
});

describe('the memory', () => {
  it('withApplied keeps the higher sequence per name; mergeMemories loses nothing of either', () => {
    const a = memory({ x: { sequence: 5, uid: 'a' }, y: { sequence: 9, uid: 'a' } }, 3);
    const b = memory(
      { x: { sequence: 7, uid: 'b' }, y: { sequence: 8, uid: 'b' }, z: { sequence: 1, uid: 'b' } },
      4,
    );
    expect(withApplied(a, b.applied)).toEqual(
      memory(
        {
          x: { sequence: 7, uid: 'b' },
          y: { sequence: 9, uid: 'a' },
          z: { sequence: 1, uid: 'b' },
        },
        3,
      ),
    );
    expect(mergeMemories(a, b).forgottenUpTo).toBe(4);
  });

  it('bounded: tombstones beyond the limit go, the oldest first, and raise the bar for every unknown name', () => {
    const m = memory({
      live: { sequence: 1, uid: 'l' },
      gone1: { sequence: 10, uid: 'g' },
      gone2: { sequence: 30, uid: 'g' },
      gone3: { sequence: 20, uid: 'g' },
    });
    const live = (n: string) => n === 'live';
    expect(bounded(m, live, 3)).toEqual({ memory: m, forgotten: 0 });
    const { memory: kept, forgotten } = bounded(m, live, 1);
    expect(forgotten).toBe(2);
    // A live delivery is never forgotten, however old; the newest tombstone stays.
    expect([...kept.applied.keys()].sort()).toEqual(['gone2', 'live']);
    expect(kept.forgottenUpTo).toBe(20);
    // Neither forgotten delivery can come back.
    for (const [name, sequence] of [
      ['gone1', 10],
      ['gone3', 20],
    ] as const) {
      const d = delivery(sequence, 'uid-new');
      d.metadata.name = name;
      expect(judgeSequence(d, kept).ok).toBe(false);
    }
  });

  it('reads what it writes, and ignores entries that are not "<sequence> <uid>"', () => {
    const m = memory(
      { b: { sequence: 1764270000000, uid: 'u-b' }, a: { sequence: 7, uid: 'u-a' } },
      5,
    );
    const content = memoryContent(m);
    expect(content).toEqual({
      data: { a: '7 u-a', b: '1764270000000 u-b' },
      annotations: { [ANNOTATION_FORGOTTEN_UP_TO]: '5' },
    });
    expect(
      readMemory({ data: content.data, metadata: { annotations: content.annotations } }),
    ).toEqual({
      memory: m,
      invalid: [],
    });
    expect(memoryContent(memory()).annotations).toEqual({});
    expect(
      readMemory({
        data: {
          ok: '3 u',
          neg: '-1 u',
          zero: '0 u',
          word: 'x u',
          nouid: '3',
          extra: '3 u v',
          huge: '99999999999999999 u',
        },
        metadata: { annotations: { [ANNOTATION_FORGOTTEN_UP_TO]: 'garbage' } },
      }),
    ).toEqual({
      memory: memory({ ok: { sequence: 3, uid: 'u' } }),
      invalid: ['neg', 'zero', 'word', 'nouid', 'extra', 'huge'],
    });
    expect(readMemory(undefined)).toEqual({ memory: memory(), invalid: [] });
  });
});
