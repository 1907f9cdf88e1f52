// `mirrorhub migrate` against a real API server seeded the way each incumbent tool leaves a
// cluster: kubernetes-reflector and kubed annotations on sources and marks on their copies, a
// ClusterSecret (its CRD) with its copies, KTS SecretMirrors (their CRD) with their copies. The
// built CLI reads it with a kubeconfig like a person would; the emitted YAML is applied with
// kubectl to the mirrorhub CRDs. Asserted: the objects, the namespaces each rule selects before
// and after (unanchored, start-anchored, whole-name and label-selector rules), the refusals and
// exit codes, --out never overwriting, and --plan's create / take over / leave alone.
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  loadAllYaml,
  type KubeConfig,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ensureKubeBinaries, startKit, type Kit } from '@mirrorhub/infra/kit/index';

import { applyCrd, installCrds } from './support/crds.js';
import { CLUSTER_SECRET_CRD, KTS_CRD, KTS_V1ALPHA1_CRD } from './support/incumbents.js';
import { eventually } from './support/eventually.js';

const exec = promisify(execFile);
const ROOT = new URL('../..', import.meta.url).pathname;
const MAIN = join(ROOT, 'hub/dist/cli/main.js');
const R = 'reflector.v1.k8s.emberstack.com';
const SYSTEM = ['kube-node-lease', 'kube-public', 'kube-system', 'mirrorhub-system'];

/** The built CLI, as `kubectl mirrorhub ...` runs it. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [MAIN, ...args], {
      cwd: ROOT,
      env: { PATH: process.env['PATH'] ?? '', HOME: tmpdir() },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** hub/dist is built by `npm run build`; build it here when it is older than the CLI's sources. */
async function ensureBuilt(): Promise<void> {
  const newest = async (dir: string): Promise<number> => {
    let t = 0;
    for (const f of await readdir(dir, { withFileTypes: true })) {
      const p = join(dir, f.name);
      t = Math.max(t, f.isDirectory() ? await newest(p) : statSync(p).mtimeMs);
    }
    return t;
  };
  if (existsSync(MAIN) && statSync(MAIN).mtimeMs >= (await newest(join(ROOT, 'hub/src/cli')))) {
    return;
  }
  await exec('npx', ['tsc', '-b', 'hub'], { cwd: ROOT });
}

const NAMESPACES: Record<string, Record<string, string>> = {
  src: {},
  'team-a': { team: 'a' },
  'team-b': { team: 'b' },
  'app-team-c': { team: 'c' },
  prod: {},
  'mirrorhub-system': {},
};

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('mirrorhub migrate', () => {
  let kit: Kit;
  let kc: KubeConfig;
  let kubeconfig: string;
  let kubectl: string;

  const core = () => kc.makeApiClient(CoreV1Api);
  const custom = () => kc.makeApiClient(CustomObjectsApi);
  const secret = async (
    namespace: string,
    name: string,
    meta: { annotations?: Record<string, string>; labels?: Record<string, string> } = {},
  ) => {
    const created = await core().createNamespacedSecret({
      namespace,
      body: { metadata: { name, namespace, ...meta }, data: { v: b64(`${namespace}/${name}`) } },
    });
    return created.metadata?.uid ?? '';
  };

  beforeAll(async () => {
    const built = ensureBuilt();
    kit = await startKit({ clusters: ['hub'], aws: false });
    kc = kit.cluster('hub').kubeConfig();
    kubeconfig = kit.cluster('hub').kubeconfigPath;
    kubectl = (await ensureKubeBinaries()).kubectl;
    await installCrds(kc, 'mirrorhub-hub');
    for (const [name, labels] of Object.entries(NAMESPACES)) {
      await core().createNamespace({ body: { metadata: { name, labels } } });
    }
    await built;
  });

  afterAll(async () => {
    await kit?.stop();
  });

  it('finds nothing in a cluster without the tools (their CRDs missing is no error)', async () => {
    const r = await cli(['migrate', '--kubeconfig', kubeconfig]);
    expect(r).toMatchObject({ code: 0, stdout: '' });
    expect(r.stderr).toContain('nothing to migrate');
  });

  it('reads KTS v1alpha1 where the CRD serves only it, as KTS converts it', async () => {
    await applyCrd(kc, KTS_V1ALPHA1_CRD);
    await custom().createNamespacedCustomObject({
      group: 'mirrors.kts.studio',
      version: 'v1alpha1',
      namespace: 'src',
      plural: 'secretmirrors',
      body: {
        apiVersion: 'mirrors.kts.studio/v1alpha1',
        kind: 'SecretMirror',
        metadata: { name: 'kts-old', namespace: 'src' },
        spec: { source: { name: 'kts-old' }, destination: { namespaceRegex: '^prod$' } },
      },
    });
    const r = await cli(['migrate', '--kubeconfig', kubeconfig]);
    expect(r.code).toBe(0);
    expect(loadAllYaml(r.stdout)).toEqual([
      {
        apiVersion: 'mirrorhub.io/v1alpha1',
        kind: 'SecretMirror',
        metadata: { name: 'kts-old', namespace: 'src' },
        spec: {
          source: { kind: 'Secret', name: 'kts-old' },
          destination: { namespaces: ['.*(?:^prod$).*'] },
          deletePolicy: 'Delete',
        },
      },
    ]);
    expect(r.stderr).toContain('before (KTS): prod\n  after (mirrorhub): prod\n  same namespaces');

    // The full CRD (v1alpha2 stored) replaces it for the tests below.
    const api = kc.makeApiClient(ApiextensionsV1Api);
    await api.deleteCustomResourceDefinition({ name: KTS_CRD.metadata!.name! });
    await eventually(async () => {
      try {
        await api.readCustomResourceDefinition({ name: KTS_CRD.metadata!.name! });
      } catch (err) {
        if ((err as { code?: number }).code === 404) return;
        throw err;
      }
      throw new Error('the v1alpha1-only CRD is still being deleted');
    });
  });

  describe('with every tool', () => {
    beforeAll(async () => {
      await applyCrd(kc, CLUSTER_SECRET_CRD);
      await applyCrd(kc, KTS_CRD);

      // kubernetes-reflector: a source auto-reflected to team-.* and prod (whole-name .NET
      // patterns); its copy in team-a as reflector writes it; an unrelated Secret of the same
      // name in team-b.
      await secret('src', 'r-tls', {
        annotations: {
          [`${R}/reflection-allowed`]: 'true',
          [`${R}/reflection-allowed-namespaces`]: 'team-.*,prod',
          [`${R}/reflection-auto-enabled`]: 'true',
        },
      });
      await secret('team-a', 'r-tls', {
        annotations: {
          [`${R}/auto-reflects`]: 'True',
          [`${R}/reflects`]: 'src/r-tls',
          [`${R}/reflected-version`]: '1',
          [`${R}/reflected-at`]: '"2026-11-01T00:00:00Z"',
        },
      });
      await secret('team-b', 'r-tls');

      // kubed: a ConfigMap synced to team=a; a Secret synced everywhere ("" = all); a Secret
      // synced to other clusters' contexts (refused). Copies carry kubed's origin labels.
      await core().createNamespacedConfigMap({
        namespace: 'src',
        body: {
          metadata: {
            name: 'k-cfg',
            namespace: 'src',
            annotations: { 'kubed.appscode.com/sync': 'team=a' },
          },
          data: { a: '1' },
        },
      });
      // As kubed's syncer writes them: origin labels, and the source's object reference (its
      // uid included) as the origin annotation.
      const origin = (name: string, uid: string) => ({
        labels: {
          'kubed.appscode.com/origin.name': name,
          'kubed.appscode.com/origin.namespace': 'src',
          'kubed.appscode.com/origin.cluster': 'prod-cluster',
        },
        annotations: {
          'kubed.appscode.com/origin': JSON.stringify({
            kind: 'Secret',
            namespace: 'src',
            name,
            uid,
          }),
        },
      });
      const kAll = await secret('src', 'k-all', { annotations: { 'kubed.appscode.com/sync': '' } });
      await secret('team-b', 'k-all', origin('k-all', kAll));
      await secret('kube-public', 'k-all', origin('k-all', kAll));
      await secret('src', 'k-remote', {
        annotations: { 'kubed.appscode.com/sync-contexts': 'eu,us' },
      });

      // ClusterSecret: start-anchored patterns with valueFrom keys, and inline data to all.
      await secret('src', 'cs-source');
      await custom().createClusterCustomObject({
        group: 'clustersecret.io',
        version: 'v1',
        plural: 'clustersecrets',
        body: {
          apiVersion: 'clustersecret.io/v1',
          kind: 'ClusterSecret',
          metadata: { name: 'cs-prefix' },
          matchNamespace: ['team'],
          avoidNamespaces: ['team-b'],
          data: {
            valueFrom: { secretKeyRef: { name: 'cs-source', namespace: 'src', keys: ['v'] } },
          },
        },
      });
      await custom().createClusterCustomObject({
        group: 'clustersecret.io',
        version: 'v1',
        plural: 'clustersecrets',
        body: {
          apiVersion: 'clustersecret.io/v1',
          kind: 'ClusterSecret',
          metadata: { name: 'cs-inline' },
          type: 'Opaque',
          data: { token: b64('inline-value') },
        },
      });
      await secret('team-a', 'cs-prefix', {
        labels: { 'clustersecret.io': 'true' },
        annotations: {
          'clustersecret.io/created-by': 'ClusterSecrets',
          'clustersecret.io/version': '0.0.12',
          'clustersecret.io/last-sync': '2026-11-01T00:00:00',
        },
      });

      // KTS: unanchored Go patterns (v1alpha2), and a Vault destination.
      await secret('src', 'kts-tls');
      await custom().createNamespacedCustomObject({
        group: 'mirrors.kts.studio',
        version: 'v1alpha2',
        namespace: 'src',
        plural: 'secretmirrors',
        body: {
          apiVersion: 'mirrors.kts.studio/v1alpha2',
          kind: 'SecretMirror',
          metadata: { name: 'kts-m', namespace: 'src' },
          spec: {
            source: { type: 'secret', name: 'kts-tls' },
            destination: { type: 'namespaces', namespaces: ['team'] },
            deletePolicy: 'delete',
            pollPeriodSeconds: 180,
          },
        },
      });
      await secret('app-team-c', 'kts-tls', {
        annotations: {
          'mirrors.kts.studio/owned-by': 'src/kts-m',
          'mirrors.kts.studio/parent-version': '1',
          'mirrors.kts.studio/source-type': 'secret',
        },
      });
      await custom().createNamespacedCustomObject({
        group: 'mirrors.kts.studio',
        version: 'v1alpha2',
        namespace: 'src',
        plural: 'secretmirrors',
        body: {
          apiVersion: 'mirrors.kts.studio/v1alpha2',
          kind: 'SecretMirror',
          metadata: { name: 'kts-publish', namespace: 'src' },
          spec: {
            source: { type: 'secret', name: 'kts-tls' },
            destination: {
              type: 'vault',
              vault: {
                addr: 'https://vault.example.com:8200',
                path: '/secret/data/published/kts-tls',
                auth: { approle: { secretRef: { name: 'vault-approle' } } },
              },
            },
            deletePolicy: 'retain',
          },
        },
      });
    });

    it('refuses sync-contexts by name and reason, exits 1 and writes nothing', async () => {
      const r = await cli(['migrate', '--kubeconfig', kubeconfig]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(
        "cannot translate Secret src/k-remote (kubed): sync-contexts eu, us: these name contexts of kubed's own kubeconfig file",
      );
      expect(r.stderr).toMatch(/error: 1 rule\(s\) cannot be translated .* pass --continue/);
      expect(r.stderr).not.toContain('cannot translate ClusterSecret');
    });

    it('--continue emits the rest: the YAML, and both namespace lists of every rule', async () => {
      const r = await cli(['migrate', '--kubeconfig', kubeconfig, '--continue']);
      expect(r.code).toBe(0);
      const objects = loadAllYaml(r.stdout) as {
        kind: string;
        metadata: { name: string; namespace?: string };
        spec?: unknown;
      }[];
      const byKey = new Map(
        objects.map((o) => [`${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`, o]),
      );
      expect([...byKey.keys()].sort()).toEqual([
        'ClusterSecretMirror /cs-inline',
        'ClusterSecretMirror /cs-prefix',
        'Secret mirrorhub-system/cs-inline',
        'SecretMirror src/k-all',
        'SecretMirror src/k-cfg',
        'SecretMirror src/kts-m',
        'SecretMirror src/kts-publish',
        'SecretMirror src/r-tls',
        'VaultConnection src/kts-publish-vault',
      ]);
      expect(byKey.get('SecretMirror src/r-tls')!.spec).toEqual({
        source: { kind: 'Secret', name: 'r-tls' },
        destination: { namespaces: ['team-.*', 'prod'] },
      });
      expect(byKey.get('SecretMirror src/k-cfg')!.spec).toEqual({
        source: { kind: 'ConfigMap', name: 'k-cfg' },
        destination: { namespaceSelector: { matchLabels: { team: 'a' } } },
      });
      expect(byKey.get('SecretMirror src/k-all')!.spec).toEqual({
        source: { kind: 'Secret', name: 'k-all' },
        destination: { namespaceSelector: {}, excludeNamespaces: SYSTEM },
      });
      expect(byKey.get('ClusterSecretMirror /cs-prefix')!.spec).toEqual({
        source: { kind: 'Secret', namespace: 'src', name: 'cs-source' },
        destination: {
          namespaces: ['(?:team).*'],
          excludeNamespaces: ['(?:team-b).*'],
          name: 'cs-prefix',
        },
        template: { keys: [{ from: 'v' }], type: 'Opaque' },
      });
      expect(byKey.get('ClusterSecretMirror /cs-inline')!.spec).toEqual({
        source: { kind: 'Secret', namespace: 'mirrorhub-system', name: 'cs-inline' },
        destination: { namespaces: ['.*'], excludeNamespaces: SYSTEM, name: 'cs-inline' },
      });
      expect(byKey.get('Secret mirrorhub-system/cs-inline')).toMatchObject({
        type: 'Opaque',
        data: { token: b64('inline-value') },
      });
      expect(byKey.get('SecretMirror src/kts-m')!.spec).toEqual({
        source: { kind: 'Secret', name: 'kts-tls' },
        destination: { namespaces: ['.*(?:team).*'] },
        deletePolicy: 'Delete',
        pollPeriodSeconds: 180,
      });
      expect(byKey.get('SecretMirror src/kts-publish')!.spec).toEqual({
        source: { kind: 'Secret', name: 'kts-tls' },
        destination: {
          vault: {
            connectionRef: { kind: 'VaultConnection', name: 'kts-publish-vault' },
            path: 'secret/published/kts-tls',
            kvVersion: 2,
            encoding: 'Base64',
          },
        },
        deletePolicy: 'Retain',
      });
      expect(byKey.get('VaultConnection src/kts-publish-vault')!.spec).toEqual({
        address: 'https://vault.example.com:8200',
        auth: {
          appRole: {
            mountPath: 'approle',
            roleIdSecretRef: { name: 'vault-approle', key: 'role-id' },
            secretIdSecretRef: { name: 'vault-approle', key: 'secret-id' },
          },
        },
      });

      // Before and after, per anchoring style, on this cluster.
      const lists = (mirror: string) => {
        const at = r.stderr.indexOf(`${mirror} (from `);
        expect(at).toBeGreaterThanOrEqual(0);
        return r.stderr
          .slice(at)
          .split('\n')
          .slice(1, 4)
          .map((l) => l.trim());
      };
      const others = ['app-team-c', 'default', 'prod', 'src', 'team-a', 'team-b'];
      // whole name (.NET): team-.* does not select app-team-c
      expect(lists('SecretMirror src/r-tls')).toEqual([
        'before (reflector): prod, team-a, team-b',
        'after (mirrorhub): prod, team-a, team-b',
        'same namespaces',
      ]);
      // start-anchored (Python re.match): team selects team-a (team-b avoided), not app-team-c
      expect(lists('ClusterSecretMirror cs-prefix')).toEqual([
        'before (ClusterSecret): team-a',
        'after (mirrorhub): team-a',
        'same namespaces',
      ]);
      // unanchored (Go): team selects app-team-c too
      expect(lists('SecretMirror src/kts-m')).toEqual([
        'before (KTS): app-team-c, team-a, team-b',
        'after (mirrorhub): app-team-c, team-a, team-b',
        'same namespaces',
      ]);
      // label selector
      expect(lists('SecretMirror src/k-cfg')).toEqual([
        'before (kubed): team-a',
        'after (mirrorhub): team-a',
        'same namespaces',
      ]);
      // everything: the system namespaces are dropped, and said so
      const all = r.stderr.slice(r.stderr.indexOf('SecretMirror src/k-all (from '));
      expect(all).toContain(
        `before (kubed): ${[...others.filter((n) => n !== 'src'), ...SYSTEM].sort().join(', ')}`,
      );
      expect(all).toContain(`after (mirrorhub): ${others.filter((n) => n !== 'src').join(', ')}`);
      expect(all).toContain('not kube-system: a system namespace mirrorhub never writes to');
      expect(r.stderr).toContain(
        'note: SecretMirror src/k-all: excludeNamespaces kube-node-lease, kube-public, kube-system, mirrorhub-system',
      );
      const inline = r.stderr.slice(r.stderr.indexOf('ClusterSecretMirror cs-inline (from '));
      expect(inline).toContain(`after (mirrorhub): ${others.join(', ')}`);
    });

    it('--kubed-context maps sync-contexts to MirrorClusters: nothing is refused', async () => {
      const r = await cli([
        'migrate',
        '--kubeconfig',
        kubeconfig,
        '--kubed-context',
        'eu=eu-1',
        '--kubed-context',
        'us=us-1/apps',
      ]);
      expect(r.stderr).not.toContain('cannot translate');
      expect(r.code).toBe(0);
      const objects = loadAllYaml(r.stdout) as {
        kind: string;
        metadata: { name: string };
        spec: unknown;
      }[];
      expect(objects.filter((o) => o.metadata.name.startsWith('kubed-'))).toEqual([
        {
          apiVersion: 'mirrorhub.io/v1alpha1',
          kind: 'ClusterSecretMirror',
          metadata: { name: 'kubed-src-k-remote-apps' },
          spec: {
            source: { kind: 'Secret', namespace: 'src', name: 'k-remote' },
            destination: { clusters: { names: ['us-1'] }, namespaces: ['apps'] },
          },
        },
        {
          apiVersion: 'mirrorhub.io/v1alpha1',
          kind: 'ClusterSecretMirror',
          metadata: { name: 'kubed-src-k-remote-src' },
          spec: {
            source: { kind: 'Secret', namespace: 'src', name: 'k-remote' },
            destination: { clusters: { names: ['eu-1'] }, namespaces: ['src'] },
          },
        },
      ]);
    });

    it('--out writes one file per object that kubectl applies to the mirrorhub CRDs, and never overwrites', async () => {
      const dir = join(await mkdtemp(join(tmpdir(), 'mirrorhub-migrate-')), 'out');
      const r = await cli(['migrate', '--kubeconfig', kubeconfig, '--continue', '--out', dir]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('');
      const files = (await readdir(dir)).sort();
      expect(files).toContain('clustersecretmirror-cs-prefix.yaml');
      expect(files).toContain('secretmirror-src-r-tls.yaml');
      expect(files).toHaveLength(9);
      // Strict: every field the converter writes (KTS's `encoding` included) is in the CRDs.
      const applied = await exec(kubectl, [
        '--kubeconfig',
        kubeconfig,
        'apply',
        '--validate=strict',
        '-f',
        dir,
      ]);
      expect(applied.stdout).toContain('clustersecretmirror.mirrorhub.io/cs-prefix created');
      expect(applied.stdout).toContain('secretmirror.mirrorhub.io/r-tls created');

      const before = await readFile(join(dir, 'secretmirror-src-r-tls.yaml'), 'utf8');
      await writeFile(join(dir, 'secretmirror-src-k-cfg.yaml'), 'mine\n');
      const again = await cli(['migrate', '--kubeconfig', kubeconfig, '--continue', '--out', dir]);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/already exist.*never overwrites a file/);
      expect(await readFile(join(dir, 'secretmirror-src-k-cfg.yaml'), 'utf8')).toBe('mine\n');
      expect(await readFile(join(dir, 'secretmirror-src-r-tls.yaml'), 'utf8')).toBe(before);
    });

    it("--plan: per rule, create, take over the old tool's own copy, leave anything else alone", async () => {
      const r = await cli(['migrate', '--kubeconfig', kubeconfig, '--continue', '--plan']);
      expect(r.code).toBe(0);
      const block = (mirror: string) => {
        const start = r.stdout.indexOf(`${mirror}  (from `);
        expect(start).toBeGreaterThanOrEqual(0);
        return r.stdout
          .slice(start, r.stdout.indexOf('\n\n', start))
          .split('\n')
          .map((l) => l.trim());
      };
      expect(block('SecretMirror src/r-tls')).toEqual(
        expect.arrayContaining([
          'create      prod/r-tls',
          'take over   team-a/r-tls  (reflector copy of this source)',
          'leave alone team-b/r-tls  (no other tool marks it as a copy of this source)',
        ]),
      );
      expect(block('SecretMirror src/k-all')).toEqual(
        expect.arrayContaining([
          'take over   team-b/k-all  (kubed copy of this source)',
          'create      team-a/k-all',
          'stays       kube-public/k-all  (a system namespace mirrorhub never writes to; mirrorhub does not touch it)',
        ]),
      );
      expect(block('ClusterSecretMirror cs-prefix')).toEqual(
        expect.arrayContaining([
          'take over   team-a/cs-prefix  (ClusterSecret copy of this source)',
        ]),
      );
      expect(block('SecretMirror src/kts-m')).toEqual(
        expect.arrayContaining([
          'take over   app-team-c/kts-tls  (KTS copy of this source)',
          'create      team-a/kts-tls',
          'create      team-b/kts-tls',
        ]),
      );
      expect(block('SecretMirror src/kts-publish')).toEqual(
        expect.arrayContaining([
          "writes Vault secret/published/kts-tls; no copies in this cluster's namespaces",
        ]),
      );
      expect(r.stderr).toContain('cannot translate Secret src/k-remote (kubed)');
    });
  });
});
