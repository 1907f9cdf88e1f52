// Copies carry no other controller's ownership marks (docs/security.md, attack 5). A copy is
// mirrorhub's: with Helm's release marks, `helm install` would adopt it (and keep its data); with
// Argo CD's tracking label, the Application would claim it, report it out of sync and prune it.
// The hub drops such keys of a source from every copy; a mirror whose template adds them is
// refused by the agent's policy (PolicyDenied in status and as an Event), and nothing is written.
// Real kube-apiserver, real hub and agent, real helm. The API server's own refusal of such a
// write by the agent's identity is test/src/admission.test.ts.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { isolatedHelm, type Helm } from '../support/helm.js';

/** Every key of other controllers' this suite puts on sources and templates. */
const FOREIGN = [
  'app.kubernetes.io/managed-by',
  'app.kubernetes.io/instance',
  'meta.helm.sh/release-name',
  'meta.helm.sh/release-namespace',
  'argocd.argoproj.io/tracking-id',
];

const HELM_MARKS = {
  labels: { 'app.kubernetes.io/managed-by': 'Helm' },
  annotations: { 'meta.helm.sh/release-name': 'db', 'meta.helm.sh/release-namespace': 'team-b' },
};

/** A chart that, released as `db`, holds the Secret `db-postgresql` with its own password. */
async function writePostgresChart(dir: string): Promise<string> {
  const chart = join(dir, 'postgresql');
  await mkdir(join(chart, 'templates'), { recursive: true });
  await writeFile(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: postgresql\nversion: 0.1.0\n');
  await writeFile(
    join(chart, 'templates', 'secret.yaml'),
    [
      'apiVersion: v1',
      'kind: Secret',
      'metadata:',
      '  name: {{ .Release.Name }}-postgresql',
      'stringData:',
      '  postgres-password: chart-password',
      '',
    ].join('\n'),
  );
  return chart;
}

describe("other controllers' ownership marks never travel", () => {
  let e: Engine;
  let helm: Helm;
  let dir: string;
  let chart: string;

  beforeAll(async () => {
    [e, helm] = await Promise.all([Engine.start(), isolatedHelm()]);
    dir = await mkdtemp(join(tmpdir(), 'mirrorhub-foreign-'));
    chart = await writePostgresChart(dir);
    for (const ns of ['src', 'tenant', 'app-1', 'app-2', 'team-b', 'team-c']) {
      await e.ensureNamespace(ns);
    }
  }, 20 * 60_000);

  afterAll(async () => {
    await e?.stop();
    await helm?.cleanup();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const metadataKeys = (o: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  }) => [...Object.keys(o.metadata?.labels ?? {}), ...Object.keys(o.metadata?.annotations ?? {})];

  /** Copies (mirrorhub's marks) that carry any of FOREIGN, cluster-wide. */
  const foreignCopies = async () =>
    (
      await e.core().listSecretForAllNamespaces({
        labelSelector: 'mirrorhub.io/managed-by=mirrorhub',
      })
    ).items
      .filter((s) => metadataKeys(s).some((k) => FOREIGN.includes(k)))
      .map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`);

  /** `helm install db` of the chart into `ns`. */
  const installDb = (ns: string) => [
    'install',
    'db',
    chart,
    '--namespace',
    ns,
    '--kubeconfig',
    e.kit.cluster('hub').kubeconfigPath,
  ];

  it('copies of an Argo CD-tracked source carry neither its tracking label nor its annotation, so Argo CD does not claim them', async () => {
    await e.putSecret(
      'src',
      'db',
      { password: 'p' },
      {
        metadata: {
          labels: { 'app.kubernetes.io/instance': 'myapp', 'app.kubernetes.io/name': 'db' },
          annotations: { 'argocd.argoproj.io/tracking-id': 'myapp:/Secret:src/db', note: 'n' },
        },
      },
    );
    await e.applyMirror(
      secretMirror('src', 'db', {
        source: { kind: 'Secret', name: 'db' },
        destination: { namespaces: ['app-1', 'app-2'] },
        pollPeriodSeconds: 3600,
      }),
    );
    for (const ns of ['app-1', 'app-2']) {
      await eventually(async () => expect(await e.secretData(ns, 'db')).toEqual({ password: 'p' }));
      const copy = (await e.readSecret(ns, 'db'))!;
      // Descriptive metadata and mirrorhub's own marks travel; the tracking marks do not.
      expect(copy.metadata?.labels).toMatchObject({
        'app.kubernetes.io/name': 'db',
        'mirrorhub.io/managed-by': 'mirrorhub',
      });
      expect(copy.metadata?.annotations).toMatchObject({
        note: 'n',
        'mirrorhub.io/origin': 'hub/src/db',
      });
      expect(copy.metadata?.labels?.['app.kubernetes.io/instance']).toBeUndefined();
      expect(copy.metadata?.annotations?.['argocd.argoproj.io/tracking-id']).toBeUndefined();
    }
    // What Argo CD's label tracking lists as the Application's resources: the source alone.
    const tracked = await e
      .core()
      .listSecretForAllNamespaces({ labelSelector: 'app.kubernetes.io/instance=myapp' });
    expect(tracked.items.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`)).toEqual([
      'src/db',
    ]);
    const m = await e.mirrorStatus('SecretMirror', 'db', 'src', (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
    expect(m.status?.problems ?? []).toEqual([]);
  });

  it("a copy of a source with Helm's release marks does not carry them: helm install does not adopt it", async () => {
    // The tenant's own Secret, as their Helm release of the same name left it.
    await e.putSecret('tenant', 'pg', { 'postgres-password': 'planted' }, { metadata: HELM_MARKS });
    await e.applyMirror(
      secretMirror('tenant', 'squat', {
        source: { kind: 'Secret', name: 'pg' },
        destination: { namespaces: ['team-b'], name: 'db-postgresql' },
        pollPeriodSeconds: 3600,
      }),
    );
    await eventually(async () =>
      expect(await e.secretData('team-b', 'db-postgresql')).toEqual({
        'postgres-password': 'planted',
      }),
    );
    expect(await foreignCopies()).toEqual([]);
    // Helm refuses to take over an object without its release marks: the team sees the
    // conflict instead of a release that silently keeps the planted password.
    const err = await helm.fails(installDb('team-b'));
    expect(err).toMatch(/db-postgresql.*exists and cannot be imported into the current release/s);
    expect(err).toContain('invalid ownership metadata');
    const s = (await e.readSecret('team-b', 'db-postgresql'))!;
    expect(s.metadata?.labels?.['app.kubernetes.io/managed-by']).toBeUndefined();
    expect(s.metadata?.annotations?.['meta.helm.sh/release-name']).toBeUndefined();
  });

  it("a template adding Helm's release marks is refused: PolicyDenied in status and as an Event, no copy anywhere", async () => {
    await e.putSecret('tenant', 'pg2', { 'postgres-password': 'planted' });
    await e.applyMirror(
      secretMirror('tenant', 'squat-template', {
        source: { kind: 'Secret', name: 'pg2' },
        // The tenant's own namespace too: its author reads the rule for that one.
        destination: { namespaces: ['tenant', 'team-c'], name: 'db-postgresql' },
        template: {
          labels: HELM_MARKS.labels,
          annotations: { ...HELM_MARKS.annotations, 'meta.helm.sh/release-namespace': 'team-c' },
        },
        pollPeriodSeconds: 3600,
      }),
    );
    const m = await e.mirrorStatus('SecretMirror', 'squat-template', 'tenant', (m) =>
      expect(m.status?.counts).toMatchObject({ namespaces: 2, synced: 0, denied: 2 }),
    );
    expect(m.status?.problems).toContainEqual({
      cluster: 'hub',
      namespace: 'tenant',
      state: 'PolicyDenied',
      message: expect.stringMatching(
        /^PolicyDenied \(policy\.metadata\.foreignOwnership\): label app\.kubernetes\.io\/managed-by is another controller's ownership or tracking mark \(.*Helm.*\).*template\.labels/,
      ),
    });
    // Another team's namespace: the state alone, as for every refusal there.
    expect(m.status?.problems).toContainEqual(
      expect.objectContaining({ namespace: 'team-c', state: 'PolicyDenied' }),
    );
    await e.eventWith('tenant', 'squat-template', 'PolicyDenied');
    // The MirrorDelivery, which the cluster's administrators read, names the rule.
    const delivery = (await e.deliveries()).find((d) => d.spec.mirror.name === 'squat-template');
    expect(delivery?.status?.message).toMatch(
      /^PolicyDenied \(policy\.metadata\.foreignOwnership\)/,
    );
    for (const ns of ['tenant', 'team-c']) {
      expect(await e.readSecret(ns, 'db-postgresql')).toBeUndefined();
    }
    expect(await foreignCopies()).toEqual([]);
    // The team's own release is theirs, with the chart's password.
    expect(await helm(installDb('team-c'))).toContain('STATUS: deployed');
    expect(await e.secretData('team-c', 'db-postgresql')).toEqual({
      'postgres-password': 'chart-password',
    });
  });
});

describe("a follower's owner who changes the list", () => {
  let e: Engine;

  beforeAll(async () => {
    // This cluster runs no Argo CD, so its owner lets Argo CD's tracking label through; Helm's
    // release marks stay refused.
    e = await Engine.start({
      agent: { policy: { metadata: { foreignOwnership: ['meta.helm.sh/*'] } } },
    });
    for (const ns of ['src', 'app-1']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'db', { password: 'p' });
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('a template may add a key the owner took out of the list; one still on it is refused', async () => {
    await e.applyMirror(
      secretMirror('src', 'db', {
        source: { kind: 'Secret', name: 'db' },
        destination: { namespaces: ['app-1'] },
        template: { labels: { 'app.kubernetes.io/instance': 'myapp' } },
        pollPeriodSeconds: 3600,
      }),
    );
    await eventually(async () => {
      const copy = await e.readSecret('app-1', 'db');
      expect(copy?.metadata?.labels?.['app.kubernetes.io/instance']).toBe('myapp');
    });
    await e.applyMirror(
      secretMirror('src', 'helm', {
        source: { kind: 'Secret', name: 'db' },
        destination: { namespaces: ['src'], name: 'db-postgresql' },
        template: { annotations: { 'meta.helm.sh/release-name': 'db' } },
        pollPeriodSeconds: 3600,
      }),
    );
    const m = await e.mirrorStatus('SecretMirror', 'helm', 'src', (m) =>
      expect(m.status?.counts).toMatchObject({ namespaces: 1, denied: 1 }),
    );
    expect(m.status?.problems?.[0]?.message).toMatch(
      /^PolicyDenied \(policy\.metadata\.foreignOwnership\): annotation meta\.helm\.sh\/release-name .*Helm: release-name and release-namespace/,
    );
    expect(await e.readSecret('src', 'db-postgresql')).toBeUndefined();
  });
});
