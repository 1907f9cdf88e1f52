// Deleting a mirror while a follower is down: the hub does not hang on it. After the (here
// shortened) grace period the finalizer goes, the mirror's Event and the MirrorCluster's status
// say what is left where, and when the follower returns its delivery, payload and copies are
// removed with no manual step.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventually } from '../support/eventually.js';
import { clusterSecretMirror, condition, HUB, MultiCluster } from '../support/multicluster.js';

const GRACE_MS = 8_000;

describe('deleting a mirror while a follower is unreachable', () => {
  let m: MultiCluster;
  let delivery: string;
  const KIND = 'ClusterSecretMirror';

  beforeAll(async () => {
    m = await MultiCluster.start({ hub: { cleanupGraceMs: GRACE_MS } });
    await m.ensureNamespace(HUB, 'certs');
    for (const c of ['follower-a', 'follower-b']) {
      await m.ensureNamespace(c, 'team-a');
      await m.ensureNamespace(c, 'team-b');
    }
    await m.putSecret(HUB, 'certs', 'tls', { v: '1' });
    await m.applyMirror(
      clusterSecretMirror('tls', {
        source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
        destination: {
          clusters: { selector: { matchLabels: { env: 'prod' } } },
          namespaces: ['team-.+'],
        },
        deletePolicy: 'Delete',
      }),
    );
    await m.mirrorStatus(
      KIND,
      'tls',
      undefined,
      (s) => expect(s.status?.synced).toBe('4/4'),
      30_000,
    );
    delivery = (await m.deliveries('follower-a'))[0]!.metadata.name!;
  });

  afterAll(async () => {
    await m?.stop();
  });

  it('releases the finalizer after the grace period and says which cluster still holds copies', async () => {
    await m.kit.cluster('follower-a').stopApiServer();
    await m.mirrorStatus(KIND, 'tls', undefined, (s) =>
      expect(s.status?.clusters?.find((c) => c.name === 'follower-a')?.message).toMatch(
        /^cluster unreachable/,
      ),
    );
    const deleted = Date.now();
    await m.deleteMirror(KIND, 'tls');

    // Meanwhile: the reachable follower is cleaned up, and the status says what is waited for
    // (once the hub has seen follower-b's delivery go, which is after its copies went; unless
    // the grace has already run out and the mirror is gone).
    await eventually(async () => {
      expect(await m.copies('follower-b', 'tls')).toEqual([]);
      const waiting = await m.getMirror(KIND, 'tls');
      if (waiting) {
        expect(waiting.metadata.deletionTimestamp).toBeDefined();
        expect(waiting.status?.message).toMatch(
          /^deleting: removing deliveries from follower-a; a cluster that cannot be cleaned up by .* is left for later/,
        );
      }
    });

    await eventually(async () => expect(await m.getMirror(KIND, 'tls')).toBeUndefined(), {
      timeoutMs: GRACE_MS + 15_000,
    });
    const tookMs = Date.now() - deleted;
    console.error(
      `delete-unreachable: mirror gone ${tookMs} ms after the delete (grace ${GRACE_MS} ms)`,
    );
    expect(tookMs).toBeGreaterThanOrEqual(GRACE_MS - 1_000);

    const events = await m.events('default', 'tls');
    const pending = events.find((e) => e.reason === 'CleanupPending');
    expect(pending?.type).toBe('Warning');
    expect(pending?.message).toMatch(
      new RegExp(
        `cleanup pending in cluster follower-a \\(unreachable: .*\\): MirrorDelivery ${delivery}, its payload Secret and the copies there are removed when the hub reaches it again`,
      ),
    );
    expect(pending?.message).not.toContain('follower-b');

    const mc = await m.mirrorClusterStatus('follower-a', (mc) =>
      expect(condition(mc, 'CleanupPending')?.status).toBe('True'),
    );
    expect(condition(mc, 'CleanupPending')?.message).toContain(
      `${delivery} (ClusterSecretMirror//tls)`,
    );
    expect(mc.status?.pendingCleanup).toEqual([{ delivery, mirror: 'ClusterSecretMirror//tls' }]);
    await m.eventWith('default', 'follower-a', 'CleanupPending');
    expect(await m.deliveries('follower-b')).toEqual([]);
    expect(await m.payloads('follower-b')).toEqual([]);
  });

  it('removes the leftover delivery, payload and copies when the follower returns', async () => {
    await m.kit.cluster('follower-a').startApiServer();
    const back = Date.now();
    await eventually(
      async () => {
        expect(await m.copies('follower-a', 'tls')).toEqual([]);
        expect(await m.deliveries('follower-a')).toEqual([]);
        expect(await m.payloads('follower-a')).toEqual([]);
      },
      { timeoutMs: 60_000 },
    );
    console.error(
      `delete-unreachable: follower-a cleaned up ${Date.now() - back} ms after its API server returned`,
    );
    const mc = await m.mirrorClusterStatus(
      'follower-a',
      (mc) => {
        expect(condition(mc, 'CleanupPending')).toBeUndefined();
        expect(mc.status?.pendingCleanup).toBeUndefined();
        expect(condition(mc, 'Ready')?.status).toBe('True');
      },
      30_000,
    );
    expect(mc.status?.lastError).toBeUndefined();
    await m.eventWith('default', 'follower-a', 'CleanupDone');
  });
});
