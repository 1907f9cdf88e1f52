// In a follower too, what other tools put on a copy stays: a reloader's annotation and Argo CD's
// tracking label survive a source update on the hub, a drift correction by the follower's agent
// and a template change, while mirrorhub's own fields come back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { mergePatchOptions } from '@mirrorhub/shared/testing/index';

import { eventually } from '../support/eventually.js';
import { clusterSecretMirror, FOLLOWERS, HUB, MultiCluster } from '../support/multicluster.js';

const FOLLOWER = FOLLOWERS[0]!.name;
const OTHERS = {
  labels: { 'argocd.argoproj.io/instance': 'shop' },
  annotations: { 'reloader.stakater.com/match': 'true' },
};

const mirror = (labels: Record<string, string>) =>
  clusterSecretMirror('db', {
    source: { kind: 'Secret', name: 'db', namespace: 'src' },
    destination: { clusters: { names: [FOLLOWER] }, namespaces: ['app'] },
    template: { labels },
  });

describe("others' metadata on a copy in a follower", () => {
  let m: MultiCluster;

  const copy = async () => {
    const s = await m.on(FOLLOWER).readSecret('app', 'db');
    expect(s).toBeDefined();
    return s!;
  };
  const othersKept = async () => {
    const s = await copy();
    expect(s.metadata?.labels).toMatchObject(OTHERS.labels);
    expect(s.metadata?.annotations).toMatchObject(OTHERS.annotations);
    return s;
  };

  beforeAll(async () => {
    m = await MultiCluster.start({ followers: [FOLLOWERS[0]!] });
    await m.ensureNamespace(HUB, 'src');
    await m.ensureNamespace(FOLLOWER, 'app');
    await m.putSecret(HUB, 'src', 'db', { password: 'v1' });
    await m.applyMirror(mirror({ env: 'prod', tier: 'db' }));
    await eventually(
      async () => expect(await m.secretData(FOLLOWER, 'app', 'db')).toEqual({ password: 'v1' }),
      { timeoutMs: 30_000 },
    );
    await m
      .on(FOLLOWER)
      .core()
      .patchNamespacedSecret(
        { name: 'db', namespace: 'app', body: { metadata: OTHERS }, fieldManager: 'reloader' },
        mergePatchOptions(),
      );
  });

  afterAll(async () => {
    await m?.stop();
  });

  it('survives a source update on the hub', async () => {
    await m.putSecret(HUB, 'src', 'db', { password: 'v2' });
    await eventually(
      async () => expect(await m.secretData(FOLLOWER, 'app', 'db')).toEqual({ password: 'v2' }),
      { timeoutMs: 30_000 },
    );
    await othersKept();
  });

  it("survives the agent's drift correction of data and of mirrorhub's own label", async () => {
    const s = await copy();
    await m
      .on(FOLLOWER)
      .core()
      .replaceNamespacedSecret({
        name: 'db',
        namespace: 'app',
        fieldManager: 'kubectl-edit',
        body: {
          ...s,
          metadata: { ...s.metadata, labels: { ...s.metadata?.labels, env: 'hacked' } },
          data: { password: Buffer.from('wrong').toString('base64') },
        },
      });
    await eventually(
      async () => {
        expect(await m.secretData(FOLLOWER, 'app', 'db')).toEqual({ password: 'v2' });
        expect((await othersKept()).metadata?.labels?.['env']).toBe('prod');
      },
      { timeoutMs: 10_000 },
    );
  });

  it('survives a template change; the label the template drops is gone', async () => {
    await m.applyMirror(mirror({ env: 'staging' }));
    await eventually(
      async () => {
        const s = await othersKept();
        expect(s.metadata?.labels?.['env']).toBe('staging');
        expect(s.metadata?.labels?.['tier']).toBeUndefined();
      },
      { timeoutMs: 30_000 },
    );
  });
});
