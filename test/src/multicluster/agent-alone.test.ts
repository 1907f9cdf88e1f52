// Fan-out happens in the follower's agent: a namespace created there gets its copy from the
// agent's own watch, with the hub stopped.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventually } from '../support/eventually.js';
import { clusterSecretMirror, HUB, MultiCluster } from '../support/multicluster.js';

describe('a namespace created in a follower', () => {
  let m: MultiCluster;

  beforeAll(async () => {
    m = await MultiCluster.start();
    await m.ensureNamespace(HUB, 'certs');
    await m.ensureNamespace('follower-a', 'team-a');
    await m.putSecret(HUB, 'certs', 'wildcard-tls', { 'tls.crt': 'cert-1' });
    await m.applyMirror(
      clusterSecretMirror('wildcard-tls', {
        source: { kind: 'Secret', name: 'wildcard-tls', namespace: 'certs' },
        destination: { clusters: { names: ['follower-a'] }, namespaces: ['team-.+'] },
      }),
    );
    await eventually(
      async () => expect(await m.copies('follower-a', 'wildcard-tls')).toEqual(['team-a']),
      { timeoutMs: 30_000 },
    );
  });

  afterAll(async () => {
    await m?.stop();
  });

  it('gets its copy from the agent alone, with the hub stopped', async () => {
    await m.stopHub();
    const started = Date.now();
    await m.ensureNamespace('follower-a', 'team-new');
    await eventually(async () =>
      expect(await m.secretData('follower-a', 'team-new', 'wildcard-tls')).toEqual({
        'tls.crt': 'cert-1',
      }),
    );
    const ms = Date.now() - started;
    console.error(`agent-alone: copy in a new follower namespace after ${ms} ms, hub stopped`);
    expect(ms).toBeLessThan(5_000);
    expect(m.hub).toBeUndefined();
  });
});
