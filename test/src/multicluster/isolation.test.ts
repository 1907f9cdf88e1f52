// One follower that never answers (a TCP listener that accepts and stays silent) and one that
// refuses the hub's credentials (401) must not delay the others: every cluster has its own
// connection, queue, probe loop and request deadline. Both are non-EKS clusters registered with a
// kubeconfig Secret, and rotating that Secret to a working kubeconfig is picked up at once.
import { createServer, type Server, type Socket } from 'node:net';

import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventually } from '../support/eventually.js';
import {
  clusterSecretMirror,
  condition,
  HUB,
  MultiCluster,
  SYSTEM_NS,
} from '../support/multicluster.js';

const TIMEOUT_MS = 3_000;

function kubeconfig(server: string, token: string, caPem?: string): string {
  const cluster = caPem
    ? `certificate-authority-data: ${Buffer.from(caPem).toString('base64')}`
    : 'insecure-skip-tls-verify: true';
  return [
    'apiVersion: v1',
    'kind: Config',
    'current-context: c',
    'contexts: [{ name: c, context: { cluster: c, user: u } }]',
    `clusters: [{ name: c, cluster: { server: "${server}", ${cluster} } }]`,
    `users: [{ name: u, user: { token: "${token}" } }]`,
    '',
  ].join('\n');
}

describe('a silent follower and one that refuses the hub', () => {
  let m: MultiCluster;
  let blackhole: Server;
  const sockets = new Set<Socket>();
  const KIND = 'ClusterSecretMirror';

  beforeAll(async () => {
    blackhole = createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
    const port = (blackhole.address() as { port: number }).port;

    m = await MultiCluster.start({
      registerFollowers: false,
      hub: { clusterRequestTimeoutMs: TIMEOUT_MS },
    });
    for (const c of ['follower-a', 'follower-b', 'follower-c'])
      await m.ensureNamespace(c, 'team-a');
    await m.ensureNamespace(HUB, 'certs');
    await m.putSecret(HUB, 'certs', 'tls', { v: '1' });
    await m.putSecret(HUB, SYSTEM_NS, 'silent-kubeconfig', {
      kubeconfig: kubeconfig(`https://127.0.0.1:${port}`, 'whatever'),
    });
    const c = m.kit.cluster('follower-c');
    await m.putSecret(HUB, SYSTEM_NS, 'follower-c-kubeconfig', {
      kubeconfig: kubeconfig(c.server, 'not-a-valid-token', c.caPem),
    });
    const prod = { env: 'prod' };
    await m.applyMirrorCluster(
      'silent',
      { kubeconfigSecretRef: { namespace: SYSTEM_NS, name: 'silent-kubeconfig' } },
      prod,
    );
    await m.applyMirrorCluster(
      'follower-c',
      { kubeconfigSecretRef: { namespace: SYSTEM_NS, name: 'follower-c-kubeconfig' } },
      prod,
    );
    await m.registerEks('follower-a', prod);
    await m.registerEks('follower-b', prod);
    await m.applyMirror(
      clusterSecretMirror('tls', {
        source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
        destination: { clusters: { selector: { matchLabels: prod } }, namespaces: ['team-a'] },
      }),
    );
  });

  afterAll(async () => {
    await m?.stop();
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => blackhole?.close(resolve));
  });

  it('delivers to the healthy followers without waiting for the others', async () => {
    const started = Date.now();
    await eventually(
      async () => {
        for (const c of ['follower-a', 'follower-b'])
          expect(await m.secretData(c, 'team-a', 'tls')).toEqual({ v: '1' });
      },
      { timeoutMs: 15_000 },
    );
    console.error(
      `isolation: first delivery to the healthy followers after ${Date.now() - started} ms`,
    );

    const silent = await m.mirrorClusterStatus('silent', (mc) => {
      expect(mc.status?.reachable).toBe(false);
      expect(mc.status?.lastError).toMatch(
        /^GET \/version: no response in 3 s; check that the hub can reach https:\/\/127\.0\.0\.1:\d+/,
      );
    });
    expect(silent.status?.type).toBe('Kubeconfig');
    const refusing = await m.mirrorClusterStatus('follower-c', (mc) =>
      expect(condition(mc, 'Ready')?.reason).toBe('Unauthorized'),
    );
    expect(refusing.status).toMatchObject({ reachable: true, authenticated: false });
    expect(refusing.status?.lastError).toMatch(
      /refused the hub's credentials \(401 Unauthorized\); check the credentials in the kubeconfig Secret mirrorhub-system\/follower-c-kubeconfig/,
    );

    // With both of them failing all along, a source change still reaches the others at once.
    for (let i = 2; i <= 4; i++) {
      const t = Date.now();
      await m.putSecret(HUB, 'certs', 'tls', { v: String(i) });
      await eventually(async () => {
        for (const c of ['follower-a', 'follower-b'])
          expect(await m.secretData(c, 'team-a', 'tls')).toEqual({ v: String(i) });
      });
      const ms = Date.now() - t;
      console.error(`isolation: source change ${i} reached both healthy followers in ${ms} ms`);
      expect(ms).toBeLessThan(TIMEOUT_MS);
    }
    await m.mirrorStatus(KIND, 'tls', undefined, (s) => {
      const byName = Object.fromEntries((s.status?.clusters ?? []).map((c) => [c.name, c]));
      expect(byName['follower-a']?.phase).toBe('Active');
      expect(byName['follower-b']?.phase).toBe('Active');
      expect(byName['silent']).toMatchObject({
        phase: 'Error',
        message: expect.stringMatching(/^cluster unreachable: .*no response in 3/),
      });
      expect(byName['follower-c']).toMatchObject({
        phase: 'Error',
        message: expect.stringMatching(/^cluster unreachable: .*401/),
      });
    });
  });

  it('picks up a rotated kubeconfig Secret at once', async () => {
    // A ServiceAccount in follower-c bound to the chart's hub-access Role (hubAccess.users).
    const c = m.kit.cluster('follower-c');
    const admin = c.kubeConfig();
    await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccount({
      namespace: SYSTEM_NS,
      body: { metadata: { name: 'mirrorhub-hub' } },
    });
    await admin.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace: SYSTEM_NS,
      body: {
        metadata: { name: 'mirrorhub-hub-sa' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'Role',
          name: 'mirrorhub-agent-hub-access',
        },
        subjects: [{ kind: 'ServiceAccount', name: 'mirrorhub-hub', namespace: SYSTEM_NS }],
      },
    });
    const token = (
      await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
        namespace: SYSTEM_NS,
        name: 'mirrorhub-hub',
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      })
    ).status!.token;
    await m.putSecret(HUB, SYSTEM_NS, 'follower-c-kubeconfig', {
      kubeconfig: kubeconfig(c.server, token, c.caPem),
    });
    await eventually(
      async () => expect(await m.secretData('follower-c', 'team-a', 'tls')).toEqual({ v: '4' }),
      { timeoutMs: 20_000 },
    );
    const mc = await m.mirrorClusterStatus('follower-c', (mc) =>
      expect(condition(mc, 'Ready')?.status).toBe('True'),
    );
    expect(mc.status).toMatchObject({
      type: 'Kubeconfig',
      reachable: true,
      authenticated: true,
      agent: { present: true },
    });
    expect(mc.status?.lastError).toBeUndefined();
  });

  it('refuses a kubeconfig that would run a program on the hub, saying so', async () => {
    await m.putSecret(HUB, SYSTEM_NS, 'silent-kubeconfig', {
      kubeconfig: kubeconfig('https://127.0.0.1:1', 'x').replace(
        'user: { token: "x" }',
        'user: { exec: { command: /bin/sh, args: ["-c", "touch /tmp/pwned"], apiVersion: client.authentication.k8s.io/v1 } }',
      ),
    });
    const mc = await m.mirrorClusterStatus('silent', (mc) =>
      expect(condition(mc, 'Ready')?.reason).toBe('AccessFailed'),
    );
    expect(mc.status?.lastError).toMatch(
      /Secret mirrorhub-system\/silent-kubeconfig .* uses an exec credential plugin; the hub runs no programs/,
    );
  });
});
