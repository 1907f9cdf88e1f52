// Argo CD health for mirrorhub's kinds: the hub chart's argocd/health.lua, run by gopher-lua
// (what Argo CD embeds, through our infra/tools/argo-health) with `obj` set to objects read back
// from a real kube-apiserver, each in a state the controllers report through the status
// subresource as the conditions contract says (Ready / Reconciling / Stalled, docs/gitops.md).
// Then the chart's NOTES print that same script under each kind's argocd-cm key.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

import { ensureArgoHealth } from '@mirrorhub/infra/components/index';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';

import { chartsDir, installCrds } from './support/crds.js';
import { isolatedHelm, type Helm } from './support/helm.js';

const run = promisify(execFile);
const GROUP = 'mirrorhub.io';
const VERSION = 'v1alpha1';
const NS = 'team-a';
const HUB_CHART = join(chartsDir, 'mirrorhub-hub');
const SCRIPT = join(HUB_CHART, 'argocd', 'health.lua');
const KINDS = [
  'SecretMirror',
  'ClusterSecretMirror',
  'MirrorCluster',
  'VaultConnection',
  'ClusterVaultConnection',
] as const;
type Kind = (typeof KINDS)[number];

const PLURAL: Record<Kind, string> = {
  SecretMirror: 'secretmirrors',
  ClusterSecretMirror: 'clustersecretmirrors',
  MirrorCluster: 'mirrorclusters',
  VaultConnection: 'vaultconnections',
  ClusterVaultConnection: 'clustervaultconnections',
};
const NAMESPACED: Record<Kind, boolean> = {
  SecretMirror: true,
  ClusterSecretMirror: false,
  MirrorCluster: false,
  VaultConnection: true,
  ClusterVaultConnection: false,
};

const SPEC: Record<Kind, Record<string, unknown>> = {
  SecretMirror: {
    source: { kind: 'Secret', name: 'tls' },
    destination: { namespaces: ['app-.+'] },
  },
  ClusterSecretMirror: {
    source: { kind: 'Secret', name: 'registry', namespace: 'platform' },
    destination: { namespaces: ['team-.+'] },
  },
  MirrorCluster: { inCluster: true, agentNamespace: 'mirrorhub-system' },
  VaultConnection: {
    address: 'https://vault.example.com:8200',
    auth: { token: { secretRef: { name: 'vault-token', key: 'token' } } },
  },
  ClusterVaultConnection: {
    address: 'https://vault.example.com:8200',
    auth: { kubernetes: { role: 'mirrorhub' } },
  },
};
/** A Vault-sourced mirror, for the "Vault unreadable" states. */
const VAULT_MIRROR_SPEC = {
  source: {
    kind: 'Vault',
    vault: { connectionRef: { kind: 'VaultConnection', name: 'vault' }, path: 'secret/team-a/db' },
  },
  destination: { namespaces: ['app-.+'], name: 'db' },
};

interface Cond {
  type: 'Ready' | 'Reconciling' | 'Stalled';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

interface Case {
  name: string;
  kind: Kind;
  spec?: Record<string, unknown>;
  /** A spec change after the status write: the generation moves past observedGeneration. */
  thenChangeSpec?: Record<string, unknown>;
  conditions?: Cond[];
  /** Extra status fields (the kinds' own vocabulary, e.g. phase). */
  status?: Record<string, unknown>;
  want: { status: 'Healthy' | 'Progressing' | 'Degraded' | 'Suspended'; message: string };
}

const ready = (message: string): Cond => ({
  type: 'Ready',
  status: 'True',
  reason: 'Ready',
  message,
});
const notReady = (reason: string, message: string): Cond => ({
  type: 'Ready',
  status: 'False',
  reason,
  message,
});
const reconciling = (reason: string, message: string): Cond => ({
  type: 'Reconciling',
  status: 'True',
  reason,
  message,
});
const stalled = (reason: string, message: string): Cond => ({
  type: 'Stalled',
  status: 'True',
  reason,
  message,
});

const CASES: Case[] = [
  {
    name: 'an Active mirror is Healthy',
    kind: 'SecretMirror',
    status: { phase: 'Active' },
    conditions: [ready('2/2 namespaces synced')],
    want: { status: 'Healthy', message: '2/2 namespaces synced' },
  },
  {
    name: 'a mirror rolling out a change (Reconciling) is Progressing',
    kind: 'ClusterSecretMirror',
    status: { phase: 'Pending' },
    conditions: [
      notReady('Progressing', 'delivering to 1 of 3 clusters'),
      reconciling('Progressing', 'delivering generation 1 to 3 clusters'),
    ],
    want: { status: 'Progressing', message: 'delivering generation 1 to 3 clusters' },
  },
  {
    name: 'a mirror whose new spec the controller has not observed yet is Progressing',
    kind: 'SecretMirror',
    status: { phase: 'Active' },
    conditions: [ready('2/2 namespaces synced')],
    thenChangeSpec: { destination: { namespaces: ['app-.+', 'web-.+'] } },
    want: { status: 'Progressing', message: 'Waiting for the controller to observe generation 2' },
  },
  {
    name: 'a mirror whose source is missing (retried) is Progressing',
    kind: 'SecretMirror',
    status: { phase: 'Pending' },
    conditions: [
      notReady('SourceNotFound', 'Secret team-a/tls does not exist'),
      reconciling('SourceNotFound', 'waiting for Secret team-a/tls to exist'),
    ],
    want: { status: 'Progressing', message: 'waiting for Secret team-a/tls to exist' },
  },
  {
    name: 'a mirror with an invalid spec (Stalled) is Degraded',
    kind: 'SecretMirror',
    status: { phase: 'Error' },
    conditions: [
      notReady('InvalidSpec', 'destination.namespaces[0] does not compile'),
      stalled('InvalidSpec', 'destination.namespaces[0] "app-(" does not compile: fix the pattern'),
    ],
    want: {
      status: 'Degraded',
      message: 'destination.namespaces[0] "app-(" does not compile: fix the pattern',
    },
  },
  {
    name: 'a mirror every namespace of which is refused by policy (Stalled) is Degraded',
    kind: 'ClusterSecretMirror',
    status: { phase: 'Error' },
    conditions: [
      notReady('PolicyDenied', '3 namespaces are refused'),
      stalled('PolicyDenied', "every target namespace is refused by the clusters' policy"),
    ],
    want: {
      status: 'Degraded',
      message: "every target namespace is refused by the clusters' policy",
    },
  },
  {
    name: 'a mirror whose Vault path may not be read (Stalled) is Degraded',
    kind: 'SecretMirror',
    spec: VAULT_MIRROR_SPEC,
    status: { phase: 'Error' },
    conditions: [
      notReady('VaultPermissionDenied', 'permission denied on secret/team-a/db'),
      stalled('VaultPermissionDenied', 'grant read on secret/data/team-a/db to the role'),
    ],
    want: { status: 'Degraded', message: 'grant read on secret/data/team-a/db to the role' },
  },
  {
    name: 'a mirror whose Vault is unavailable (retried) is Progressing',
    kind: 'SecretMirror',
    spec: VAULT_MIRROR_SPEC,
    status: { phase: 'Error' },
    conditions: [
      notReady('VaultUnavailable', 'Vault answered 503'),
      reconciling('VaultUnavailable', 'retrying: Vault answered 503'),
    ],
    want: { status: 'Progressing', message: 'retrying: Vault answered 503' },
  },
  {
    name: 'a Degraded mirror neither stalled nor reconciling is Degraded',
    kind: 'SecretMirror',
    status: { phase: 'Degraded' },
    conditions: [notReady('Conflict', '1 namespace holds a Secret mirrorhub does not own')],
    want: { status: 'Degraded', message: '1 namespace holds a Secret mirrorhub does not own' },
  },
  {
    name: 'a stalled condition about an older generation does not hide the new one',
    kind: 'SecretMirror',
    status: { phase: 'Error' },
    conditions: [
      notReady('InvalidSpec', 'bad pattern'),
      stalled('InvalidSpec', 'bad pattern: fix it'),
    ],
    thenChangeSpec: { destination: { namespaces: ['app-.*'] } },
    want: { status: 'Progressing', message: 'Waiting for the controller to observe generation 2' },
  },
  {
    name: 'a suspended mirror is Suspended whatever its status',
    kind: 'ClusterSecretMirror',
    spec: { ...SPEC.ClusterSecretMirror, suspend: true },
    status: { phase: 'Error' },
    conditions: [notReady('SourceNotFound', 'gone'), stalled('InvalidSpec', 'bad')],
    want: {
      status: 'Suspended',
      message: 'Suspended (spec.suspend is true): nothing is written or deleted',
    },
  },
  {
    name: 'an object no controller has reported on yet is Progressing',
    kind: 'ClusterSecretMirror',
    want: { status: 'Progressing', message: 'Waiting for the controller to report' },
  },
  {
    name: 'a reachable MirrorCluster with a heartbeating agent is Healthy',
    kind: 'MirrorCluster',
    conditions: [ready('reachable, agent 0.1.0 heartbeating')],
    want: { status: 'Healthy', message: 'reachable, agent 0.1.0 heartbeating' },
  },
  {
    name: 'an unreachable MirrorCluster (retried) is Progressing',
    kind: 'MirrorCluster',
    conditions: [
      notReady('Unreachable', 'connect ECONNREFUSED'),
      reconciling('ClusterUnreachable', 'probing again: connect ECONNREFUSED'),
    ],
    want: { status: 'Progressing', message: 'probing again: connect ECONNREFUSED' },
  },
  {
    name: 'a MirrorCluster that refuses the hub (Stalled) is Degraded',
    kind: 'MirrorCluster',
    conditions: [
      notReady('Forbidden', 'the hub may not list leases'),
      stalled('Forbidden', 'bind the hub-access Role to the hub in mirrorhub-system'),
    ],
    want: {
      status: 'Degraded',
      message: 'bind the hub-access Role to the hub in mirrorhub-system',
    },
  },
  {
    name: 'a VaultConnection that logs in is Healthy',
    kind: 'VaultConnection',
    status: { ready: true, authMethod: 'token' },
    conditions: [ready('logged in')],
    want: { status: 'Healthy', message: 'logged in' },
  },
  {
    name: 'a VaultConnection whose token is refused (Stalled) is Degraded',
    kind: 'VaultConnection',
    status: { ready: false, authMethod: 'token' },
    conditions: [
      notReady('VaultPermissionDenied', 'permission denied'),
      stalled('VaultPermissionDenied', 'the token in Secret vault-token is refused: replace it'),
    ],
    want: {
      status: 'Degraded',
      message: 'the token in Secret vault-token is refused: replace it',
    },
  },
  {
    name: 'a ClusterVaultConnection whose Vault is down (retried) is Progressing',
    kind: 'ClusterVaultConnection',
    status: { ready: false, authMethod: 'kubernetes' },
    conditions: [
      notReady('VaultUnavailable', 'connect ECONNREFUSED'),
      reconciling('VaultUnavailable', 'retrying login: connect ECONNREFUSED'),
    ],
    want: { status: 'Progressing', message: 'retrying login: connect ECONNREFUSED' },
  },
  {
    name: 'a ClusterVaultConnection that logs in is Healthy',
    kind: 'ClusterVaultConnection',
    status: { ready: true, authMethod: 'kubernetes' },
    conditions: [ready('logged in')],
    want: { status: 'Healthy', message: 'logged in' },
  },
];

let kit: Kit;
let kc: KubeConfig;
let custom: CustomObjectsApi;
let argoHealth: string;
let helm: Helm;

beforeAll(async () => {
  [kit, argoHealth, helm] = await Promise.all([
    startKit({ clusters: ['hub'], aws: false }),
    ensureArgoHealth(),
    isolatedHelm(),
  ]);
  kc = kit.cluster('hub').kubeConfig();
  custom = kc.makeApiClient(CustomObjectsApi);
  await installCrds(kc, 'mirrorhub-hub');
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
}, 20 * 60_000);

afterAll(async () => {
  await helm?.cleanup();
  await kit?.stop();
});

type Obj = {
  metadata: { name: string; generation?: number; resourceVersion?: string };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

function ref(kind: Kind, name: string) {
  return {
    group: GROUP,
    version: VERSION,
    plural: PLURAL[kind],
    name,
    ...(NAMESPACED[kind] ? { namespace: NS } : {}),
  };
}

async function read(kind: Kind, name: string): Promise<Obj> {
  const r = ref(kind, name);
  return (await (NAMESPACED[kind]
    ? custom.getNamespacedCustomObject(r as typeof r & { namespace: string })
    : custom.getClusterCustomObject(r))) as Obj;
}

async function create(kind: Kind, name: string, spec: Record<string, unknown>): Promise<void> {
  const body = {
    apiVersion: `${GROUP}/${VERSION}`,
    kind,
    metadata: { name, ...(NAMESPACED[kind] ? { namespace: NS } : {}) },
    spec,
  };
  const { name: _, ...r } = ref(kind, name);
  await (NAMESPACED[kind]
    ? custom.createNamespacedCustomObject({ ...(r as typeof r & { namespace: string }), body })
    : custom.createClusterCustomObject({ ...r, body }));
}

/** JSON-patches the object (its status through the status subresource). */
async function patch(kind: Kind, name: string, ops: object[], status: boolean): Promise<void> {
  const r = { ...ref(kind, name), body: ops };
  const c = custom;
  if (NAMESPACED[kind]) {
    const nr = r as typeof r & { namespace: string };
    await (status ? c.patchNamespacedCustomObjectStatus(nr) : c.patchNamespacedCustomObject(nr));
  } else {
    await (status ? c.patchClusterCustomObjectStatus(r) : c.patchClusterCustomObject(r));
  }
}

/** Runs the chart's script on `obj` as Argo CD does. */
async function health(obj: unknown): Promise<{ status: string; message: string }> {
  const child = run(argoHealth, [SCRIPT]);
  child.child.stdin!.end(JSON.stringify(obj));
  const { stdout } = await child;
  return JSON.parse(stdout) as { status: string; message: string };
}

describe('Argo CD health checks (charts/mirrorhub-hub/argocd/health.lua under gopher-lua)', () => {
  it.each(CASES.map((c, i) => [c.name, c, i] as const))('%s', async (_name, c, i) => {
    const name = `case-${i}`;
    await create(c.kind, name, c.spec ?? SPEC[c.kind]);
    const generation = (await read(c.kind, name)).metadata.generation ?? 1;
    if (c.conditions || c.status) {
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      const status = {
        ...c.status,
        observedGeneration: generation,
        conditions: (c.conditions ?? []).map((cond) => ({
          ...cond,
          observedGeneration: generation,
          lastTransitionTime: now,
        })),
      };
      await patch(c.kind, name, [{ op: 'add', path: '/status', value: status }], true);
    }
    if (c.thenChangeSpec) {
      const ops = Object.entries(c.thenChangeSpec).map(([k, v]) => ({
        op: 'add',
        path: `/spec/${k}`,
        value: v,
      }));
      await patch(c.kind, name, ops, false);
    }
    const obj = await read(c.kind, name);
    // The API server kept what the controllers would write (no field pruned by the schema).
    if (c.conditions) {
      expect((obj.status?.['conditions'] as Cond[]).map((x) => x.type)).toEqual(
        c.conditions.map((x) => x.type),
      );
    }
    if (c.thenChangeSpec) expect(obj.metadata.generation).toBe(generation + 1);
    expect(await health(obj)).toEqual(c.want);
  });

  it('covers every kind', () => {
    expect(new Set(CASES.map((c) => c.kind))).toEqual(new Set(KINDS));
  });

  it("the hub chart's NOTES print the script under each kind's argocd-cm key", async () => {
    const out = await helm([
      'install',
      'mirrorhub',
      HUB_CHART,
      '--dry-run',
      '--kubeconfig',
      kit.cluster('hub').kubeconfigPath,
      '--namespace',
      'mirrorhub-system',
      '--set',
      'signing.existingSecret=mirrorhub-hub-signing',
      '--set',
      'argocd.healthChecks=true',
    ]);
    const notes = out.slice(out.indexOf('\nNOTES:\n'));
    const snippet = /---8<--- argocd-cm data\n([\s\S]*?)\n---8<---/.exec(notes)?.[1];
    expect(snippet).toBeDefined();
    const data = parseYaml(snippet!) as Record<string, string>;
    const lua = readFileSync(SCRIPT, 'utf8');
    expect(data).toEqual(
      Object.fromEntries(
        KINDS.map((k) => [`resource.customizations.health.mirrorhub.io_${k}`, lua]),
      ),
    );
  });

  it('the NOTES say nothing about Argo CD by default', async () => {
    const out = await helm([
      'install',
      'mirrorhub',
      HUB_CHART,
      '--dry-run',
      '--kubeconfig',
      kit.cluster('hub').kubeconfigPath,
      '--namespace',
      'mirrorhub-system',
      '--set',
      'signing.existingSecret=mirrorhub-hub-signing',
    ]);
    expect(out).toContain('\nNOTES:\n');
    expect(out).not.toContain('argocd-cm');
  });
});
