import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { DEFAULT_SECRET_TYPES } from '@mirrorhub/agent/policy';

describe('shaping the copy', () => {
  let e: Engine;

  beforeAll(async () => {
    // A custom Secret type is a copy the cluster's owner must allow (the default policy lists the
    // built-in types only).
    e = await Engine.start({
      agent: { policy: { secretTypes: [...DEFAULT_SECRET_TYPES, 'example.com/robot'] } },
    });
    for (const ns of ['src', 'app']) await e.ensureNamespace(ns);
    await e.putSecret(
      'src',
      'registry',
      { username: 'robot', password: 'hunter2', internal: 'do-not-copy' },
      {
        metadata: {
          labels: { team: 'platform', 'drop-me': 'x' },
          annotations: {
            note: 'keep',
            'cert-manager.io/issuer-name': 'le',
            'kubectl.kubernetes.io/last-applied-configuration': '{}',
          },
        },
      },
    );
    await e.applyMirror(
      secretMirror('src', 'registry', {
        source: { kind: 'Secret', name: 'registry' },
        destination: { namespaces: ['app'] },
        template: {
          type: 'example.com/robot',
          labels: { env: 'prod' },
          annotations: { owner: 'platform-team' },
          removeLabels: ['drop-me'],
          removeAnnotations: ['cert-manager.io/*'],
          keys: [{ from: 'username', to: 'user' }, { from: 'password' }],
        },
        pollPeriodSeconds: 3600,
      }),
    );
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('overrides the type, adds and removes labels and annotations, and picks and renames keys', async () => {
    const copy = await eventually(async () => {
      const s = await e.readSecret('app', 'registry');
      expect(s).toBeDefined();
      return s!;
    });
    expect(copy.type).toBe('example.com/robot');
    expect(await e.secretData('app', 'registry')).toEqual({ user: 'robot', password: 'hunter2' });
    expect(copy.metadata?.labels).toMatchObject({ team: 'platform', env: 'prod' });
    expect(copy.metadata?.labels?.['drop-me']).toBeUndefined();
    expect(copy.metadata?.annotations).toMatchObject({ note: 'keep', owner: 'platform-team' });
    expect(copy.metadata?.annotations?.['cert-manager.io/issuer-name']).toBeUndefined();
    expect(
      copy.metadata?.annotations?.['kubectl.kubernetes.io/last-applied-configuration'],
    ).toBeUndefined();
  });

  it('marks the copy with its origin, its mirror and a keyed content hash', async () => {
    const copy = (await e.readSecret('app', 'registry'))!;
    expect(copy.metadata?.labels?.['mirrorhub.io/managed-by']).toBe('mirrorhub');
    expect(copy.metadata?.labels?.['mirrorhub.io/delivery']).toMatch(
      /^sm-src-registry-[0-9a-f]{16}$/,
    );
    expect(copy.metadata?.annotations?.['mirrorhub.io/origin']).toBe('hub/src/registry');
    expect(copy.metadata?.annotations?.['mirrorhub.io/mirror']).toBe('SecretMirror/src/registry');
    const hash = copy.metadata?.annotations?.['mirrorhub.io/content-hash'];
    expect(hash).toMatch(/^[0-9a-f]{32}$/);
    // Keyed: not a plain digest of the value.
    const { createHash } = await import('node:crypto');
    expect(hash).not.toBe(createHash('sha256').update('hunter2').digest('hex').slice(0, 32));
  });
});
