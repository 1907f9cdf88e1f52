import { describe, expect, it } from 'vitest';
import { convert } from './index.js';
import type { ClusterSecret, Inventory, KtsMirror, Listed } from './model.js';
import { planRules } from './plan.js';

const OPTS = { agentNamespace: 'mirrorhub-system', sourceNamespace: 'mirrorhub-system' };
const R = 'reflector.v1.k8s.emberstack.com';
const NAMESPACES = [
  'default',
  'kube-system',
  'kube-public',
  'kube-node-lease',
  'mirrorhub-system',
  'src',
  'team-a',
  'team-b',
  'app-team-c',
  'prod',
].map((name) => ({ name, labels: name.startsWith('team-') ? { team: name.slice(5) } : {} }));

function inventory(parts: Partial<Inventory>): Inventory {
  return {
    namespaces: NAMESPACES,
    secrets: [],
    configMaps: [],
    clusterSecrets: [],
    ktsMirrors: [],
    ...parts,
  };
}

const secret = (namespace: string, name: string, annotations = {}, labels = {}): Listed => ({
  metadata: { namespace, name, annotations, labels },
});

const mirror = (ns: string, name: string, spec: unknown) => ({
  apiVersion: 'mirrorhub.io/v1alpha1',
  kind: 'SecretMirror',
  metadata: { name, namespace: ns },
  spec,
});

const SYSTEM = ['kube-node-lease', 'kube-public', 'kube-system', 'mirrorhub-system'];

describe('convert: each input shape -> its mirrorhub objects', () => {
  it.each<[string, Partial<Inventory>, unknown[], string[]]>([
    [
      'reflector auto, allowed list',
      {
        secrets: [
          secret('src', 'tls', {
            [`${R}/reflection-allowed`]: 'true',
            [`${R}/reflection-allowed-namespaces`]: 'team-.*, prod',
            [`${R}/reflection-auto-enabled`]: 'True',
          }),
        ],
      },
      [
        mirror('src', 'tls', {
          source: { kind: 'Secret', name: 'tls' },
          destination: { namespaces: ['team-.*', 'prod'] },
        }),
      ],
      ['team-a', 'team-b', 'prod'],
    ],
    [
      'reflector auto, allowed everywhere, no auto list: every namespace but the system ones',
      {
        configMaps: [
          secret('src', 'ca', {
            [`${R}/reflection-allowed`]: 'true',
            [`${R}/reflection-auto-enabled`]: 'true',
          }),
        ],
      },
      [
        mirror('src', 'ca', {
          source: { kind: 'ConfigMap', name: 'ca' },
          destination: { namespaces: ['.*'], excludeNamespaces: SYSTEM },
        }),
      ],
      ['default', 'team-a', 'team-b', 'app-team-c', 'prod'],
    ],
    [
      'reflector: allowed patterns AND auto plain names -> the names allowed',
      {
        secrets: [
          secret('src', 'tls', {
            [`${R}/reflection-allowed`]: 'true',
            [`${R}/reflection-allowed-namespaces`]: 'team-.*',
            [`${R}/reflection-auto-enabled`]: 'true',
            [`${R}/reflection-auto-namespaces`]: 'team-a,prod',
          }),
        ],
      },
      [
        mirror('src', 'tls', {
          source: { kind: 'Secret', name: 'tls' },
          destination: { namespaces: ['team-a'] },
        }),
      ],
      ['team-a'],
    ],
    [
      'reflector: a label selector',
      {
        secrets: [
          secret('src', 'tls', {
            [`${R}/reflection-allowed`]: 'true',
            [`${R}/reflection-auto-enabled`]: 'true',
            [`${R}/reflection-auto-namespaces-selector`]: 'team in (a)',
          }),
        ],
      },
      [
        mirror('src', 'tls', {
          source: { kind: 'Secret', name: 'tls' },
          destination: {
            namespaceSelector: {
              matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }],
            },
          },
        }),
      ],
      ['team-a'],
    ],
    [
      'reflector: manual reflections become fixed namespaces',
      {
        secrets: [
          secret('src', 'tls', { [`${R}/reflection-allowed`]: 'true' }),
          secret('prod', 'tls', { [`${R}/reflects`]: 'src/tls' }),
          secret('team-a', 'tls-copy', { [`${R}/reflects`]: 'src/tls' }),
        ],
      },
      [
        mirror('src', 'tls', {
          source: { kind: 'Secret', name: 'tls' },
          destination: { namespaces: ['prod'] },
        }),
        mirror('src', 'tls-tls-copy', {
          source: { kind: 'Secret', name: 'tls' },
          destination: { namespaces: ['team-a'], name: 'tls-copy' },
        }),
      ],
      ['prod'],
    ],
    [
      'kubed: a selector string',
      { secrets: [secret('src', 'db', { 'kubed.appscode.com/sync': 'team=a' })] },
      [
        mirror('src', 'db', {
          source: { kind: 'Secret', name: 'db' },
          destination: { namespaceSelector: { matchLabels: { team: 'a' } } },
        }),
      ],
      ['team-a'],
    ],
    [
      'kubed: "true" is every namespace but the system ones',
      { configMaps: [secret('src', 'cfg', { 'kubed.appscode.com/sync': 'true' })] },
      [
        mirror('src', 'cfg', {
          source: { kind: 'ConfigMap', name: 'cfg' },
          destination: { namespaceSelector: {}, excludeNamespaces: SYSTEM },
        }),
      ],
      ['app-team-c', 'default', 'prod', 'team-a', 'team-b'],
    ],
    [
      'kubed: set-based and negated requirements',
      { secrets: [secret('src', 'db', { 'kubed.appscode.com/sync': 'team notin (b),team' })] },
      [
        mirror('src', 'db', {
          source: { kind: 'Secret', name: 'db' },
          destination: {
            namespaceSelector: {
              matchExpressions: [
                { key: 'team', operator: 'NotIn', values: ['b'] },
                { key: 'team', operator: 'Exists' },
              ],
            },
          },
        }),
      ],
      ['team-a'],
    ],
    [
      'ClusterSecret: inline data, default matchNamespace',
      {
        clusterSecrets: [
          {
            metadata: { name: 'pull', labels: { 'app.kubernetes.io/name': 'x', keep: 'yes' } },
            type: 'kubernetes.io/dockerconfigjson',
            data: { '.dockerconfigjson': 'e30=' },
          } as ClusterSecret,
        ],
      },
      [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'pull', namespace: 'mirrorhub-system' },
          type: 'kubernetes.io/dockerconfigjson',
          data: { '.dockerconfigjson': 'e30=' },
        },
        {
          apiVersion: 'mirrorhub.io/v1alpha1',
          kind: 'ClusterSecretMirror',
          metadata: { name: 'pull' },
          spec: {
            source: { kind: 'Secret', namespace: 'mirrorhub-system', name: 'pull' },
            destination: {
              namespaces: ['.*'],
              name: 'pull',
              excludeNamespaces: [
                'kube-node-lease',
                'kube-public',
                'kube-system',
                'mirrorhub-system',
              ],
            },
            template: { labels: { keep: 'yes' } },
          },
        },
      ],
      ['app-team-c', 'default', 'prod', 'src', 'team-a', 'team-b'],
    ],
    [
      'ClusterSecret: valueFrom with keys, start-anchored patterns',
      {
        clusterSecrets: [
          {
            metadata: { name: 'db' },
            matchNamespace: ['team'],
            avoidNamespaces: ['team-b'],
            data: { valueFrom: { secretKeyRef: { name: 'db', namespace: 'src', keys: ['user'] } } },
          } as ClusterSecret,
        ],
      },
      [
        {
          apiVersion: 'mirrorhub.io/v1alpha1',
          kind: 'ClusterSecretMirror',
          metadata: { name: 'db' },
          spec: {
            source: { kind: 'Secret', namespace: 'src', name: 'db' },
            destination: {
              namespaces: ['(?:team).*'],
              excludeNamespaces: ['(?:team-b).*'],
              name: 'db',
            },
            template: { keys: [{ from: 'user' }], type: 'Opaque' },
          },
        },
      ],
      ['team-a'],
    ],
    [
      'KTS v1alpha2: secret to namespaces, unanchored',
      {
        ktsMirrors: [
          {
            apiVersion: 'mirrors.kts.studio/v1alpha2',
            metadata: { name: 'm', namespace: 'src' },
            spec: {
              source: { type: 'secret', name: 'tls' },
              destination: { type: 'namespaces', namespaces: ['team'] },
              deletePolicy: 'retain',
              pollPeriodSeconds: 180,
            },
          } as KtsMirror,
        ],
      },
      [
        mirror('src', 'm', {
          source: { kind: 'Secret', name: 'tls' },
          destination: { namespaces: ['.*(?:team).*'] },
          deletePolicy: 'Retain',
          pollPeriodSeconds: 180,
        }),
      ],
      ['app-team-c', 'team-a', 'team-b'],
    ],
    [
      'KTS: Go syntax (a POSIX class, an inline flag) is RE2 syntax',
      {
        ktsMirrors: [
          {
            apiVersion: 'mirrors.kts.studio/v1alpha2',
            metadata: { name: 'm', namespace: 'src' },
            spec: {
              source: { name: 'tls' },
              destination: { namespaces: ['^[[:alpha:]]+$', '(?i)^PROD$'] },
            },
          } as KtsMirror,
        ],
      },
      [
        mirror('src', 'm', {
          source: { kind: 'Secret', name: 'tls' },
          destination: { namespaces: ['.*(?:^[[:alpha:]]+$).*', '.*(?:(?i)^PROD$).*'] },
          deletePolicy: 'Delete',
        }),
      ],
      ['default', 'prod'],
    ],
    [
      'KTS v1alpha1: namespaceRegex',
      {
        ktsMirrors: [
          {
            apiVersion: 'mirrors.kts.studio/v1alpha1',
            metadata: { name: 'old', namespace: 'src' },
            spec: { source: { name: 'tls' }, destination: { namespaceRegex: '^team-a$' } },
          } as KtsMirror,
        ],
      },
      [
        mirror('src', 'old', {
          source: { kind: 'Secret', name: 'tls' },
          destination: { namespaces: ['.*(?:^team-a$).*'] },
          deletePolicy: 'Delete',
        }),
      ],
      ['team-a'],
    ],
    [
      'KTS v1alpha1 without namespaceRegex: every namespace, as KTS converts it',
      {
        ktsMirrors: [
          {
            apiVersion: 'mirrors.kts.studio/v1alpha1',
            metadata: { name: 'old', namespace: 'src' },
            spec: { source: { name: 'tls' }, destination: { namespace: 'prod' } },
          } as KtsMirror,
        ],
      },
      [
        mirror('src', 'old', {
          source: { kind: 'Secret', name: 'tls' },
          destination: { namespaces: ['.*'], excludeNamespaces: SYSTEM },
          deletePolicy: 'Delete',
        }),
      ],
      ['app-team-c', 'default', 'prod', 'team-a', 'team-b'],
    ],
    [
      'KTS: Vault source (approle) to namespaces',
      {
        ktsMirrors: [
          {
            apiVersion: 'mirrors.kts.studio/v1alpha2',
            metadata: { name: 'from-vault', namespace: 'src' },
            spec: {
              source: {
                type: 'vault',
                name: 'tls',
                vault: {
                  addr: 'https://vault.example.com',
                  path: '/secret/data/tls',
                  auth: { approle: { secretRef: { name: 'approle' } } },
                },
              },
              destination: { namespaces: ['prod'] },
            },
          } as KtsMirror,
        ],
      },
      [
        {
          apiVersion: 'mirrorhub.io/v1alpha1',
          kind: 'VaultConnection',
          metadata: { name: 'from-vault-vault', namespace: 'src' },
          spec: {
            address: 'https://vault.example.com',
            auth: {
              appRole: {
                mountPath: 'approle',
                roleIdSecretRef: { name: 'approle', key: 'role-id' },
                secretIdSecretRef: { name: 'approle', key: 'secret-id' },
              },
            },
          },
        },
        mirror('src', 'from-vault', {
          source: {
            kind: 'Vault',
            vault: {
              connectionRef: { kind: 'VaultConnection', name: 'from-vault-vault' },
              path: 'secret/tls',
              kvVersion: 2,
              encoding: 'Base64',
            },
          },
          destination: { namespaces: ['.*(?:prod).*'], name: 'tls' },
          deletePolicy: 'Delete',
        }),
      ],
      ['prod'],
    ],
    [
      'KTS: a KV v1 path (no data/): kvVersion 1, KTS layout read with encoding Base64',
      {
        ktsMirrors: [
          {
            apiVersion: 'mirrors.kts.studio/v1alpha2',
            metadata: { name: 'v1', namespace: 'src' },
            spec: {
              source: {
                type: 'vault',
                name: 'tls',
                vault: {
                  addr: 'https://vault.example.com',
                  path: 'kv/team/tls',
                  auth: { token: { secretRef: { name: 'vt' } } },
                },
              },
              destination: { namespaces: ['^prod$'] },
            },
          } as KtsMirror,
        ],
      },
      [
        {
          apiVersion: 'mirrorhub.io/v1alpha1',
          kind: 'VaultConnection',
          metadata: { name: 'v1-vault', namespace: 'src' },
          spec: {
            address: 'https://vault.example.com',
            auth: { token: { secretRef: { name: 'vt', key: 'token' } } },
          },
        },
        mirror('src', 'v1', {
          source: {
            kind: 'Vault',
            vault: {
              connectionRef: { kind: 'VaultConnection', name: 'v1-vault' },
              path: 'kv/team/tls',
              kvVersion: 1,
              encoding: 'Base64',
            },
          },
          destination: { namespaces: ['.*(?:^prod$).*'], name: 'tls' },
          deletePolicy: 'Delete',
        }),
      ],
      ['prod'],
    ],
    [
      'KTS: secret to a Vault destination (token): Retain made explicit',
      {
        ktsMirrors: [
          {
            apiVersion: 'mirrors.kts.studio/v1alpha2',
            metadata: { name: 'publish', namespace: 'src' },
            spec: {
              source: { name: 'tls' },
              destination: {
                type: 'vault',
                vault: {
                  addr: 'https://vault.example.com',
                  path: 'secret/data/published/tls',
                  auth: { token: { secretRef: { name: 'vault-token' }, tokenKey: 't' } },
                },
              },
            },
          } as KtsMirror,
        ],
      },
      [
        {
          apiVersion: 'mirrorhub.io/v1alpha1',
          kind: 'VaultConnection',
          metadata: { name: 'publish-vault', namespace: 'src' },
          spec: {
            address: 'https://vault.example.com',
            auth: { token: { secretRef: { name: 'vault-token', key: 't' } } },
          },
        },
        mirror('src', 'publish', {
          source: { kind: 'Secret', name: 'tls' },
          destination: {
            vault: {
              connectionRef: { kind: 'VaultConnection', name: 'publish-vault' },
              path: 'secret/published/tls',
              kvVersion: 2,
              encoding: 'Base64',
            },
          },
          deletePolicy: 'Retain',
        }),
      ],
      [],
    ],
  ])('%s', (_, parts, objects, after) => {
    const t = convert(inventory(parts), OPTS);
    expect(t.refusals).toEqual([]);
    expect(t.objects).toEqual(objects);
    expect([...t.rules[0]!.after].sort()).toEqual([...after].sort());
  });
});

describe('convert: each untranslatable input -> its named refusal', () => {
  const kts = (destination: object, source: object = { name: 'tls' }): KtsMirror => ({
    apiVersion: 'mirrors.kts.studio/v1alpha2',
    metadata: { name: 'm', namespace: 'src' },
    spec: { source, destination } as KtsMirror['spec'],
  });
  const vault = (addr: string, auth: object, path = 'secret/data/x') => ({
    type: 'vault',
    vault: { addr, path, auth },
  });
  it.each<[string, Partial<Inventory>, string, RegExp]>([
    [
      'reflector: a .NET lookahead',
      {
        secrets: [
          secret('src', 'tls', {
            [`${R}/reflection-allowed`]: 'true',
            [`${R}/reflection-allowed-namespaces`]: 'team-(?!b).*',
            [`${R}/reflection-auto-enabled`]: 'true',
          }),
        ],
      },
      'Secret src/tls',
      /lookahead or lookbehind.*RE2 does not have/,
    ],
    [
      'reflector: first-match semantics that differ on this cluster',
      {
        namespaces: [{ name: 'ns1' }, { name: 'ns10' }, { name: 'src' }],
        secrets: [
          secret('src', 'tls', {
            [`${R}/reflection-allowed`]: 'true',
            [`${R}/reflection-allowed-namespaces`]: 'ns1|ns10',
            [`${R}/reflection-auto-enabled`]: 'true',
          }),
        ],
      },
      'Secret src/tls',
      /mirrorhub would also select ns10/,
    ],
    [
      'reflector: two pattern lists (an intersection)',
      {
        secrets: [
          secret('src', 'tls', {
            [`${R}/reflection-allowed`]: 'true',
            [`${R}/reflection-allowed-namespaces`]: 'team-.*',
            [`${R}/reflection-auto-enabled`]: 'true',
            [`${R}/reflection-auto-namespaces`]: '.*-a',
          }),
        ],
      },
      'Secret src/tls',
      /cannot express that intersection/,
    ],
    [
      'kubed: sync-contexts',
      { secrets: [secret('src', 'db', { 'kubed.appscode.com/sync-contexts': 'prod,stage' })] },
      'Secret src/db',
      /sync-contexts prod, stage: .*--kubed-context CONTEXT=MIRRORCLUSTER/,
    ],
    [
      'kubed: a Gt selector',
      { secrets: [secret('src', 'db', { 'kubed.appscode.com/sync': 'tier>2' })] },
      'Secret src/db',
      /Gt\/Lt/,
    ],
    [
      'ClusterSecret: a Python backreference',
      {
        clusterSecrets: [
          { metadata: { name: 'cs' }, matchNamespace: ['(?P<t>a)(?P=t)'], data: { a: 'YQ==' } },
        ],
      },
      'ClusterSecret cs',
      /matchNamespace: .*backreference/,
    ],
    [
      'ClusterSecret: valueFrom without a namespace',
      {
        clusterSecrets: [
          { metadata: { name: 'cs' }, data: { valueFrom: { secretKeyRef: { name: 'x' } } } },
        ],
      },
      'ClusterSecret cs',
      /needs both name and namespace/,
    ],
    [
      'KTS: Vault over http',
      {
        ktsMirrors: [
          kts(
            { namespaces: ['a'] },
            { ...vault('http://vault:8200', { token: { secretRef: { name: 't' } } }), name: 'tls' },
          ),
        ],
      },
      'KTS SecretMirror src/m',
      /only over https/,
    ],
    [
      'KTS: no auth method mirrorhub has',
      { ktsMirrors: [kts(vault('https://vault.example.com', {}))] },
      'KTS SecretMirror src/m',
      /neither approle.secretRef.name nor token.secretRef.name/,
    ],
    [
      'KTS: a token Secret in another namespace',
      {
        ktsMirrors: [
          kts(
            vault('https://vault.example.com', {
              token: { secretRef: { name: 't', namespace: 'vault' } },
            }),
          ),
        ],
      },
      'KTS SecretMirror src/m',
      /own namespace \(src\) only/,
    ],
    [
      'KTS: a path with no secret under its mount',
      {
        ktsMirrors: [
          kts(vault('https://vault.example.com', { token: { secretRef: { name: 't' } } }, '/kv/')),
        ],
      },
      'KTS SecretMirror src/m',
      /names no secret under a mount/,
    ],
    [
      'one source annotated for reflector and kubed: the second is refused',
      {
        secrets: [
          secret('src', 'tls', {
            [`${R}/reflection-allowed`]: 'true',
            [`${R}/reflection-auto-enabled`]: 'true',
            [`${R}/reflection-allowed-namespaces`]: 'prod',
            'kubed.appscode.com/sync': 'team=a',
          }),
        ],
      },
      'Secret src/tls',
      /would become SecretMirror src\/tls, which Secret src\/tls \(reflector\) already becomes/,
    ],
    [
      'KTS: a lookbehind',
      { ktsMirrors: [kts({ namespaces: ['(?<=team-)a'] })] },
      'KTS SecretMirror src/m',
      /lookahead or lookbehind/,
    ],
  ])('%s', (_, parts, object, reason) => {
    const t = convert(inventory(parts), OPTS);
    expect(t.refusals).toHaveLength(1);
    expect(t.refusals[0]!.object).toBe(object);
    expect(t.refusals[0]!.reason).toMatch(reason);
  });
});

describe('kubed sync-contexts mapped with --kubed-context', () => {
  it('one ClusterSecretMirror per target namespace, to exactly the mapped clusters', () => {
    const inv = inventory({
      secrets: [secret('src', 'db', { 'kubed.appscode.com/sync-contexts': 'eu, us,apps' })],
    });
    const t = convert(inv, {
      ...OPTS,
      kubedContexts: new Map([
        ['eu', { cluster: 'eu-1' }],
        ['us', { cluster: 'us-1' }],
        ['apps', { cluster: 'eu-1', namespace: 'apps' }],
      ]),
    });
    expect(t.refusals).toEqual([]);
    expect(t.objects).toEqual([
      {
        apiVersion: 'mirrorhub.io/v1alpha1',
        kind: 'ClusterSecretMirror',
        metadata: { name: 'kubed-src-db-apps' },
        spec: {
          source: { kind: 'Secret', namespace: 'src', name: 'db' },
          destination: { clusters: { names: ['eu-1'] }, namespaces: ['apps'] },
        },
      },
      {
        apiVersion: 'mirrorhub.io/v1alpha1',
        kind: 'ClusterSecretMirror',
        metadata: { name: 'kubed-src-db-src' },
        spec: {
          source: { kind: 'Secret', namespace: 'src', name: 'db' },
          destination: { clusters: { names: ['eu-1', 'us-1'] }, namespaces: ['src'] },
        },
      },
    ]);
    expect(t.rules.map((r) => r.elsewhere)).toEqual([
      'namespace apps of clusters eu-1',
      'namespace src of clusters eu-1, us-1',
    ]);
  });

  it('refuses the contexts it was not told about', () => {
    const inv = inventory({
      secrets: [secret('src', 'db', { 'kubed.appscode.com/sync-contexts': 'eu,us' })],
    });
    const t = convert(inv, { ...OPTS, kubedContexts: new Map([['eu', { cluster: 'eu-1' }]]) });
    expect(t.objects).toEqual([]);
    expect(t.refusals).toEqual([
      expect.objectContaining({
        object: 'Secret src/db',
        reason: expect.stringMatching(/^sync-contexts us: /),
      }),
    ]);
  });
});

describe('system namespaces', () => {
  it('are excluded only where the old rule did not exclude them already', () => {
    const t = convert(
      inventory({
        clusterSecrets: [
          { metadata: { name: 'cs' }, avoidNamespaces: ['kube-'], data: { a: 'YQ==' } },
        ],
      }),
      OPTS,
    );
    expect(t.objects[1]).toMatchObject({
      spec: { destination: { excludeNamespaces: ['(?:kube-).*', 'mirrorhub-system'] } },
    });
    expect(t.notes).toContain(
      'ClusterSecretMirror cs: excludeNamespaces mirrorhub-system: mirrorhub never writes to its system namespaces, and selecting them would leave the mirror Degraded (ClusterSecret cs copies there today)',
    );
  });
});

describe('plan', () => {
  it('creates, takes over a copy marked as this source, leaves anything else alone', () => {
    const inv = inventory({
      secrets: [
        secret('src', 'db', { 'kubed.appscode.com/sync': '' }),
        secret(
          'team-a',
          'db',
          {},
          { 'kubed.appscode.com/origin.name': 'db', 'kubed.appscode.com/origin.namespace': 'src' },
        ),
        secret(
          'team-b',
          'db',
          {},
          {
            'kubed.appscode.com/origin.name': 'db',
            'kubed.appscode.com/origin.namespace': 'other',
          },
        ),
        secret('prod', 'db'),
        secret(
          'kube-system',
          'db',
          {},
          { 'kubed.appscode.com/origin.name': 'db', 'kubed.appscode.com/origin.namespace': 'src' },
        ),
      ],
    });
    const [p] = planRules(convert(inv, OPTS).rules, inv);
    expect(p!.copies).toEqual([
      { namespace: 'app-team-c', action: 'create' },
      { namespace: 'default', action: 'create' },
      {
        namespace: 'prod',
        action: 'leave alone',
        why: 'no other tool marks it as a copy of this source',
      },
      { namespace: 'team-a', action: 'take over', why: 'kubed copy of this source' },
      {
        namespace: 'team-b',
        action: 'leave alone',
        why: 'a kubed copy of other/db, another source',
      },
    ]);
    expect(p!.outside).toEqual([
      { namespace: 'kube-system', why: 'a system namespace mirrorhub never writes to' },
    ]);
  });

  it("promises a takeover only where the agent's proof holds: a kubed copy from another cluster stays", () => {
    const origin = (uid: string) => ({ 'kubed.appscode.com/origin': JSON.stringify({ uid }) });
    const marks = (cluster: string) => ({
      'kubed.appscode.com/origin.name': 'db',
      'kubed.appscode.com/origin.namespace': 'src',
      'kubed.appscode.com/origin.cluster': cluster,
    });
    const source = secret('src', 'db', { 'kubed.appscode.com/sync': '' });
    source.metadata.uid = 'uid-here';
    const inv = inventory({
      secrets: [
        source,
        secret('team-a', 'db', origin('uid-here'), marks('unicorn')),
        secret('team-b', 'db', origin('uid-elsewhere'), marks('unicorn')),
      ],
    });
    const [p] = planRules(convert(inv, OPTS).rules, inv);
    expect(p!.copies.filter((c) => c.namespace.startsWith('team-'))).toEqual([
      { namespace: 'team-a', action: 'take over', why: 'kubed copy of this source' },
      {
        namespace: 'team-b',
        action: 'leave alone',
        why: "a kubed copy synced from cluster unicorn, not from this cluster's source",
      },
    ]);
  });
});
