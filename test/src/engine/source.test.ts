import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { clusterSecretMirror, Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';

const NO_POLL = 3600;

describe('sources', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start();
    for (const ns of ['src', 'other', 'app-1', 'app-2']) await e.ensureNamespace(ns);
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('is Pending with a SourceNotFound Event while the source is missing, and Active as soon as it appears', async () => {
    await e.applyMirror(
      secretMirror('src', 'late', {
        source: { kind: 'Secret', name: 'late-secret' },
        destination: { namespaces: ['app-.*'] },
        pollPeriodSeconds: NO_POLL,
      }),
    );
    await e.mirrorStatus('SecretMirror', 'late', 'src', (m) => {
      expect(m.status?.phase).toBe('Pending');
      expect(m.status?.message).toContain('late-secret');
    });
    await e.eventWith('src', 'late', 'SourceNotFound');
    await e.putSecret('src', 'late-secret', { token: 'T1' });
    await eventually(
      async () => expect(await e.secretData('app-1', 'late-secret')).toEqual({ token: 'T1' }),
      { timeoutMs: 5_000 },
    );
    await e.mirrorStatus('SecretMirror', 'late', 'src', (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
  });

  it('carries a source change (certificate renewal) to every copy within seconds', async () => {
    await e.putSecret('src', 'late-secret', { token: 'T2' });
    await eventually(
      async () => {
        expect(await e.secretData('app-1', 'late-secret')).toEqual({ token: 'T2' });
        expect(await e.secretData('app-2', 'late-secret')).toEqual({ token: 'T2' });
      },
      { timeoutMs: 5_000 },
    );
  });

  it('keeps the copies when the source is deleted, and says so in status', async () => {
    await e.core().deleteNamespacedSecret({ name: 'late-secret', namespace: 'src' });
    await e.mirrorStatus('SecretMirror', 'late', 'src', (m) => {
      expect(m.status?.message).toMatch(/late-secret.*not found/);
      expect(m.status?.conditions?.find((c) => c.type === 'SourceFound')?.status).toBe('False');
    });
    expect(await e.secretData('app-1', 'late-secret')).toEqual({ token: 'T2' });
  });

  it('mirrors a ConfigMap as a ConfigMap', async () => {
    await e.putConfigMap('src', 'settings', { 'app.yaml': 'level: info\n' });
    await e.applyMirror(
      secretMirror('src', 'settings', {
        source: { kind: 'ConfigMap', name: 'settings' },
        destination: { namespaces: ['app-1'] },
        pollPeriodSeconds: NO_POLL,
      }),
    );
    await eventually(async () => {
      const cm = await e.core().readNamespacedConfigMap({ name: 'settings', namespace: 'app-1' });
      expect(cm.data).toEqual({ 'app.yaml': 'level: info\n' });
    });
  });

  it('refuses a SecretMirror that names a Secret in another namespace, with a clear status', async () => {
    await e.putSecret('other', 'not-yours', { password: 'do-not-copy-me' });
    await e.applyMirror(
      secretMirror('src', 'sneaky', {
        source: { kind: 'Secret', name: 'not-yours', namespace: 'other' },
        destination: { namespaces: ['app-.*'] },
        pollPeriodSeconds: NO_POLL,
      }),
    );
    const m = await e.mirrorStatus('SecretMirror', 'sneaky', 'src', (m) =>
      expect(m.status?.phase).toBe('Error'),
    );
    expect(m.status?.message).toContain('other');
    expect(m.status?.message).toMatch(/ClusterSecretMirror/);
    expect(await e.readSecret('app-1', 'not-yours')).toBeUndefined();
  });

  it('lets a ClusterSecretMirror read from source.namespace', async () => {
    await e.applyMirror(
      clusterSecretMirror('shared-pull', {
        source: { kind: 'Secret', name: 'not-yours', namespace: 'other' },
        destination: { namespaces: ['app-2'] },
        pollPeriodSeconds: NO_POLL,
      }),
    );
    await eventually(async () =>
      expect(await e.secretData('app-2', 'not-yours')).toEqual({ password: 'do-not-copy-me' }),
    );
    await e.mirrorStatus('ClusterSecretMirror', 'shared-pull', undefined, (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
  });
});
