import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { clusterSecretMirror, Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';

const run = promisify(execFile);

describe('bad input', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start();
    for (const ns of ['src', 'app-1']) await e.ensureNamespace(ns);
    await e.putSecret('src', 's', { v: '1' });
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('takes a mirror that names only its Secret: source.kind defaults to Secret', async () => {
    // How kubernetes-reflector and KTS mirror users write it.
    await e.applyMirror(
      secretMirror('src', 'short', {
        source: { name: 's' },
        destination: { namespaces: ['app-1'], name: 'short-copy' },
        pollPeriodSeconds: 3600,
      } as never),
    );
    expect((await e.getMirror('SecretMirror', 'short', 'src'))?.spec.source.kind).toBe('Secret');
    await eventually(async () =>
      expect(await e.secretData('app-1', 'short-copy')).toEqual({ v: '1' }),
    );
  });

  it('turns a regex that does not compile into phase Error naming the value, with an Event, and the others keep working', async () => {
    await e.applyMirror(
      secretMirror('src', 'broken', {
        source: { kind: 'Secret', name: 's' },
        destination: { namespaces: ['app-.*', 'project-('] },
        pollPeriodSeconds: 3600,
      }),
    );
    await e.applyMirror(
      secretMirror('src', 'healthy', {
        source: { kind: 'Secret', name: 's' },
        destination: { namespaces: ['app-.*'], name: 'healthy-copy' },
        pollPeriodSeconds: 3600,
      }),
    );
    const broken = await e.mirrorStatus('SecretMirror', 'broken', 'src', (m) =>
      expect(m.status?.phase).toBe('Error'),
    );
    expect(broken.status?.message).toContain('destination.namespaces[1]');
    expect(broken.status?.message).toContain('project-(');
    await e.eventWith('src', 'broken', 'InvalidSpec');
    await eventually(async () =>
      expect(await e.secretData('app-1', 'healthy-copy')).toEqual({ v: '1' }),
    );
    expect(await e.readSecret('app-1', 's')).toBeUndefined();
  });

  it('turns a label selector the schema cannot judge into phase Error naming the bad key', async () => {
    // The schema cannot judge a label key; the hub can, and says which one.
    await e.applyMirror(
      secretMirror('src', 'bad-selector', {
        source: { kind: 'Secret', name: 's' },
        destination: { namespaceSelector: { matchLabels: { 'bad key!': 'x' } } },
        pollPeriodSeconds: 3600,
      }),
    );
    const st = await e.mirrorStatus('SecretMirror', 'bad-selector', 'src', (m) =>
      expect(m.status?.phase).toBe('Error'),
    );
    expect(st.status?.message).toContain('bad key!');
  });

  it.each([
    [
      'a ClusterSecretMirror without source.namespace',
      () =>
        clusterSecretMirror('no-ns', {
          source: { kind: 'Secret', name: 's' },
          destination: { namespaces: ['a'] },
        }),
      /source\.namespace/,
    ],
    [
      'a destination with neither namespaces nor namespaceSelector',
      () =>
        secretMirror('src', 'nowhere', { source: { kind: 'Secret', name: 's' }, destination: {} }),
      /namespaces or namespaceSelector/,
    ],
    [
      'an unknown deletePolicy',
      () =>
        secretMirror('src', 'bad-policy', {
          source: { kind: 'Secret', name: 's' },
          destination: { namespaces: ['a'] },
          deletePolicy: 'Sometimes' as 'Delete',
        }),
      /spec\.deletePolicy: Unsupported value: "Sometimes": supported values: "Delete", "Retain"/,
    ],
    [
      'a selector requirement In with no values',
      () =>
        secretMirror('src', 'bad-op', {
          source: { kind: 'Secret', name: 's' },
          destination: {
            namespaceSelector: { matchExpressions: [{ key: 'a', operator: 'In', values: [] }] },
          },
        }),
      /matchExpressions\[0\].*values must be non-empty for In and NotIn/,
    ],
    [
      'a poll period below 10 seconds',
      () =>
        secretMirror('src', 'hot-loop', {
          source: { kind: 'Secret', name: 's' },
          destination: { namespaces: ['a'] },
          pollPeriodSeconds: 1,
        }),
      /pollPeriodSeconds/,
    ],
  ])('refuses %s at apply time', async (_what, manifest, message) => {
    const err = await e.applyMirror(manifest()).catch((x: unknown) => x);
    expect((err as { code?: number }).code).toBe(422);
    const status = JSON.parse(String((err as { body?: string }).body)) as { message: string };
    expect(status.message).toMatch(message);
  });
});

describe('kubectl view', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start();
    for (const ns of ['src', 'app-1', 'app-2']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'tls', { crt: 'c' });
    await e.applyMirror(
      secretMirror('src', 'tls', {
        source: { kind: 'Secret', name: 'tls' },
        destination: { namespaces: ['app-.*'] },
        pollPeriodSeconds: 600,
      }),
    );
    await e.mirrorStatus('SecretMirror', 'tls', 'src', (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('shows source, destination, policy, poll period, status and synced count in `kubectl get secretmirrors`', async () => {
    const kubeconfig = e.kit.cluster('hub').kubeconfigPath;
    const { stdout } = await run(e.kit.kubectl, [
      '--kubeconfig',
      kubeconfig,
      'get',
      'secretmirrors',
      '-A',
    ]);
    const [header, row] = stdout.trim().split('\n');
    expect(header!.split(/\s{2,}/)).toEqual([
      'NAMESPACE',
      'NAME',
      'SOURCE TYPE',
      'SOURCE NAME',
      'DESTINATION',
      'DELETE POLICY',
      'POLL PERIOD',
      'STATUS',
      'SYNCED',
      'LAST SYNC',
      'AGE',
    ]);
    expect(row).toMatch(
      /^src\s+tls\s+Secret\s+tls\s+\S.*\s+Delete\s+600\s+Active\s+2\/2\s+\d+s\s+\d+s$/,
    );
    const { stdout: short } = await run(e.kit.kubectl, [
      '--kubeconfig',
      kubeconfig,
      'get',
      'smir',
      '-n',
      'src',
      '-o',
      'name',
    ]);
    expect(short.trim()).toBe('secretmirror.mirrorhub.io/tls');
  });

  it('explains the spec in words', async () => {
    const { stdout } = await run(e.kit.kubectl, [
      '--kubeconfig',
      e.kit.cluster('hub').kubeconfigPath,
      'explain',
      'secretmirror.spec.destination',
    ]);
    expect(stdout).toMatch(/namespaces\s+<\[\]string>/);
    expect(stdout).toMatch(/anchored/i);
    expect(stdout).toMatch(/excludeNamespaces/);
  });
});
