// `mirrorhub status` / `mirrorhub where` (and `kubectl mirrorhub ...`) against a real API server
// with the hub and an agent running: what a person sees in the terminal once a mirror has synced
// two namespaces and met a Secret it does not own in a third; what an identity that may read only
// its own namespace sees; and the built executable's usage and exit codes.
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { run, type Io } from '@mirrorhub/hub/cli/cli';
import type { StatusReport, WhereReport } from '@mirrorhub/hub/cli/gather';

import { Engine, secretMirror } from './support/engine.js';
import { serviceAccountKubeConfig } from './support/serviceaccount.js';

const exec = promisify(execFile);
const ROOT = new URL('../..', import.meta.url).pathname;
const MAIN = join(ROOT, 'hub/dist/cli/main.js');
const SOURCE_VALUE = 'cli-test-source-value';
const OWN_VALUE = 'cli-test-team-3-own-value';

async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { HOME: tmpdir() },
  };
  const code = await run(argv, io);
  return { code, stdout, stderr };
}

/** The built CLI, as `node hub/dist/cli/main.js ...` (and kubectl's plugin) runs it. */
async function spawnCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [MAIN, ...args], { cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** hub/dist is built by `npm run build`; build it here when it is missing or older than the CLI. */
async function ensureBuilt(): Promise<void> {
  const dir = join(ROOT, 'hub/src/cli');
  const newest = Math.max(...(await readdir(dir)).map((f) => statSync(join(dir, f)).mtimeMs));
  if (existsSync(MAIN) && statSync(MAIN).mtimeMs >= newest) return;
  await exec('npx', ['tsc', '-b', 'hub'], { cwd: ROOT });
}

/**
 * A kubeconfig (bearer token, context namespace src) for ServiceAccount src/viewer, which may
 * list the SecretMirrors of src and nothing else of mirrorhub's.
 */
async function viewerKubeconfig(e: Engine): Promise<string> {
  const core = e.kc.makeApiClient(CoreV1Api);
  const rbac = e.kc.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({
    namespace: 'src',
    body: { metadata: { name: 'viewer' } },
  });
  await rbac.createNamespacedRole({
    namespace: 'src',
    body: {
      metadata: { name: 'secretmirror-viewer' },
      rules: [
        { apiGroups: ['mirrorhub.io'], resources: ['secretmirrors'], verbs: ['get', 'list'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: 'src',
    body: {
      metadata: { name: 'secretmirror-viewer' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: 'secretmirror-viewer',
      },
      subjects: [{ kind: 'ServiceAccount', name: 'viewer', namespace: 'src' }],
    },
  });
  const kc = await serviceAccountKubeConfig(e.kc, { namespace: 'src', name: 'viewer' });
  const doc = JSON.parse(kc.exportConfig()) as {
    contexts: { context: Record<string, string> }[];
  };
  doc.contexts[0]!.context['namespace'] = 'src';
  const file = join(await mkdtemp(join(tmpdir(), 'mirrorhub-cli-')), 'viewer.kubeconfig');
  await writeFile(file, JSON.stringify(doc), { mode: 0o600 });
  return file;
}

/** The bearer token of a kubeconfig written by viewerKubeconfig. */
async function bearerToken(file: string): Promise<string> {
  const doc = JSON.parse(await readFile(file, 'utf8')) as { users: { user: { token: string } }[] };
  return doc.users[0]!.user.token;
}

describe('mirrorhub CLI', () => {
  let e: Engine;
  let kubeconfig: string;
  let viewer: string;

  beforeAll(async () => {
    const built = ensureBuilt();
    // healthPort: the hub serves its dashboard API there, for --hub-url.
    e = await Engine.start({ hub: { healthPort: 0, healthHost: '127.0.0.1' } });
    kubeconfig = e.kit.cluster('hub').kubeconfigPath;
    for (const ns of ['src', 'team-1', 'team-2', 'team-3']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'app-config', { password: SOURCE_VALUE });
    // team-3 already has its own Secret named like the copies: mirrorhub must not take it.
    await e.putSecret('team-3', 'app-config', { password: OWN_VALUE });
    await e.applyMirror(
      secretMirror('src', 'app-config', {
        source: { kind: 'Secret', name: 'app-config' },
        destination: { namespaces: ['team-.+'] },
        pollPeriodSeconds: 3600,
      }),
    );
    await e.mirrorStatus('SecretMirror', 'app-config', 'src', (m) => {
      expect(m.status?.phase).toBe('Degraded');
      expect(m.status?.counts).toMatchObject({ namespaces: 3, synced: 2, conflicts: 1 });
      expect(m.status?.problems).toEqual([
        expect.objectContaining({ namespace: 'team-3', state: 'Conflict' }),
      ]);
    });
    viewer = await viewerKubeconfig(e);
    await built;
  });

  afterAll(async () => {
    await e?.stop();
  });

  const noSecretValue = (text: string) => {
    expect(text).not.toContain(SOURCE_VALUE);
    expect(text).not.toContain(OWN_VALUE);
    expect(text).not.toContain(Buffer.from(SOURCE_VALUE).toString('base64'));
  };

  it('status -o json: the mirror Degraded, the conflict needing attention', async () => {
    const r = await cli(['status', '--kubeconfig', kubeconfig, '-o', 'json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as StatusReport;
    expect(report.source).toMatchObject({ kind: 'cluster', server: expect.any(String) });
    expect(report.mirrors).toEqual([
      expect.objectContaining({
        key: 'SecretMirror/src/app-config',
        phase: 'Degraded',
        matched: 3,
        synced: 2,
        conflicts: 1,
      }),
    ]);
    expect(report.overview.mirrors.byPhase.Degraded).toBe(1);
    expect(report.overview.copies).toMatchObject({ namespaces: 3, synced: 2, conflicts: 1 });
    expect(report.overview.attention).toContainEqual(
      expect.objectContaining({
        kind: 'Conflict',
        ref: 'SecretMirror/src/app-config',
        reason: expect.stringContaining('hub/team-3'),
      }),
    );
    noSecretValue(r.stdout);
  });

  it('status: the overview, ATTENTION and MIRRORS tables', async () => {
    const r = await cli(['status', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Mirrors: +1: 0 Active, 1 Degraded, 0 Error, 0 Pending$/m);
    expect(r.stdout).toMatch(/^Copies: +2\/3 synced, 0 failed, 1 conflict, 0 denied$/m);
    expect(r.stdout).toMatch(/^ATTENTION\nSEVERITY +KIND +WHAT +REASON\n/m);
    expect(r.stdout).toMatch(
      /^warning +Conflict +SecretMirror\/src\/app-config +1 conflict, e\.g\. hub\/team-3: /m,
    );
    expect(r.stdout).toContain(
      'CLUSTERS\nNo MirrorClusters: the hub delivers only to its own cluster (hub).\n',
    );
    expect(r.stdout).toMatch(
      /^NAMESPACE +NAME +SOURCE TYPE +SOURCE +DESTINATION +STATUS +SYNCED +LAST SYNC$/m,
    );
    expect(r.stdout).toMatch(/^src +app-config +Secret +app-config +\S.* +Degraded +2\/3 +\d+s$/m);
    noSecretValue(r.stdout);
  });

  it('where: the two synced namespaces and the conflict', async () => {
    const r = await cli(['where', 'app-config', '--kubeconfig', kubeconfig]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rows = r.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^CLUSTER +NAMESPACE +STATE +MIRROR +MESSAGE$/);
    expect(rows.slice(1, 3)).toEqual([
      expect.stringMatching(/^hub +team-1 +Synced +SecretMirror\/src\/app-config +<none>$/),
      expect.stringMatching(/^hub +team-2 +Synced +SecretMirror\/src\/app-config +<none>$/),
    ]);
    expect(rows[3]).toMatch(/^hub +team-3 +Conflict +SecretMirror\/src\/app-config +\S/);
    expect(rows).toHaveLength(4);

    const json = await cli(['where', 'app-config', '--kubeconfig', kubeconfig, '-o', 'json']);
    const report = JSON.parse(json.stdout) as WhereReport;
    expect(report.items.map((i) => [i.cluster, i.namespace, i.state])).toEqual([
      ['hub', 'team-1', 'Synced'],
      ['hub', 'team-2', 'Synced'],
      ['hub', 'team-3', 'Conflict'],
    ]);
    expect(report.summaries).toEqual([]);
    noSecretValue(r.stdout + json.stdout);
  });

  it('an identity that may read only its namespace sees that namespace, and is told so', async () => {
    const file = viewer;
    const status = await cli(['status', '--kubeconfig', file]);
    expect(status.code).toBe(0);
    expect(status.stderr).toContain(
      'note: you may not list SecretMirrors in all namespaces: showing namespace src (pass -n for another)\n',
    );
    expect(status.stderr).toContain('note: you may not list MirrorClusters');
    expect(status.stdout).toMatch(/^src +app-config +Secret +app-config +\S.* +Degraded +2\/3 /m);

    // The agent namespace is not this identity's: the hub cluster is summarised from the
    // mirror's status, and the conflict comes from its problems.
    const where = await cli(['where', 'app-config', '--kubeconfig', file]);
    expect(where.code).toBe(0);
    expect(where.stderr).toMatch(/note: you may not list MirrorDeliveries in mirrorhub-system/);
    expect(where.stdout).toMatch(
      /^hub +\* +Synced 2\/3 +SecretMirror\/src\/app-config +Degraded: \S/m,
    );
    expect(where.stdout).toMatch(/^hub +team-3 +Conflict +SecretMirror\/src\/app-config /m);
    expect(where.stdout).toContain('their per-namespace list is on the dashboard');

    const all = await cli(['status', '--kubeconfig', file, '-A']);
    expect(all.code).toBe(1);
    expect(all.stderr).toMatch(
      /^error: your identity may not list SecretMirrors here \(listing SecretMirrors in all namespaces on https:\/\/\S+: 403 Forbidden: .*\); ask your cluster administrator for "list" on secretmirrors\.mirrorhub\.io .* or pass -n /,
    );
    const other = await cli(['status', '--kubeconfig', file, '-n', 'team-1']);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(
      /may not list SecretMirrors here \(listing SecretMirrors in namespace team-1/,
    );
  });

  it('--hub-url asks the hub dashboard API with the kubeconfig user token, or --token', async () => {
    const url = `http://127.0.0.1:${e.hub!.port!}`;
    // The viewer's kubeconfig carries a bearer token: the hub reviews it and shows what src/viewer
    // may list, with every cluster's report (no summary rows, no footer).
    const status = await cli(['status', '--hub-url', url, '--kubeconfig', viewer]);
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(
      `Hub cluster: hub, read from the hub at ${url} as system:serviceaccount:src:viewer\n`,
    );
    expect(status.stdout).toMatch(/^warning +Conflict +SecretMirror\/src\/app-config +1 conflict/m);
    expect(status.stdout).toMatch(/^src +app-config +Secret +app-config +\S.* +Degraded +2\/3 /m);

    const token = await bearerToken(viewer);
    const where = await cli(['where', 'app-config', '--hub-url', url, '--token', token]);
    expect(where.code).toBe(0);
    expect(where.stdout.trimEnd().split('\n').slice(1)).toEqual([
      expect.stringMatching(/^hub +team-1 +Synced +SecretMirror\/src\/app-config +<none>$/),
      expect.stringMatching(/^hub +team-2 +Synced +SecretMirror\/src\/app-config +<none>$/),
      expect.stringMatching(/^hub +team-3 +Conflict +SecretMirror\/src\/app-config +\S/),
    ]);
    noSecretValue(status.stdout + where.stdout);

    // The admin kubeconfig authenticates with a client certificate: no token to send, and the
    // hub's own 401 message is printed.
    const refused = await cli(['status', '--hub-url', url, '--kubeconfig', kubeconfig]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(
      /^error: the hub at http:\/\/127\.0\.0\.1:\d+ answered 401: sign in: send `Authorization: Bearer <token>`.*: no token was sent; pass --token, set MIRRORHUB_TOKEN/,
    );
  });

  it('the built executable prints its usage with --help and exits 0', async () => {
    const r = await spawnCli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^Usage: mirrorhub <command> \[flags\]\n {7}kubectl mirrorhub <command>/,
    );
    expect(r.stdout).toContain('where NAME');
    expect(r.stderr).toBe('');
  });

  it('the built executable exits 2 with the usage on an unknown command', async () => {
    const r = await spawnCli(['frobnicate', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: unknown command "frobnicate"\n\nUsage: mirrorhub /);
  });

  it('the built executable reads the cluster like the in-process run', async () => {
    const r = await spawnCli(['where', 'app-config', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^hub +team-3 +Conflict /m);
  });
});
