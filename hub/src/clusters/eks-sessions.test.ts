// Sessions kept across leadership terms are handed back only for the same cluster and EKS spec;
// the rest are destroyed once a term has taken what it needs.
import { describe, expect, it } from 'vitest';
import type { EksAccess } from '@mirrorhub/shared/api/index';
import type { EksClusterAccess, StsClients } from './aws/index.js';
import { EksSessions } from './eks-sessions.js';

const spec: EksAccess = {
  name: 'prod-eu',
  region: 'eu-west-1',
  roleArn: 'arn:aws:iam::222222222222:role/mirrorhub-follower',
  externalId: 'x1',
};

function session() {
  const s = { destroyed: 0, destroy: () => void s.destroyed++ };
  return s as typeof s & EksClusterAccess;
}

describe('EKS sessions across terms', () => {
  it('hand a kept session back once, for the same cluster and spec', () => {
    const sessions = new EksSessions();
    const s = session();
    sessions.keep('prod', spec, s);
    expect(sessions.take('prod', { ...spec })).toBe(s);
    expect(sessions.take('prod', spec)).toBeUndefined();
    expect(s.destroyed).toBe(0);
  });

  it('do not hand a session to another cluster, role or ExternalId; those are dropped', () => {
    const sessions = new EksSessions();
    const s = session();
    sessions.keep('prod', spec, s);
    expect(sessions.take('staging', spec)).toBeUndefined();
    expect(sessions.take('prod', { ...spec, externalId: 'x2' })).toBeUndefined();
    expect(
      sessions.take('prod', { ...spec, roleArn: spec.roleArn.replace('2222', '3333') }),
    ).toBeUndefined();
    expect(sessions.dropUnclaimed()).toBe(1);
    expect(s.destroyed).toBe(1);
    expect(sessions.size).toBe(0);
  });

  it('destroy a session replaced by a newer one for the same cluster', () => {
    const sessions = new EksSessions();
    const old = session();
    const newer = session();
    sessions.keep('prod', spec, old);
    sessions.keep('prod', spec, newer);
    expect(old.destroyed).toBe(1);
    expect(sessions.take('prod', spec)).toBe(newer);
  });

  it('make the STS clients once for every term, and destroy them with the kept sessions on close', () => {
    const sessions = new EksSessions();
    const sts = { destroyed: 0, destroy: () => void sts.destroyed++ } as unknown as StsClients & {
      destroyed: number;
    };
    let made = 0;
    const make = () => (made++, sts);
    expect(sessions.stsClients(make)).toBe(sts);
    expect(sessions.stsClients(make)).toBe(sts);
    expect(made).toBe(1);
    const s = session();
    sessions.keep('prod', spec, s);
    sessions.close();
    expect([s.destroyed, sts.destroyed]).toEqual([1, 1]);
  });
});
