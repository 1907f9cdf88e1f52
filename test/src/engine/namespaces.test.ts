import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, secretMirror } from '../support/engine.js';
import { consistently, eventually } from '../support/eventually.js';

// A poll period of an hour: everything below must happen through watches, not polling.
const NO_POLL = 3600;

describe('destination namespaces', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start();
    await e.ensureNamespace('certs');
    for (const ns of [
      'project-a-web',
      'project-a-api',
      'project-a-sandbox',
      'project-b-web',
      'project-a',
    ]) {
      await e.ensureNamespace(ns);
    }
    await e.ensureNamespace('labelled', { tls: 'wildcard' });
    await e.putSecret(
      'certs',
      'wildcard-tls',
      { 'tls.crt': 'CERT-1', 'tls.key': 'KEY-1' },
      { type: 'kubernetes.io/tls' },
    );
    await e.applyMirror(
      secretMirror('certs', 'wildcard', {
        source: { kind: 'Secret', name: 'wildcard-tls' },
        destination: {
          namespaces: ['project-a-.+'],
          namespaceSelector: { matchLabels: { tls: 'wildcard' } },
          excludeNamespaces: ['project-a-sandbox'],
        },
        pollPeriodSeconds: NO_POLL,
      }),
    );
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('copies into namespaces matching an anchored regex or the label selector, minus exclusions', async () => {
    await eventually(async () => {
      expect(await e.secretData('project-a-web', 'wildcard-tls')).toEqual({
        'tls.crt': 'CERT-1',
        'tls.key': 'KEY-1',
      });
      expect(await e.secretData('project-a-api', 'wildcard-tls')).toBeDefined();
      expect(await e.secretData('labelled', 'wildcard-tls')).toBeDefined();
    });
    // excluded, not matching, and "project-a" itself (the regex is anchored: .+ needs a char)
    for (const ns of ['project-a-sandbox', 'project-b-web', 'project-a', 'default']) {
      expect(await e.readSecret(ns, 'wildcard-tls'), ns).toBeUndefined();
    }
    const copy = await e.readSecret('project-a-web', 'wildcard-tls');
    expect(copy?.type).toBe('kubernetes.io/tls');
    const m = await e.mirrorStatus('SecretMirror', 'wildcard', 'certs', (m) => {
      expect(m.status?.phase).toBe('Active');
      expect(m.status?.counts).toMatchObject({ namespaces: 3, synced: 3, failed: 0, conflicts: 0 });
    });
    expect(m.status?.synced).toBe('3/3');
    expect(m.status?.observedGeneration).toBe(m.metadata?.generation);
  });

  it('gives a namespace created later its copy at once, without waiting for a poll', async () => {
    await e.ensureNamespace('project-a-new');
    await eventually(
      async () => expect(await e.secretData('project-a-new', 'wildcard-tls')).toBeDefined(),
      { timeoutMs: 5_000 },
    );
  });

  it('adds and removes the copy as a namespace starts and stops matching the selector', async () => {
    await e.ensureNamespace('team-x');
    expect(await e.readSecret('team-x', 'wildcard-tls')).toBeUndefined();
    await e.labelNamespace('team-x', { tls: 'wildcard' });
    await eventually(
      async () => expect(await e.readSecret('team-x', 'wildcard-tls')).toBeDefined(),
      { timeoutMs: 5_000 },
    );
    await e.labelNamespace('team-x', { tls: null });
    await eventually(
      async () => expect(await e.readSecret('team-x', 'wildcard-tls')).toBeUndefined(),
      { timeoutMs: 5_000 },
    );
  });

  it('uses destination.name as the copy name when given, and never touches the source itself', async () => {
    await e.applyMirror(
      secretMirror('certs', 'renamed', {
        source: { kind: 'Secret', name: 'wildcard-tls' },
        // "certs" matches too: the copy lands beside the source under another name.
        destination: { namespaces: ['certs', 'project-b-.*'], name: 'tls-copy' },
        pollPeriodSeconds: NO_POLL,
      }),
    );
    await eventually(async () => {
      expect(await e.secretData('project-b-web', 'tls-copy')).toEqual({
        'tls.crt': 'CERT-1',
        'tls.key': 'KEY-1',
      });
      expect(await e.secretData('certs', 'tls-copy')).toBeDefined();
    });
    expect(await e.readSecret('project-b-web', 'wildcard-tls')).toBeUndefined();

    // A mirror whose target is the source itself must leave the source alone.
    await e.applyMirror(
      secretMirror('certs', 'self', {
        source: { kind: 'Secret', name: 'wildcard-tls' },
        destination: { namespaces: ['certs'] },
        pollPeriodSeconds: NO_POLL,
      }),
    );
    const before = await e.readSecret('certs', 'wildcard-tls');
    await consistently(
      async () => {
        const now = await e.readSecret('certs', 'wildcard-tls');
        expect(now?.metadata?.resourceVersion).toBe(before?.metadata?.resourceVersion);
        expect(now?.metadata?.labels?.['mirrorhub.io/managed-by']).toBeUndefined();
      },
      { forMs: 2_000 },
    );
  });

  it('creates each copy of a fan-out with one write, never racing its own creates', async () => {
    // A delivery reconciled again before its copies' watch events arrived planned their creates
    // again: a 409, a read and a rewrite each (half the copies of the engine benchmark's
    // smallest fan-out). 8 mirrors whose payload and delivery land close together, 12 new
    // namespaces each.
    const namespaces = Array.from({ length: 12 }, (_, k) => `fan-${k}`);
    for (const ns of namespaces) await e.ensureNamespace(ns, { fan: 'out' });
    // The agent's copy writes (in one process the hub's payload Secrets share the registry).
    const agent = { kind: 'Secret', component: 'agent' };
    const writes = async () => {
      const json = await e.agent!.registry.getMetricsAsJSON();
      const sum = (name: string, labels: Record<string, string>) =>
        (
          (json.find((m) => m.name === name)?.values ?? []) as {
            value: number;
            labels: Record<string, string | number>;
          }[]
        )
          .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
          .reduce((n, v) => n + v.value, 0);
      return {
        created: sum('mirrorhub_writes_total', { ...agent, verb: 'create' }),
        rewritten: sum('mirrorhub_writes_total', { ...agent, verb: 'update' }),
        failed: sum('mirrorhub_write_errors_total', agent),
      };
    };
    const before = await writes();
    const mirrors = Array.from({ length: 8 }, (_, i) => `fan-${i}`);
    await Promise.all(
      mirrors.map(async (name) => {
        await e.putSecret('certs', name, { value: name });
        await e.applyMirror(
          secretMirror('certs', name, {
            source: { kind: 'Secret', name },
            destination: { namespaceSelector: { matchLabels: { fan: 'out' } } },
            pollPeriodSeconds: NO_POLL,
          }),
        );
      }),
    );
    for (const name of mirrors) {
      await e.mirrorStatus('SecretMirror', name, 'certs', (m) => {
        expect(m.status?.phase).toBe('Active');
        expect(m.status?.counts).toMatchObject({ synced: namespaces.length });
      });
    }
    const after = await writes();
    expect({
      created: after.created - before.created,
      rewritten: after.rewritten - before.rewritten,
      failed: after.failed - before.failed,
    }).toEqual({ created: mirrors.length * namespaces.length, rewritten: 0, failed: 0 });
  });
});
