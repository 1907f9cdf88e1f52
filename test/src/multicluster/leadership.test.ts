// A hub that loses its leader Lease and wins it back keeps its AWS sessions: the new term goes
// on delivering to the EKS follower without assuming the role or describing the cluster again
// (counted by the STS gate and the EKS emulator). Under load a hub can miss a renewal deadline;
// before this, every term assumed every role and described every cluster anew.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventually } from '../support/eventually.js';
import { clusterSecretMirror, HUB, MultiCluster, SYSTEM_NS } from '../support/multicluster.js';

const LEASE = 'mirrorhub-hub';

describe('a hub whose leadership ends and begins again', () => {
  let m: MultiCluster;

  beforeAll(async () => {
    m = await MultiCluster.start({
      followers: [{ name: 'follower-a', labels: { env: 'prod' } }],
      hub: {
        leaderElection: {
          leaseName: LEASE,
          leaseDurationMs: 3_000,
          renewDeadlineMs: 2_000,
          retryPeriodMs: 500,
        },
      },
    });
    await m.ensureNamespace(HUB, 'certs');
    await m.ensureNamespace('follower-a', 'team-a');
    await m.putSecret(HUB, 'certs', 'tls', { v: '0' });
    await m.applyMirror(
      clusterSecretMirror('tls', {
        source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
        destination: { clusters: { names: ['follower-a'] }, namespaces: ['team-a'] },
      }),
    );
  });

  afterAll(async () => {
    await m?.stop();
  });

  const terms = () => m.logs.lines.filter((l) => l.includes('"msg":"became leader"')).length;

  it('delivers in the new term without a new AssumeRole or DescribeCluster', async () => {
    await eventually(
      async () => expect(await m.secretData('follower-a', 'team-a', 'tls')).toEqual({ v: '0' }),
      { timeoutMs: 30_000 },
    );
    const roleArn = m.access.get('follower-a')!.roleArn;
    const before = m.kit.aws!.calls();
    expect(before.assumeRole[roleArn]).toBe(1);
    expect(before.describeCluster['follower-a']).toBe(1);
    expect(terms()).toBe(1);

    // Another identity takes the Lease: the hub cannot renew, steps down, and takes the Lease
    // again once the other holder's lease duration has passed without a renewal.
    const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z'); // a MicroTime
    await m.kubectl(
      'patch',
      'lease',
      LEASE,
      '-n',
      SYSTEM_NS,
      '--type=merge',
      '-p',
      JSON.stringify({
        spec: { holderIdentity: 'another-hub', leaseDurationSeconds: 2, renewTime: now },
      }),
    );
    await eventually(() => expect(terms()).toBe(2), { timeoutMs: 30_000 });
    expect(m.logs.lines.some((l) => l.includes('"msg":"stopped leading"'))).toBe(true);

    await m.putSecret(HUB, 'certs', 'tls', { v: '1' });
    await eventually(
      async () => expect(await m.secretData('follower-a', 'team-a', 'tls')).toEqual({ v: '1' }),
      { timeoutMs: 30_000 },
    );
    const after = m.kit.aws!.calls();
    expect(after.assumeRole[roleArn]).toBe(1);
    expect(after.describeCluster['follower-a']).toBe(1);
  });
});
