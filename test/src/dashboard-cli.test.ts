// `kubectl mirrorhub dashboard` on a real kube-apiserver: the built CLI serves the hub's
// dashboard on 127.0.0.1 through the API server's service proxy, with the kubeconfig's own
// credentials, and a real Chromium opens it signed in, without a token to paste.
//
// The hub runs in this process, listening on this machine's non-loopback address (the API
// server refuses to proxy to loopback); its Service, a Pod object carrying that address and the
// Endpoints naming the Pod are what the chart's Service and the endpoints controller give a
// real cluster (the kit runs no kubelet or controller-manager).
//
// The exec-plugin user is a script run as kubectl would run `aws eks get-token`: each run asks
// the TokenRequest API for a new token of a ServiceAccount, bound to a Secret of its own (so the
// test can revoke one token by deleting its Secret), counts its runs, and says the credential
// expires after a lifetime the test sets.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import type https from 'node:https';
import { networkInterfaces, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { launchBrowser, type LaunchedBrowser } from './support/browser.js';
import { Engine, secretMirror, SYSTEM_NS } from './support/engine.js';
import { eventually } from './support/eventually.js';
import {
  clusterViewerToken,
  namespaceViewerToken,
  serviceAccountToken,
} from './support/viewers.js';

const exec = promisify(execFile);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = join(ROOT, 'hub/dist/cli/main.js');
const SECRET_VALUE = 'dashboard-cli-secret-4c1d';

/** hub/dist is built by `npm run build`; build it here when it is missing or older than the CLI. */
async function ensureBuilt(): Promise<void> {
  const dirs = ['hub/src/cli', 'hub/src/dashboard'].map((d) => join(ROOT, d));
  let newest = 0;
  for (const dir of dirs) {
    for (const f of await readdir(dir)) newest = Math.max(newest, statSync(join(dir, f)).mtimeMs);
  }
  if (existsSync(MAIN) && statSync(MAIN).mtimeMs >= newest) return;
  await exec('npx', ['tsc', '-b', 'hub'], { cwd: ROOT });
}

/** This machine's first non-loopback IPv4 address: the API server proxies to nothing else. */
function machineAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  throw new Error('no non-loopback IPv4 address: the service proxy cannot be tested here');
}

/** A running `mirrorhub dashboard`: its URL and everything it wrote. */
interface Running {
  url: string;
  child: ChildProcess;
  out: () => string;
  stop(): Promise<number | null>;
}

function startCli(args: string[]): Promise<Running> {
  const child = spawn(process.execPath, [MAIN, 'dashboard', '--no-browser', ...args], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', HOME: tmpdir() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout!.on('data', (c: Buffer) => (text += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (text += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed: ${text}`)), 60_000);
    const check = () => {
      const m = /^Dashboard: (http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(text);
      if (!m) return;
      clearTimeout(timer);
      resolve({
        url: m[1]!,
        child,
        out: () => text,
        stop: async () => {
          child.kill('SIGTERM');
          return exited;
        },
      });
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before printing a URL: ${text}`));
    });
  });
}

async function runCli(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await exec(
      process.execPath,
      [MAIN, 'dashboard', '--no-browser', ...args],
      { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '', HOME: tmpdir() }, timeout: 60_000 },
    );
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, out: (e.stdout ?? '') + (e.stderr ?? '') };
  }
}

// The exec plugin: one TokenRequest per run, as the admin, for ServiceAccount $SA, bound to a
// Secret named after the run; prints an ExecCredential that expires after ./lifetime seconds.
const PLUGIN = `
import fs from 'node:fs';
import https from 'node:https';
const dir = process.env.PLUGIN_DIR;
const c = JSON.parse(fs.readFileSync(dir + '/admin.json', 'utf8'));
const runs = Number(fs.existsSync(dir + '/runs') ? fs.readFileSync(dir + '/runs', 'utf8') : '0') + 1;
fs.writeFileSync(dir + '/runs', String(runs));
fs.writeFileSync(dir + '/exec-info-' + runs, process.env.KUBERNETES_EXEC_INFO ?? '');
const call = (path, body) => new Promise((resolve, reject) => {
  const req = https.request(c.server + path, { method: 'POST', ca: c.ca, cert: c.cert, key: c.key,
    headers: { 'content-type': 'application/json' } }, (res) => {
    let t = ''; res.on('data', (d) => (t += d));
    res.on('end', () => res.statusCode < 300 ? resolve(JSON.parse(t)) : reject(new Error(t)));
  });
  req.on('error', reject); req.end(JSON.stringify(body));
});
const ns = c.namespace, sa = c.serviceAccount;
const secret = await call('/api/v1/namespaces/' + ns + '/secrets',
  { metadata: { name: sa + '-session-' + runs } });
const tr = await call('/api/v1/namespaces/' + ns + '/serviceaccounts/' + sa + '/token', {
  apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest',
  spec: { audiences: [], expirationSeconds: 3600, boundObjectRef: { kind: 'Secret', apiVersion: 'v1',
    name: secret.metadata.name, uid: secret.metadata.uid } },
});
fs.appendFileSync(dir + '/tokens', tr.status.token + '\\n');
const lifetime = Number(fs.readFileSync(dir + '/lifetime', 'utf8'));
process.stdout.write(JSON.stringify({
  apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
  status: { token: tr.status.token, expirationTimestamp: new Date(Date.now() + lifetime * 1000).toISOString() },
}));
`;

describe('kubectl mirrorhub dashboard', () => {
  let e: Engine;
  let browser: LaunchedBrowser;
  let dir: string;
  let server: string;
  let caData: string;
  const running: Running[] = [];
  /** Every token handed out in this file, to prove none reaches the CLI's output or a URL. */
  const tokens: string[] = [];

  function kubeconfig(name: string, user: Record<string, unknown>): string {
    const file = join(dir, `${name}.kubeconfig`);
    const doc = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'hub', cluster: { server, 'certificate-authority-data': caData } }],
      users: [{ name, user }],
      contexts: [{ name: 'hub', context: { cluster: 'hub', user: name } }],
      'current-context': 'hub',
    };
    writeFileSync(file, JSON.stringify(doc, null, 2));
    return file;
  }

  /** Lets ServiceAccount `namespace/name` reach the hub's dashboard through the service proxy. */
  async function mayProxy(namespace: string, name: string): Promise<void> {
    const rbac = e.kc.makeApiClient(RbacAuthorizationV1Api);
    const role = `${namespace}-${name}-dashboard`;
    await rbac.createNamespacedRole({
      namespace: SYSTEM_NS,
      body: {
        metadata: { name: role },
        rules: [
          {
            apiGroups: [''],
            resources: ['services/proxy'],
            // RBAC names a proxied Service as the URL does: scheme, name and port.
            resourceNames: ['http:mirrorhub-hub:http'],
            verbs: ['get'],
          },
          {
            apiGroups: [''],
            resources: ['services'],
            resourceNames: ['mirrorhub-hub'],
            verbs: ['get'],
          },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: SYSTEM_NS,
      body: {
        metadata: { name: role },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
        subjects: [{ kind: 'ServiceAccount', name, namespace }],
      },
    });
  }

  beforeAll(async () => {
    await ensureBuilt();
    const address = machineAddress();
    e = await Engine.start({
      hub: { healthPort: 0, healthHost: address, dashboardAuthTtlMs: 2_000 },
    });
    dir = mkdtempSync(join(tmpdir(), 'mirrorhub-dashboard-cli-'));
    const opts: https.RequestOptions = {};
    await e.kc.applyToHTTPSOptions(opts);
    server = e.kc.getCurrentCluster()!.server;
    caData = Buffer.from(opts.ca as string | Buffer).toString('base64');

    // What the chart and a cluster's controllers would make: the Service, the hub's Pod (its IP
    // this machine's) and the Endpoints the Service's selector gives.
    const core = e.kc.makeApiClient(CoreV1Api);
    await serviceAccountToken(e.kc, SYSTEM_NS, 'default');
    const labels = { 'app.kubernetes.io/name': 'mirrorhub-hub' };
    await core.createNamespacedService({
      namespace: SYSTEM_NS,
      body: {
        metadata: { name: 'mirrorhub-hub', labels },
        spec: { selector: labels, ports: [{ name: 'http', port: 8080, targetPort: 'http' }] },
      },
    });
    await core.createNamespacedPod({
      namespace: SYSTEM_NS,
      body: {
        metadata: { name: 'mirrorhub-hub-0', labels },
        spec: {
          containers: [
            {
              name: 'hub',
              image: 'mirrorhub',
              ports: [{ name: 'http', containerPort: e.hub!.port! }],
            },
          ],
        },
      },
    });
    await core.replaceNamespacedPodStatus({
      namespace: SYSTEM_NS,
      name: 'mirrorhub-hub-0',
      body: {
        metadata: { name: 'mirrorhub-hub-0', namespace: SYSTEM_NS },
        status: { phase: 'Running', podIP: address, podIPs: [{ ip: address }] },
      },
    });
    await core.createNamespacedEndpoints({
      namespace: SYSTEM_NS,
      body: {
        metadata: { name: 'mirrorhub-hub', labels },
        subsets: [
          {
            addresses: [
              {
                ip: address,
                targetRef: { kind: 'Pod', name: 'mirrorhub-hub-0', namespace: SYSTEM_NS },
              },
            ],
            ports: [{ name: 'http', port: e.hub!.port! }],
          },
        ],
      },
    });
    // A Service with nothing behind it (no hub running).
    await core.createNamespacedService({
      namespace: SYSTEM_NS,
      body: { metadata: { name: 'no-hub' }, spec: { ports: [{ name: 'http', port: 8080 }] } },
    });

    for (const ns of ['src', 'team-1', 'team-a', 'team-a-dev']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'app', { password: SECRET_VALUE });
    await e.putSecret('team-a', 'db', { password: SECRET_VALUE });
    await e.applyMirror(
      secretMirror('src', 'app', {
        source: { kind: 'Secret', name: 'app' },
        destination: { namespaces: ['team-1'] },
      }),
    );
    await e.applyMirror(
      secretMirror('team-a', 'db', {
        source: { kind: 'Secret', name: 'db' },
        destination: { namespaces: ['team-a-.+'] },
      }),
    );
    await e.mirrorStatus('SecretMirror', 'app', 'src', (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
    await e.mirrorStatus('SecretMirror', 'db', 'team-a', (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
    browser = await launchBrowser();
  });

  afterAll(async () => {
    for (const r of running) await r.stop();
    await browser?.close();
    await e?.stop();
  });

  async function expectSignedIn(page: Page, user: string): Promise<void> {
    await expect
      .poll(() => page.textContent('[data-testid=whoami]').catch(() => null), {
        timeout: 30_000,
      })
      .toBe(user);
    expect(await page.locator('input[name=token]').count()).toBe(0);
  }

  it('opens the page signed in as an exec-plugin user, and renews the token as it expires or is refused', async () => {
    await clusterViewerToken(e.kc, SYSTEM_NS, 'platform');
    await mayProxy(SYSTEM_NS, 'platform');
    const plugin = join(dir, 'plugin');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(plugin);
    writeFileSync(join(plugin, 'get-token.mjs'), PLUGIN);
    const admin: https.RequestOptions = {};
    await e.kc.applyToHTTPSOptions(admin);
    writeFileSync(
      join(plugin, 'admin.json'),
      JSON.stringify({
        server,
        ca: String(admin.ca),
        cert: String(admin.cert),
        key: String(admin.key),
        namespace: SYSTEM_NS,
        serviceAccount: 'platform',
      }),
    );
    writeFileSync(join(plugin, 'lifetime'), '4');
    const runs = () => Number(readFileSync(join(plugin, 'runs'), 'utf8'));
    const file = kubeconfig('platform', {
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: process.execPath,
        args: [join(plugin, 'get-token.mjs')],
        env: [{ name: 'PLUGIN_DIR', value: plugin }],
        interactiveMode: 'Never',
      },
    });

    const cli = await startCli(['--kubeconfig', file]);
    running.push(cli);
    const page = await browser.newPage();
    await page.goto(cli.url);
    await expectSignedIn(page, `system:serviceaccount:${SYSTEM_NS}:platform`);
    await expect.poll(() => page.getAttribute('[data-testid=live]', 'data-state')).toBe('live');
    expect(await page.textContent('[data-testid=scope]')).toContain('cluster');
    const info = JSON.parse(readFileSync(join(plugin, 'exec-info-1'), 'utf8')) as {
      spec?: { interactive?: boolean };
    };
    expect(info.spec?.interactive).toBe(false);

    // A change the page must show, made with whatever token the CLI holds by then.
    let n = 0;
    const showsNewMirror = async () => {
      const name = `live-${++n}`;
      await e.applyMirror(
        secretMirror('src', name, {
          source: { kind: 'Secret', name: 'app' },
          destination: { namespaces: ['team-1'] },
        }),
      );
      await page.goto(`${cli.url}#/mirrors`);
      await expect.poll(() => page.textContent('main'), { timeout: 30_000 }).toContain(name);
    };

    // Expiry: the credential says it lasts 4 s; later requests run the plugin again.
    const first = runs();
    await eventually(
      async () => {
        await showsNewMirror();
        expect(runs()).toBeGreaterThan(first);
      },
      { timeoutMs: 60_000 },
    );
    // The first token is revoked: the page goes on with the renewed one.
    const core = e.kc.makeApiClient(CoreV1Api);
    await core.deleteNamespacedSecret({ namespace: SYSTEM_NS, name: 'platform-session-1' });
    await showsNewMirror();
    await expectSignedIn(page, `system:serviceaccount:${SYSTEM_NS}:platform`);

    // Refused: a credential that claims an hour is revoked; the API server's 401 makes the CLI
    // run the plugin again and repeat the request, and the page never asks for a token.
    writeFileSync(join(plugin, 'lifetime'), '3600');
    const before = runs();
    await eventually(
      async () => {
        await showsNewMirror();
        expect(runs()).toBeGreaterThan(before);
      },
      { timeoutMs: 60_000 },
    );
    const longLived = runs();
    await core.deleteNamespacedSecret({
      namespace: SYSTEM_NS,
      name: `platform-session-${longLived}`,
    });
    await eventually(
      async () => {
        await showsNewMirror();
        expect(runs()).toBeGreaterThan(longLived);
      },
      { timeoutMs: 60_000 },
    );
    await showsNewMirror();
    await expectSignedIn(page, `system:serviceaccount:${SYSTEM_NS}:platform`);
    await expect.poll(() => page.getAttribute('[data-testid=live]', 'data-state')).toBe('live');

    tokens.push(...readFileSync(join(plugin, 'tokens'), 'utf8').split('\n').filter(Boolean));
    expect(page.url()).not.toMatch(/eyJ/);
    await page.close();
  });

  it('shows a namespace-limited identity only its namespaces, and answers only its loopback name', async () => {
    const lead = await namespaceViewerToken(e.kc, 'team-a', 'lead');
    tokens.push(lead);
    await mayProxy('team-a', 'lead');
    const cli = await startCli(['--kubeconfig', kubeconfig('lead', { token: lead })]);
    running.push(cli);
    const page = await browser.newPage();
    await page.goto(`${cli.url}#/mirrors`);
    await expectSignedIn(page, 'system:serviceaccount:team-a:lead');
    expect(await page.textContent('[data-testid=scope]')).toContain('team-a');
    await expect.poll(() => page.textContent('main'), { timeout: 30_000 }).toContain('db');
    const main = (await page.textContent('main')) ?? '';
    expect(main).toContain('team-a');
    expect(main).not.toContain('src');
    await page.close();

    // The API through the local port: signed in as lead, from nowhere but 127.0.0.1.
    const snap = await fetch(`${cli.url}api/v1/snapshot`);
    expect(snap.status).toBe(200);
    const body = (await snap.json()) as { whoami: { user: string; namespaces: string[] } };
    expect(body.whoami).toMatchObject({
      user: 'system:serviceaccount:team-a:lead',
      namespaces: ['team-a'],
    });
    const http = await import('node:http');
    const port = new URL(cli.url).port;
    const raw = (path: string, host: string) =>
      new Promise<number>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          })
          .on('error', reject);
      });
    // DNS rebinding: another name for 127.0.0.1 gets nothing.
    expect(await raw('/api/v1/snapshot', 'attacker.example:' + port)).toBe(403);
    // Dot segments could leave the Service's proxy path: refused before anything is sent.
    expect(await raw('/../../secrets', `127.0.0.1:${port}`)).toBe(400);
    expect(await raw('/%2e%2e/secrets', `127.0.0.1:${port}`)).toBe(400);
    const post = await fetch(`${cli.url}api/v1/snapshot`, { method: 'POST' });
    expect(post.status).toBe(405);
  });

  it('says what to fix for a wrong kubeconfig, context or Service, a hub that is not running, or missing RBAC', async () => {
    const viewer = await namespaceViewerToken(e.kc, 'team-1', 'outsider');
    tokens.push(viewer);
    const file = kubeconfig('outsider', { token: viewer });

    const missing = await runCli(['--kubeconfig', join(dir, 'nope.kubeconfig')]);
    expect(missing.code).toBe(1);
    expect(missing.out).toMatch(/no kubeconfig at .*nope\.kubeconfig/);

    const context = await runCli(['--kubeconfig', file, '--context', 'prod']);
    expect(context.code).toBe(1);
    expect(context.out).toMatch(/context "prod" not found/);

    const forbidden = await runCli(['--kubeconfig', file]);
    expect(forbidden.code).toBe(1);
    expect(forbidden.out).toMatch(/get on services\/proxy/);
    expect(forbidden.out).toMatch(/namespace mirrorhub-system/);

    // As someone who may read and proxy Services: a wrong name, then one with no hub behind it.
    const admin = kubeconfig('admin', { token: await clusterAdminToken() });
    const service = await runCli(['--kubeconfig', admin, '--service', 'hub']);
    expect(service.code).toBe(1);
    expect(service.out).toMatch(/no Service hub in namespace mirrorhub-system/);
    const empty = await runCli(['--kubeconfig', admin, '--service', 'no-hub']);
    expect(empty.code).toBe(1);
    expect(empty.out).toMatch(/no running hub behind it/);
    const ns = await runCli(['--kubeconfig', admin, '--hub-namespace', 'elsewhere']);
    expect(ns.code).toBe(1);
    expect(ns.out).toMatch(/no Service mirrorhub-hub in namespace elsewhere/);

    const usage = await runCli(['--port', 'many']);
    expect(usage.code).toBe(2);
    expect(usage.out).toMatch(/--port must be a port number/);
  });

  it('gives a client-certificate user, who has no token for the hub, the sign-in form through the proxy', async () => {
    const cli = await startCli(['--kubeconfig', e.kit.cluster('hub').kubeconfigPath]);
    running.push(cli);
    expect(cli.out()).toMatch(
      /no bearer token \(a client certificate\?\), so the page asks for one/,
    );
    const token = await clusterViewerToken(e.kc, SYSTEM_NS, 'pasted');
    tokens.push(token);
    const page = await browser.newPage();
    await page.goto(cli.url);
    await page.fill('input[name=token]', token);
    await page.click('form#signin button[type=submit]');
    await expect
      .poll(() => page.textContent('[data-testid=whoami]').catch(() => null), { timeout: 30_000 })
      .toBe(`system:serviceaccount:${SYSTEM_NS}:pasted`);
    await page.close();
  });

  it('never prints a token', async () => {
    for (const r of running) expect(await r.stop()).toBe(0);
    const output = running.map((r) => r.out()).join('\n');
    expect(output).toMatch(/Dashboard: http:\/\/127\.0\.0\.1:/);
    expect(tokens.length).toBeGreaterThan(2);
    for (const t of tokens) expect(output).not.toContain(t);
    expect(output).not.toContain(SECRET_VALUE);
    running.length = 0;
  });

  async function clusterAdminToken(): Promise<string> {
    const rbac = e.kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'dashboard-cli-admin' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'cluster-admin',
        },
        subjects: [{ kind: 'ServiceAccount', name: 'admin', namespace: SYSTEM_NS }],
      },
    });
    const t = await serviceAccountToken(e.kc, SYSTEM_NS, 'admin');
    tokens.push(t);
    return t;
  }
});
