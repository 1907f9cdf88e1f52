import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import type {
  ClusterSecretMirror,
  MirrorCluster,
  MirrorDelivery,
  SecretMirror,
} from '@mirrorhub/shared/api/index';
import type { Snapshot, Where } from '../dashboard/types.js';
import { FULL_ACCESS, matrix, type Access, type ViewInput } from '../dashboard/view.js';
import { parseCommandLine, run, USAGE, type Io } from './cli.js';
import {
  statusFromCluster,
  whereFromCluster,
  type Gathered,
  type StatusReport,
  type WhereReport,
} from './gather.js';
import { age, cell, renderStatus, renderWhere, table } from './table.js';

const NOW = Date.parse('2025-06-01T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();
const API = 'mirrorhub.io/v1alpha1' as const;

// ---- a hub cluster's objects, as the API server would list them ---------------------------------

const clusters: MirrorCluster[] = [
  {
    apiVersion: API,
    kind: 'MirrorCluster',
    metadata: { name: 'hub' },
    spec: { inCluster: true },
    status: {
      type: 'InCluster',
      reachable: true,
      agent: { present: true, version: '0.1.0', lastHeartbeat: ago(4) },
      kubernetesVersion: 'v1.34.4',
    },
  },
  {
    apiVersion: API,
    kind: 'MirrorCluster',
    metadata: { name: 'follower-a', labels: { env: 'prod' } },
    spec: {
      eks: {
        name: 'a',
        region: 'eu-west-1',
        roleArn: 'arn:aws:iam::111122223333:role/mirrorhub',
      },
    },
    status: {
      type: 'EKS',
      reachable: true,
      agent: { present: true, version: '0.1.0', lastHeartbeat: ago(7) },
      kubernetesVersion: 'v1.31.2',
    },
  },
  {
    apiVersion: API,
    kind: 'MirrorCluster',
    metadata: { name: 'follower-b' },
    spec: {
      eks: { name: 'b', region: 'us-east-1', roleArn: 'arn:aws:iam::444455556666:role/mirrorhub' },
    },
    status: {
      type: 'EKS',
      reachable: false,
      agent: { present: false },
      lastError: 'dial tcp 10.0.0.1:443: i/o timeout',
    },
  },
] as MirrorCluster[];

const appConfig = {
  apiVersion: API,
  kind: 'SecretMirror',
  metadata: { name: 'app-config', namespace: 'src' },
  spec: {
    source: { kind: 'Secret', name: 'app-config' },
    destination: { namespaces: ['team-.+'], clusters: { names: ['follower-a'] } },
  },
  status: {
    phase: 'Degraded',
    source: 'app-config',
    destination: '/team-.+/ on follower-a',
    lastSyncTime: ago(90),
    counts: { clusters: 2, namespaces: 15, synced: 13, failed: 1, conflicts: 1 },
    clusters: [
      { name: 'hub', phase: 'Degraded', namespaces: 3, synced: 2, conflicts: 1 },
      {
        name: 'follower-a',
        phase: 'Degraded',
        namespaces: 12,
        synced: 11,
        failed: 1,
        message: '1 namespace failed',
      },
    ],
    problems: [
      {
        cluster: 'hub',
        namespace: 'team-3',
        state: 'Conflict',
        message: 'not managed by mirrorhub',
      },
      { cluster: 'follower-a', namespace: 'team-9', state: 'Failed', message: '403 Forbidden' },
    ],
  },
} as SecretMirror;

const registry = {
  apiVersion: API,
  kind: 'ClusterSecretMirror',
  metadata: { name: 'registry' },
  spec: {
    source: { kind: 'Secret', name: 'registry', namespace: 'platform' },
    destination: { namespaces: ['.*'] },
  },
  status: {
    phase: 'Active',
    destination: '/.*/',
    lastSyncTime: ago(3 * 3600),
    counts: { clusters: 1, namespaces: 4, synced: 4 },
    clusters: [{ name: 'hub', phase: 'Active', namespaces: 4, synced: 4 }],
  },
} as ClusterSecretMirror;

const delivery = {
  apiVersion: API,
  kind: 'MirrorDelivery',
  metadata: { name: 'sm-src-app-config-0123456789abcdef', namespace: 'mirrorhub-system' },
  spec: {
    mirror: { kind: 'SecretMirror', name: 'app-config', namespace: 'src' },
    originCluster: 'hub',
    payloadSecretName: 'sm-src-app-config-0123456789abcdef',
    target: { kind: 'Secret', name: 'app-config' },
    contentHash: 'h1',
  },
  status: {
    phase: 'Degraded',
    observedHash: 'h1',
    namespaces: [
      { name: 'team-3', state: 'Conflict', message: 'not managed by mirrorhub' },
      { name: 'team-1', state: 'Synced' },
      { name: 'team-2', state: 'Synced' },
    ],
  },
} as unknown as MirrorDelivery;

function input(): ViewInput {
  return {
    now: NOW,
    clusters,
    mirrors: [appConfig, registry],
    deliveries: new Map([['hub', [delivery]]]),
  };
}

function gathered(extra: Partial<Gathered> = {}, access: Access = FULL_ACCESS): Gathered {
  return {
    input: input(),
    access,
    hubCluster: 'hub',
    agentNamespace: 'mirrorhub-system',
    deliveriesRead: true,
    notes: [],
    ...extra,
  };
}

function status(g = gathered()): StatusReport {
  return statusFromCluster(g, { server: 'https://hub.example:6443', context: 'hub-admin' });
}

// ---- running the CLI in-process ------------------------------------------------------------------

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

// One scratch directory for the file, removed at the end: HOME (empty: no ~/.kube/config) and
// the kubeconfigs tests write.
const scratch = mkdtempSync(join(tmpdir(), 'mirrorhub-cli-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function cli(argv: string[], extra: Partial<Io> = {}): Promise<Ran> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { HOME: scratch },
    now: () => NOW,
    ...extra,
  };
  const code = await run(argv, io);
  return { code, stdout, stderr };
}

function lines(text: string): string[] {
  return text.split('\n');
}

describe('command line', () => {
  it.each([
    [['status'], { command: 'status', output: 'table', allNamespaces: false }],
    [
      ['where', 'wildcard-tls', '-o', 'json', '-n', 'team-a'],
      { command: 'where', name: 'wildcard-tls', output: 'json', namespace: 'team-a' },
    ],
    [
      ['--kubeconfig', '/k', '--context', 'prod', 'status', '-A'],
      { command: 'status', kubeconfig: '/k', context: 'prod', allNamespaces: true },
    ],
    [
      ['status', '--agent-namespace', 'mh', '--hub-cluster', 'mgmt'],
      { agentNamespace: 'mh', agentNamespaceSet: true, hubCluster: 'mgmt' },
    ],
    [
      ['status'],
      { agentNamespace: 'mirrorhub-system', agentNamespaceSet: false, hubCluster: 'hub' },
    ],
    [['status', '--output=json'], { output: 'json' }],
    [['help'], { command: 'help' }],
  ])('%j parses to %j', (argv, expected) => {
    expect(parseCommandLine(argv, {})).toMatchObject(expected);
  });

  it('takes the hub URL and token from the environment unless flags say otherwise', () => {
    const env = { MIRRORHUB_HUB_URL: 'https://hub.example', MIRRORHUB_TOKEN: 'from-env' };
    expect(parseCommandLine(['status'], env)).toMatchObject({
      hubUrl: 'https://hub.example',
      token: 'from-env',
    });
    expect(
      parseCommandLine(['status', '--hub-url', 'http://127.0.0.1:8080', '--token', 't'], env),
    ).toMatchObject({ hubUrl: 'http://127.0.0.1:8080', token: 't' });
  });

  it.each([
    [[], /no command given/],
    [['stauts'], /unknown command "stauts"/],
    [['status', '--colour'], /Unknown option '--colour'/],
    [['status', 'extra'], /status takes no arguments/],
    [['where'], /where needs the name of a copy/],
    [['where', 'a', 'b'], /where takes one name/],
    [['status', '-o', 'yaml'], /unknown output format "yaml"/],
    [['status', '-n', 'a', '-A'], /exclude each other/],
    [['status', '--kubeconfig'], /--kubeconfig/],
    [['status', '--hub-url', 'hub.example'], /must be an http\(s\) URL/],
  ])('%j: usage and exit code 2', async (argv, message) => {
    const r = await cli(argv);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toContain(USAGE);
  });

  it.each([[['--help']], [['-h']], [['help']], [['status', '--help']], [['bogus', '-h']]])(
    '%j prints the usage on stdout and exits 0',
    async (argv) => {
      const r = await cli(argv);
      expect(r).toEqual({ code: 0, stdout: USAGE, stderr: '' });
    },
  );

  it('--version prints the package version', async () => {
    const r = await cli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^mirrorhub \d+\.\d+\.\d+\n$/);
  });
});

describe('errors say what is wrong and what to do', () => {
  it('names the kubeconfig path it tried, from the flag', async () => {
    const r = await cli(['status', '--kubeconfig', '/nowhere/kubeconfig']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error: no kubeconfig at /nowhere/kubeconfig (--kubeconfig): pass --kubeconfig PATH or ' +
        "set KUBECONFIG to the hub cluster's kubeconfig\n",
    );
  });

  it('names the kubeconfig path it tried, from KUBECONFIG and from the default', async () => {
    const fromEnv = await cli(['status'], { env: { KUBECONFIG: '/nowhere/kc' } });
    expect(fromEnv.stderr).toMatch(/no kubeconfig at \/nowhere\/kc \(\$KUBECONFIG\)/);
    const fromDefault = await cli(['status'], { env: { HOME: '/nowhere' } });
    expect(fromDefault.code).toBe(1);
    expect(fromDefault.stderr).toMatch(
      /no kubeconfig at \/nowhere\/\.kube\/config \(the default\)/,
    );
  });

  const kubeconfig = (server: string) => {
    const file = join(mkdtempSync(join(scratch, 'kubeconfig-')), 'kubeconfig');
    writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: hub',
        'clusters: [{name: hub, cluster: {server: "' + server + '"}}]',
        'users: [{name: me, user: {token: not-a-real-token}}]',
        'contexts: [{name: hub, context: {cluster: hub, user: me, namespace: team-a}}]',
      ].join('\n'),
    );
    return file;
  };

  it('names the API server it could not reach, and the error', async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const r = await cli(['status', '--kubeconfig', kubeconfig('https://127.0.0.1:1')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error: cannot reach the API server https:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack
    expect(r.stderr).not.toContain('not-a-real-token');
  });

  it('names a context that is not in the kubeconfig', async () => {
    const file = kubeconfig('https://127.0.0.1:1');
    const r = await cli(['status', '--kubeconfig', file, '--context', 'prod']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: kubeconfig ${file}: context "prod" not found\n`);
  });
});

describe('tables', () => {
  it('aligns columns two spaces apart under upper-case headers, <none> for empty cells', () => {
    expect(
      table(
        ['Name', 'Last error'],
        [
          ['a', ''],
          ['longer-name', 'boom'],
        ],
      ),
    ).toBe(['NAME         LAST ERROR', 'a            <none>', 'longer-name  boom', ''].join('\n'));
  });

  it('keeps every cell on one line and out of the terminal: no control characters', () => {
    expect(cell('line one\nline two\t\u001b[31mred\u001b[0m')).toBe(
      'line one line two [31mred [0m',
    );
    expect(cell('\u0007')).toBe('<none>');
  });

  it.each([
    [0, '0s'],
    [59_000, '59s'],
    [119_000, '119s'],
    [330_000, '5m30s'],
    [600_000, '10m'],
    [3 * 3600_000, '3h'],
    [(7 * 60 + 5) * 60_000, '7h5m'],
    [30 * 3600_000, '30h'],
    [3 * 86400_000, '3d'],
    [(3 * 24 + 4) * 3600_000, '3d4h'],
    [400 * 86400_000, '400d'],
    [(3 * 365 + 10) * 86400_000, '3y10d'],
  ])('age(%i) is %s', (ms, text) => {
    expect(age(ms)).toBe(text);
  });
});

describe('status', () => {
  it('prints the overview, what needs attention, clusters and mirrors', () => {
    const out = renderStatus(status(), NOW);
    expect(lines(out).slice(0, 6)).toEqual([
      'Hub cluster: hub, read from the API server https://hub.example:6443 (context hub-admin)',
      'Clusters:    2/3 reachable, agents 2/3 healthy',
      'Mirrors:     2: 1 Active, 1 Degraded, 0 Error, 0 Pending',
      'Copies:      17/19 synced, 1 failed, 1 conflict, 0 denied',
      '',
      'ATTENTION',
    ]);
    const attention = out.slice(out.indexOf('ATTENTION\n'), out.indexOf('CLUSTERS\n'));
    expect(lines(attention)).toEqual([
      'ATTENTION',
      'SEVERITY  KIND                WHAT                         REASON',
      'error     ClusterUnreachable  MirrorCluster/follower-b     dial tcp 10.0.0.1:443: i/o timeout',
      'warning   Conflict            SecretMirror/src/app-config  1 conflict, e.g. hub/team-3: not managed by mirrorhub',
      'warning   MirrorDegraded      SecretMirror/src/app-config  Failed in follower-a/team-9: 403 Forbidden',
      '',
      '',
    ]);
    const clustersText = out.slice(out.indexOf('CLUSTERS\n'), out.indexOf('MIRRORS\n'));
    expect(lines(clustersText)).toEqual([
      'CLUSTERS',
      'NAME        TYPE       ACCOUNT       REGION     REACHABLE  AGENT       K8S      LAST ERROR',
      'follower-a  EKS        111122223333  eu-west-1  true       0.1.0 (7s)  v1.31.2  <none>',
      'follower-b  EKS        444455556666  us-east-1  false      missing     <none>   dial tcp 10.0.0.1:443: i/o timeout',
      'hub         InCluster  <none>        <none>     true       0.1.0 (4s)  v1.34.4  <none>',
      '',
      '',
    ]);
    const mirrorsText = out.slice(out.indexOf('MIRRORS\n'));
    expect(lines(mirrorsText)).toEqual([
      'MIRRORS',
      'NAMESPACE  NAME        SOURCE TYPE  SOURCE      DESTINATION              STATUS    SYNCED  LAST SYNC',
      '<none>     registry    Secret       registry    /.*/                     Active    4/4     3h',
      'src        app-config  Secret       app-config  /team-.+/ on follower-a  Degraded  13/15   90s',
      '',
    ]);
  });

  it('shows only what the identity may list: one namespace, no cluster details', () => {
    const g = gathered({}, { allMirrors: false, namespaces: new Set(['src']), clusters: false });
    const r = status(g);
    expect(r.mirrors.map((m) => m.key)).toEqual(['SecretMirror/src/app-config']);
    expect(r.clusters.map((c) => [c.name, c.account])).toEqual([
      ['follower-a', undefined],
      ['hub', undefined],
    ]);
    expect(renderStatus(r, NOW)).not.toContain('registry');
  });

  it('says there are no MirrorClusters instead of printing an empty table', () => {
    const g = gathered({ input: { ...input(), clusters: [] } });
    expect(renderStatus(status(g), NOW)).toContain(
      'CLUSTERS\nNo MirrorClusters: the hub delivers only to its own cluster (hub).\n',
    );
  });

  it('-o json prints the report, notes included', async () => {
    const r = status(gathered({ notes: ['you may not list MirrorClusters'] }));
    const parsed = JSON.parse(JSON.stringify(r)) as StatusReport;
    expect(parsed.mirrors.find((m) => m.name === 'app-config')?.phase).toBe('Degraded');
    expect(parsed.notes).toEqual(['you may not list MirrorClusters']);
  });
});

describe('where', () => {
  it('lists the hub cluster per namespace and each follower by its counts and problems', () => {
    const out = renderWhere(whereFromCluster(gathered(), 'app-config'));
    expect(lines(out)).toEqual([
      'CLUSTER     NAMESPACE  STATE         MIRROR                       MESSAGE',
      'follower-a  *          Synced 11/12  SecretMirror/src/app-config  Degraded: 1 namespace failed',
      'follower-a  team-9     Failed        SecretMirror/src/app-config  403 Forbidden',
      'hub         team-1     Synced        SecretMirror/src/app-config  <none>',
      'hub         team-2     Synced        SecretMirror/src/app-config  <none>',
      'hub         team-3     Conflict      SecretMirror/src/app-config  not managed by mirrorhub',
      '',
      'Rows with namespace * are clusters the hub cluster knows only by counts and problems (at most 50 per mirror); their per-namespace list is on the dashboard, or run with --hub-url.',
      '',
    ]);
  });

  it('summarises the hub cluster too when its deliveries may not be listed', () => {
    const g = gathered({ deliveriesRead: false, input: { ...input(), deliveries: new Map() } });
    const r = whereFromCluster(g, 'app-config');
    expect(r.summaries.map((s) => [s.cluster, `${s.synced}/${s.namespaces}`])).toEqual([
      ['follower-a', '11/12'],
      ['hub', '2/3'],
    ]);
    expect(r.items.map((i) => `${i.cluster}/${i.namespace}: ${i.state}`)).toEqual([
      'follower-a/team-9: Failed',
      'hub/team-3: Conflict',
    ]);
    expect(renderWhere(r)).toMatch(
      /^hub +\* +Synced 2\/3 +SecretMirror\/src\/app-config +Degraded: 1 conflict$/m,
    );
  });

  it('finds nothing of mirrors the identity may not see', () => {
    const g = gathered({}, { allMirrors: false, namespaces: new Set(['other']), clusters: false });
    const r = whereFromCluster(g, 'app-config');
    expect(r.items).toEqual([]);
    expect(r.summaries).toEqual([]);
    expect(renderWhere(r)).toBe('No copies named app-config that you may see.\n');
  });
});

describe('--hub-url: the dashboard API', () => {
  const snapshot: Snapshot = {
    whoami: { user: 'alice', scope: 'cluster', namespaces: [], clusters: true },
    hub: { cluster: 'hub', version: '0.1.0', leader: true },
    version: 7,
    generatedAt: new Date(NOW).toISOString(),
    overview: status().overview,
    clusters: status().clusters,
    mirrors: status().mirrors,
    matrix: matrix(input(), FULL_ACCESS),
  };
  const whereAnswer: Where = {
    name: 'app-config',
    truncated: false,
    items: [
      {
        cluster: 'follower-a',
        namespace: 'team-1',
        state: 'Synced',
        mirror: 'SecretMirror/src/app-config',
        kind: 'Secret',
      },
    ],
  };

  function hub(answers: Record<string, { status: number; body: unknown }>) {
    const calls: { url: string; auth: string | undefined }[] = [];
    const fetchFn = ((url: string, init?: RequestInit) => {
      const headers = (init?.headers ?? {}) as Record<string, string>;
      calls.push({ url, auth: headers['Authorization'] });
      const path = url.replace(/^https?:\/\/[^/]+/, '');
      const a = answers[path] ?? { status: 404, body: { error: 'not found' } };
      return Promise.resolve(new Response(JSON.stringify(a.body), { status: a.status }));
    }) as typeof fetch;
    return { fetchFn, calls };
  }

  it('prints the same tables from the snapshot, with the token as a bearer', async () => {
    const { fetchFn, calls } = hub({ '/api/v1/snapshot': { status: 200, body: snapshot } });
    const r = await cli(['status', '--hub-url', 'https://hub.example/', '--token', 'T0K'], {
      fetch: fetchFn,
    });
    expect(r.code).toBe(0);
    expect(calls).toEqual([{ url: 'https://hub.example/api/v1/snapshot', auth: 'Bearer T0K' }]);
    expect(r.stdout).toContain(
      'Hub cluster: hub, read from the hub at https://hub.example/ as alice',
    );
    expect(r.stdout).toContain(renderStatus(status(), NOW).split('\n\n').slice(1).join('\n\n'));
  });

  it('asks where with the name, and prints the hub answer without a footer', async () => {
    const { fetchFn, calls } = hub({
      '/api/v1/where?name=app-config': { status: 200, body: whereAnswer },
    });
    const r = await cli(['where', 'app-config', '-o', 'json'], {
      fetch: fetchFn,
      env: { MIRRORHUB_HUB_URL: 'http://127.0.0.1:8080', MIRRORHUB_TOKEN: 'env-token' },
    });
    expect(r.code).toBe(0);
    expect(calls[0]).toEqual({
      url: 'http://127.0.0.1:8080/api/v1/where?name=app-config',
      auth: 'Bearer env-token',
    });
    const report = JSON.parse(r.stdout) as WhereReport;
    expect(report.items).toEqual(whereAnswer.items);
    expect(renderWhere(report)).not.toContain('--hub-url');
  });

  it.each([
    [401, 'token expired', /the hub at https:\/\/hub\.example answered 401: token expired/],
    [403, 'alice may not list secretmirrors', /answered 403: alice may not list secretmirrors/],
  ])('a %i prints the hub error and exits 1', async (code, error, message) => {
    const { fetchFn } = hub({ '/api/v1/snapshot': { status: code, body: { error } } });
    const r = await cli(['status', '--hub-url', 'https://hub.example', '--token', 'x'], {
      fetch: fetchFn,
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
  });

  it('without any token, says where one comes from', async () => {
    const { fetchFn, calls } = hub({
      '/api/v1/snapshot': { status: 401, body: { error: 'no token' } },
    });
    const r = await cli(['status', '--hub-url', 'https://hub.example'], { fetch: fetchFn });
    expect(calls[0]?.auth).toBeUndefined();
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no token was sent; pass --token, set MIRRORHUB_TOKEN/);
  });

  it('sends the kubeconfig user bearer token when no token is given', async () => {
    const file = join(mkdtempSync(join(scratch, 'kubeconfig-')), 'kubeconfig');
    writeFileSync(
      file,
      'current-context: c\nclusters: [{name: k, cluster: {server: "https://127.0.0.1:1"}}]\n' +
        'users: [{name: u, user: {token: kube-token}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n',
    );
    const { fetchFn, calls } = hub({ '/api/v1/snapshot': { status: 200, body: snapshot } });
    const r = await cli(['status', '--hub-url', 'https://hub.example', '--kubeconfig', file], {
      fetch: fetchFn,
    });
    expect(r.code).toBe(0);
    expect(calls[0]?.auth).toBe('Bearer kube-token');
  });

  it('-n keeps that namespace and says the overview counts are the hub ones', async () => {
    const { fetchFn } = hub({ '/api/v1/snapshot': { status: 200, body: snapshot } });
    const r = await cli(
      ['status', '--hub-url', 'https://hub.example', '--token', 'x', '-n', 'src'],
      {
        fetch: fetchFn,
      },
    );
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/^<none>\s+registry/m);
    expect(r.stdout).toMatch(/^src\s+app-config/m);
    expect(r.stderr).toMatch(/^note: the overview counts are the hub's/);
  });

  it('names the hub it could not reach', async () => {
    const fetchFn = (() =>
      Promise.reject(
        Object.assign(new TypeError('fetch failed'), {
          cause: new Error('connect ECONNREFUSED 127.0.0.1:8080'),
        }),
      )) as typeof fetch;
    const r = await cli(['status', '--hub-url', 'http://127.0.0.1:8080', '--token', 'x'], {
      fetch: fetchFn,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error: cannot reach the hub at http://127.0.0.1:8080: connect ECONNREFUSED 127.0.0.1:8080 (check --hub-url / MIRRORHUB_HUB_URL)\n',
    );
  });
});
