import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  inClusterAccess,
  kubeconfigFileAccess,
  loadKubeAccess,
  parseKubeconfig,
  type KubeAccess,
} from './access.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A kubeconfig with one context `ctx` -> cluster `c`, user `u`. */
function kubeconfig(cluster: object, user: object, extra: object = {}): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'ctx',
    clusters: [{ name: 'c', cluster: { server: 'https://api.example:6443', ...cluster } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'team-a' } }],
    ...extra,
  };
}

const FILE = '/etc/kube/config';

describe('parseKubeconfig', () => {
  it.each([
    [
      'inline data is decoded',
      kubeconfig(
        { 'certificate-authority-data': b64('CA') },
        { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
      ),
      {
        server: 'https://api.example:6443',
        namespace: 'team-a',
        ca: { data: Buffer.from('CA') },
        cert: { data: Buffer.from('CERT') },
        key: { data: Buffer.from('KEY') },
        insecureSkipTlsVerify: false,
      },
    ],
    [
      "relative file paths are resolved against the kubeconfig's directory",
      kubeconfig(
        { 'certificate-authority': 'pki/ca.crt' },
        { 'client-certificate': '../admin.crt', 'client-key': '/abs/admin.key', tokenFile: 't' },
      ),
      {
        ca: { path: '/etc/kube/pki/ca.crt' },
        cert: { path: '/etc/admin.crt' },
        key: { path: '/abs/admin.key' },
        tokenFile: '/etc/kube/t',
      },
    ],
    [
      'data wins over a file (kubectl: "-data will override")',
      kubeconfig(
        { 'certificate-authority': 'ca.crt', 'certificate-authority-data': b64('CA') },
        {},
      ),
      { ca: { data: Buffer.from('CA') } },
    ],
    [
      'token, insecure-skip-tls-verify, tls-server-name',
      kubeconfig(
        { 'insecure-skip-tls-verify': true, 'tls-server-name': 'kubernetes' },
        { token: 'abc' },
      ),
      { token: 'abc', insecureSkipTlsVerify: true, tlsServerName: 'kubernetes' },
    ],
    ['basic auth', kubeconfig({}, { username: 'me', password: 'pw' }), { username: 'me' }],
    [
      'a context without a user',
      {
        'current-context': 'x',
        clusters: [{ name: 'c', cluster: { server: 'http://127.0.0.1:8080' } }],
        contexts: [{ name: 'x', context: { cluster: 'c' } }],
      },
      { context: 'x', server: 'http://127.0.0.1:8080' },
    ],
  ])('%s', (_, doc, want) => {
    expect(parseKubeconfig(doc, FILE)).toMatchObject({ file: FILE, ...want });
  });

  it.each([
    ['exec plugin', kubeconfig({}, { exec: { command: 'aws' } }), 'exec in context "ctx"'],
    ['auth provider', kubeconfig({}, { 'auth-provider': { name: 'oidc' } }), 'auth-provider'],
    ['proxy', kubeconfig({ 'proxy-url': 'socks5://p:1080' }, {}), 'proxy-url'],
  ])('%s: left to client-node', (_, doc, reason) => {
    expect(parseKubeconfig(doc, FILE)).toEqual({ clientNode: expect.stringContaining(reason) });
  });

  it('picks the given context over current-context', () => {
    const doc = kubeconfig(
      {},
      {},
      {
        contexts: [
          { name: 'ctx', context: { cluster: 'c', user: 'u' } },
          { name: 'other', context: { cluster: 'c2' } },
        ],
        clusters: [
          { name: 'c', cluster: { server: 'https://one' } },
          { name: 'c2', cluster: { server: 'https://two' } },
        ],
      },
    );
    expect(parseKubeconfig(doc, FILE, 'other')).toMatchObject({ server: 'https://two' });
  });

  it.each([
    ['not a mapping', 'just text', undefined, `kubeconfig ${FILE}: not a kubeconfig`],
    [
      'no current-context',
      { ...(kubeconfig({}, {}) as object), 'current-context': '' },
      undefined,
      `kubeconfig ${FILE}: no current-context`,
    ],
    ['missing context', kubeconfig({}, {}), 'prod', `kubeconfig ${FILE}: context "prod" not found`],
    [
      'missing cluster',
      kubeconfig({}, {}, { clusters: [] }),
      undefined,
      `kubeconfig ${FILE}: cluster "c" (of context "ctx") not found`,
    ],
    [
      'cluster without server',
      kubeconfig({ server: '' }, {}),
      undefined,
      `kubeconfig ${FILE}: cluster "c" (of context "ctx") has no server`,
    ],
    [
      'missing user',
      kubeconfig({}, {}, { users: [] }),
      undefined,
      `kubeconfig ${FILE}: user "u" (of context "ctx") not found`,
    ],
  ])('%s: a clear error', (_, doc, context, message) => {
    expect(() => parseKubeconfig(doc, FILE, context)).toThrow(message);
  });
});

async function optionsOf(access: KubeAccess): Promise<https.RequestOptions> {
  const opts: https.RequestOptions = { headers: { 'X-Keep': '1' } };
  await access.applyToHTTPSOptions(opts);
  return opts;
}

describe('kubeconfigFileAccess', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'ca.crt'), 'CA-FROM-FILE');
  writeFileSync(join(dir, 'token'), 'file-token\n');

  it('reads certificate files next to the kubeconfig and sets TLS and auth on each request', async () => {
    const path = join(dir, 'config');
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: ctx',
        'clusters:',
        '- name: c',
        '  cluster: {server: "https://10.0.0.1:6443", certificate-authority: ca.crt}',
        'users:',
        `- name: u`,
        `  user: {client-certificate-data: ${b64('CERT')}, client-key-data: ${b64('KEY')}, tokenFile: token}`,
        'contexts:',
        '- name: ctx',
        '  context: {cluster: c, user: u}',
      ].join('\n'),
    );
    const access = await kubeconfigFileAccess(path);
    expect(access.getCurrentCluster()).toEqual({ server: 'https://10.0.0.1:6443' });
    const opts = await optionsOf(access);
    expect(String(opts.ca)).toBe('CA-FROM-FILE');
    expect(String(opts.cert)).toBe('CERT');
    expect(String(opts.key)).toBe('KEY');
    expect(opts.headers).toEqual({ 'X-Keep': '1', Authorization: 'Bearer file-token' });
    expect(opts.rejectUnauthorized).toBeUndefined();
  });

  it('basic auth and insecure-skip-tls-verify', async () => {
    const path = join(dir, 'basic');
    writeFileSync(
      path,
      'current-context: x\nclusters: [{name: c, cluster: {server: "https://h", insecure-skip-tls-verify: true}}]\n' +
        'users: [{name: u, user: {username: me, password: pw}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n',
    );
    const opts = await optionsOf(await kubeconfigFileAccess(path));
    expect(opts.auth).toBe('me:pw');
    expect(opts.rejectUnauthorized).toBe(false);
  });

  it('names the file when a referenced certificate cannot be read', async () => {
    const path = join(dir, 'missing-ca');
    writeFileSync(
      path,
      'current-context: x\nclusters: [{name: c, cluster: {server: "https://h", certificate-authority: nope.crt}}]\n' +
        'contexts: [{name: x, context: {cluster: c}}]\n',
    );
    await expect(kubeconfigFileAccess(path)).rejects.toThrow(
      `kubeconfig ${path}: reading certificate-authority ${join(dir, 'nope.crt')}`,
    );
  });

  it('hands an exec-plugin user to client-node (loaded only then)', async () => {
    const path = join(dir, 'exec');
    writeFileSync(
      path,
      'current-context: x\nclusters: [{name: c, cluster: {server: "https://eks"}}]\n' +
        'users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws}}}]\n' +
        'contexts: [{name: x, context: {cluster: c, user: u}}]\n',
    );
    const access = await kubeconfigFileAccess(path);
    expect(access.constructor.name).toBe('KubeConfig');
    expect(access.getCurrentCluster()?.server).toBe('https://eks');
  });

  it('the kit-style kubeconfig (all inline) round-trips through YAML', () => {
    const text = `current-context: hub\nclusters:\n- name: hub\n  cluster:\n    server: https://127.0.0.1:1\n    certificate-authority-data: ${b64('CA')}\ncontexts:\n- name: hub\n  context: {cluster: hub, user: hub-admin}\nusers:\n- name: hub-admin\n  user:\n    client-certificate-data: ${b64('C')}\n    client-key-data: ${b64('K')}\n`;
    expect(parseKubeconfig(parse(text), 'kit')).toMatchObject({
      ca: { data: Buffer.from('CA') },
      cert: { data: Buffer.from('C') },
    });
  });
});

describe('inClusterAccess / loadKubeAccess', () => {
  const sa = mkdtempSync(join(tmpdir(), 'sa-'));
  afterAll(() => rmSync(sa, { recursive: true, force: true }));
  writeFileSync(join(sa, 'ca.crt'), 'SA-CA');
  writeFileSync(join(sa, 'token'), 'sa-token\n');
  const podEnv = { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' };

  it('uses the service account: IPv6 host bracketed, token as bearer', async () => {
    const access = inClusterAccess(podEnv, sa);
    expect(access.getCurrentCluster()).toEqual({ server: 'https://[fd00::1]:443' });
    const opts = await optionsOf(access);
    expect(String(opts.ca)).toBe('SA-CA');
    expect(opts.headers).toMatchObject({ Authorization: 'Bearer sa-token' });
  });

  it('refuses outside a cluster', () => {
    expect(() => inClusterAccess({}, sa)).toThrow('not in a cluster');
  });

  it('prefers a path, then KUBECONFIG, then the service account', async () => {
    const kc = join(sa, 'kubeconfig');
    writeFileSync(
      kc,
      'current-context: x\nclusters: [{name: c, cluster: {server: "https://from-file"}}]\ncontexts: [{name: x, context: {cluster: c}}]\n',
    );
    const env = { ...podEnv };
    const server = async (p: string | undefined, e: Record<string, string>) =>
      (await loadKubeAccess(p, e, sa)).getCurrentCluster()?.server;
    expect(await server(kc, env)).toBe('https://from-file');
    expect(await server(undefined, { ...env, KUBECONFIG: kc })).toBe('https://from-file');
    expect(await server(undefined, env)).toBe('https://[fd00::1]:443');
  });
});
