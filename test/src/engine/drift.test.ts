import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';

describe('drift correction', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start();
    for (const ns of ['src', 'app-1']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'db', { password: 'right' });
    await e.applyMirror(
      secretMirror('src', 'db', {
        source: { kind: 'Secret', name: 'db' },
        destination: { namespaces: ['app-1'] },
        pollPeriodSeconds: 3600,
      }),
    );
    await eventually(async () =>
      expect(await e.secretData('app-1', 'db')).toEqual({ password: 'right' }),
    );
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('restores a copy edited by hand at once', async () => {
    const copy = await e.readSecret('app-1', 'db');
    await e.core().replaceNamespacedSecret({
      name: 'db',
      namespace: 'app-1',
      body: {
        ...copy,
        data: {
          password: Buffer.from('wrong').toString('base64'),
          extra: Buffer.from('x').toString('base64'),
        },
      },
    });
    await eventually(
      async () => expect(await e.secretData('app-1', 'db')).toEqual({ password: 'right' }),
      { timeoutMs: 5_000 },
    );
  });

  it('recreates a copy deleted by hand at once', async () => {
    await e.core().deleteNamespacedSecret({ name: 'db', namespace: 'app-1' });
    await eventually(
      async () => expect(await e.secretData('app-1', 'db')).toEqual({ password: 'right' }),
      { timeoutMs: 5_000 },
    );
  });
});
