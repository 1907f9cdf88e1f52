// Misconfigured MirrorClusters: a role that does not exist, an ExternalId the role's trust policy
// does not accept (enforced by the kit's STS gate, as by AWS), an EKS cluster name that does not
// exist. Each shows which call failed and what to check; the other clusters are not affected.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventually } from '../support/eventually.js';
import {
  clusterSecretMirror,
  condition,
  HUB,
  MultiCluster,
  SYSTEM_NS,
} from '../support/multicluster.js';

describe('MirrorClusters the hub cannot get into', () => {
  let m: MultiCluster;
  const KIND = 'ClusterSecretMirror';

  beforeAll(async () => {
    m = await MultiCluster.start({ registerFollowers: false });
    for (const c of ['follower-a', 'follower-b', 'follower-c'])
      await m.ensureNamespace(c, 'team-a');
    await m.ensureNamespace(HUB, 'certs');
    await m.putSecret(HUB, 'certs', 'tls', { v: '1' });
    const a = m.access.get('follower-a')!;
    const prod = { env: 'prod' };
    await m.registerEks('follower-a', prod);
    await m.registerEks('follower-b', prod);
    await m.applyMirrorCluster(
      'follower-c',
      m.eksSpec('follower-c', { externalId: 'not-the-agreed-one' }),
      prod,
    );
    await m.applyMirrorCluster(
      'wrong-role',
      m.eksSpec('follower-a', { roleArn: `arn:aws:iam::${a.accountId}:role/does-not-exist` }),
      prod,
    );
    await m.applyMirrorCluster('ghost', m.eksSpec('follower-a', { name: 'follower-z' }), prod);
    await m.applyMirror(
      clusterSecretMirror('tls', {
        source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
        destination: { clusters: { selector: { matchLabels: prod } }, namespaces: ['team-a'] },
      }),
    );
  });

  afterAll(async () => {
    await m?.stop();
  });

  it('still delivers to the clusters that are fine, at once', async () => {
    await eventually(
      async () => {
        for (const c of ['follower-a', 'follower-b'])
          expect(await m.secretData(c, 'team-a', 'tls')).toEqual({ v: '1' });
      },
      { timeoutMs: 15_000 },
    );
    for (const c of ['follower-a', 'follower-b']) {
      await m.mirrorClusterStatus(c, (mc) => expect(condition(mc, 'Ready')?.status).toBe('True'));
    }
  });

  it.each([
    [
      'wrong-role',
      /^AssumeRole arn:aws:iam::222222222222:role\/does-not-exist failed: AccessDenied: .*; check the role exists, its trust policy allows the hub role and the externalId matches/,
    ],
    [
      'follower-c',
      /^AssumeRole arn:aws:iam::444444444444:role\/mirrorhub-follower failed: AccessDenied: .*; check the role exists, its trust policy allows the hub role and the externalId matches/,
    ],
    [
      'ghost',
      /^DescribeCluster follower-z in eu-west-1 failed: ResourceNotFoundException: .*; check eks\.name and eks\.region \(the cluster must be in account 222222222222/,
    ],
  ])('%s shows which call failed and what to check', async (name, error) => {
    const mc = await m.mirrorClusterStatus(name, (mc) => {
      expect(condition(mc, 'Ready')).toMatchObject({ status: 'False', reason: 'AccessFailed' });
      expect(mc.status?.lastError).toMatch(error);
    });
    console.error(`access-errors: ${name}: ${mc.status?.lastError}`);
    expect(mc.status).toMatchObject({ type: 'EKS', reachable: false, authenticated: false });
    expect(condition(mc, 'Authenticated')).toMatchObject({
      status: 'False',
      reason: 'AccessFailed',
    });
    expect((await m.eventWith('default', name, 'AccessFailed')).message).toMatch(error);
    const events = await m.events('default', name);
    expect(
      events.every(
        (e) => !/SecretAccessKey|k8s-aws-v1\.|X-Amz-Signature=[0-9a-f]/.test(e.message ?? ''),
      ),
    ).toBe(true);
  });

  it("shows them in the mirror's status per cluster, and the good clusters stay Active", async () => {
    const s = await m.mirrorStatus(KIND, 'tls', undefined, (s) => {
      const byName = Object.fromEntries((s.status?.clusters ?? []).map((c) => [c.name, c]));
      expect(byName['follower-a']?.phase).toBe('Active');
      expect(byName['follower-b']?.phase).toBe('Active');
      for (const bad of ['follower-c', 'ghost', 'wrong-role']) {
        expect(byName[bad], bad).toMatchObject({
          phase: 'Error',
          message: expect.stringMatching(/^cluster unreachable: (AssumeRole|DescribeCluster) /),
        });
      }
    });
    expect(s.status?.phase).toBe('Degraded');
    expect(s.status?.counts).toMatchObject({ clusters: 5, synced: 2 });
  });

  it('recovers once the spec is fixed, with no restart', async () => {
    await m.applyMirrorCluster('follower-c', m.eksSpec('follower-c'), { env: 'prod' });
    await eventually(
      async () => expect(await m.secretData('follower-c', 'team-a', 'tls')).toEqual({ v: '1' }),
      { timeoutMs: 30_000 },
    );
    const mc = await m.mirrorClusterStatus('follower-c', (mc) =>
      expect(condition(mc, 'Ready')?.status).toBe('True'),
    );
    expect(mc.status?.lastError).toBeUndefined();
    expect(mc.status?.observedGeneration).toBe(2);
    expect(await m.deliveries('follower-c')).toHaveLength(1);
    expect((await m.payloads('follower-c')).length).toBe(1);
    expect((await m.core('follower-c').readNamespace({ name: SYSTEM_NS })).metadata?.name).toBe(
      SYSTEM_NS,
    );
  });
});
