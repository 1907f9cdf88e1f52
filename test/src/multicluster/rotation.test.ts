// Credentials and tokens rotating under a live hub: 15-minute sessions (the minimum) refreshed
// once they are a second old and tokens re-minted every half second, while source changes keep
// flowing to two followers. Not a single request may be refused (401) along the way.
import { setTimeout as sleep } from 'node:timers/promises';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventually } from '../support/eventually.js';
import { clusterSecretMirror, HUB, MultiCluster } from '../support/multicluster.js';

const ROUNDS = 30;
const ROUND_MS = 1_200;

describe('a hub whose follower sessions rotate every second', () => {
  let m: MultiCluster;

  beforeAll(async () => {
    m = await MultiCluster.start({
      hub: {
        aws: {
          roleDurationSeconds: 900,
          refreshBeforeMs: 900_000, // clamped to 899 s: a session older than a second is renewed
          tokenRefreshBeforeMs: 15 * 60_000 - 500,
        },
      },
    });
    await m.ensureNamespace(HUB, 'certs');
    for (const c of ['follower-a', 'follower-b']) {
      await m.ensureNamespace(c, 'team-a');
      await m.ensureNamespace(c, 'team-b');
    }
    await m.putSecret(HUB, 'certs', 'tls', { v: '0' });
    await m.applyMirror(
      clusterSecretMirror('tls', {
        source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
        destination: {
          clusters: { selector: { matchLabels: { env: 'prod' } } },
          namespaces: ['team-.+'],
        },
      }),
    );
  });

  afterAll(async () => {
    await m?.stop();
  });

  async function sessions(): Promise<Map<string, number>> {
    const res = await fetch(`${m.kit.aws!.motoEndpoint}/moto-api/data.json`);
    const data = (await res.json()) as { sts?: { AssumedRole?: Array<{ role_arn: string }> } };
    const out = new Map<string, number>();
    for (const s of data.sts?.AssumedRole ?? [])
      out.set(s.role_arn, (out.get(s.role_arn) ?? 0) + 1);
    return out;
  }

  it('keeps delivering across many rotations with zero 401s', async () => {
    await eventually(
      async () => {
        for (const c of ['follower-a', 'follower-b'])
          expect(await m.secretData(c, 'team-a', 'tls')).toEqual({ v: '0' });
      },
      { timeoutMs: 30_000 },
    );
    const before = await sessions();
    const expiries = new Set<string>();
    const started = Date.now();
    for (let i = 1; i <= ROUNDS; i++) {
      const roundStarted = Date.now();
      await m.putSecret(HUB, 'certs', 'tls', { v: String(i) });
      await eventually(
        async () => {
          for (const c of ['follower-a', 'follower-b']) {
            for (const ns of ['team-a', 'team-b'])
              expect(await m.secretData(c, ns, 'tls')).toEqual({ v: String(i) });
          }
        },
        { timeoutMs: 15_000 },
      );
      const mc = await m.getMirrorCluster('follower-a');
      if (mc?.status?.credentialsExpireAt) expiries.add(mc.status.credentialsExpireAt);
      // Each round lasts at least 1.2 s, so the sessions (renewed once a second old, when next
      // used) rotate between rounds however fast a change is delivered.
      await sleep(Math.max(500, ROUND_MS - (Date.now() - roundStarted)));
    }
    const elapsed = Date.now() - started;
    const after = await sessions();
    const assumed = Object.fromEntries(
      ['follower-a', 'follower-b'].map((c) => {
        const arn = m.access.get(c)!.roleArn;
        return [c, (after.get(arn) ?? 0) - (before.get(arn) ?? 0)];
      }),
    );
    const unauthorized = await m.hubMetric('mirrorhub_cluster_request_errors_total', {
      code: '401',
    });
    const allErrors = await m.hubMetric('mirrorhub_cluster_request_errors_total');
    const logged401 = m.logs.lines.filter((l) => /\b401\b|Unauthorized/.test(l));
    console.error(
      `rotation: ${ROUNDS} source changes delivered to 2 followers in ${elapsed} ms; AssumeRole calls ${JSON.stringify(assumed)}; ` +
        `${expiries.size} distinct credentialsExpireAt seen; request errors ${allErrors} (401: ${unauthorized}); 401 log lines ${logged401.length}`,
    );
    expect(unauthorized).toBe(0);
    expect(logged401).toEqual([]);
    for (const c of ['follower-a', 'follower-b'])
      expect(assumed[c]).toBeGreaterThanOrEqual(ROUNDS / 2);
    expect(expiries.size).toBeGreaterThan(5);
    for (const c of ['follower-a', 'follower-b']) {
      const mc = await m.getMirrorCluster(c);
      expect(mc?.status).toMatchObject({ reachable: true, authenticated: true });
      expect(mc?.status?.lastError).toBeUndefined();
    }
    await m.mirrorStatus('ClusterSecretMirror', 'tls', undefined, (s) =>
      expect(s.status?.phase).toBe('Active'),
    );
  });
});
