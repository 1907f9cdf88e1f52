// Two hub replicas behind one Service: whichever answers, the viewer gets the leader's dashboard.
// The standby passes API requests (the event stream too) to the leader, found from the Lease
// holder and that pod's IP; a pod that is not one of the Deployment's replicas is never used.
// It passes on only what it checked itself: a GET of a dashboard route from a token it reviewed.
import net from 'node:net';

import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createHub, type Hub } from '@mirrorhub/hub/hub';
import { podLeaderLocator } from '@mirrorhub/hub/dashboard/proxy';
import type { Snapshot } from '@mirrorhub/hub/dashboard/types';
import { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { mergePatchOptions } from '@mirrorhub/shared/testing/index';

import { Engine, secretMirror, SYSTEM_NS } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { clusterViewerToken, serviceAccountToken } from '../support/viewers.js';

const LEADER = 'hub-0_0000aaaa';
const STANDBY = 'hub-1_0000bbbb';
const ELECTION = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };

describe('the dashboard behind a Service with two hub replicas', () => {
  let e: Engine;
  let standby: Hub | undefined;
  let token: string;
  const ports = new Map<string, number>();
  // The standby reaches the leader through a relay that records every request line it passes.
  let leaderRelay: TcpProxy | undefined;
  let leaderBytes = '';
  const leaderSaw = () =>
    [...leaderBytes.matchAll(/^([A-Z]+ \S+) HTTP\/1\.1\r$/gm)].map((m) => m[1]);
  const locate = async (holder: string) => {
    const port = holder === LEADER ? leaderRelay?.port : ports.get(holder);
    return port ? `http://127.0.0.1:${port}` : undefined;
  };

  async function snapshot(port: number): Promise<{ status: number; body: Snapshot }> {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/snapshot`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return { status: res.status, body: (await res.json()) as Snapshot };
  }

  beforeAll(async () => {
    e = await Engine.start({
      hub: {
        identity: LEADER,
        leaderElection: ELECTION,
        healthPort: 0,
        healthHost: '127.0.0.1',
        dashboardLeader: locate,
      },
    });
    ports.set(LEADER, e.hub!.port!);
    leaderRelay = new TcpProxy(e.hub!.port!, (chunk) => (leaderBytes += chunk.toString('latin1')));
    await leaderRelay.open();
    standby = createHub(e.hubConfig({ identity: STANDBY }));
    await standby.start();
    ports.set(STANDBY, standby.port!);
    expect(standby.isLeader()).toBe(false);
    // Pods need their namespace's default ServiceAccount (the kit runs no controller for it).
    await serviceAccountToken(e.kc, SYSTEM_NS, 'default');
    token = await clusterViewerToken(e.kc, SYSTEM_NS, 'viewer');
    await e.ensureNamespace('src');
    await e.ensureNamespace('team-1');
    await e.putSecret('src', 'app', { k: 'v' });
    await e.applyMirror(
      secretMirror('src', 'app', {
        source: { kind: 'Secret', name: 'app' },
        destination: { namespaces: ['team-.+'] },
      }),
    );
    await e.mirrorStatus('SecretMirror', 'app', 'src', (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
  });

  afterAll(async () => {
    await leaderRelay?.cut();
    await standby?.stop();
    await e?.stop();
  });

  it("answers through the standby with the leader's caches, and streams its changes", async () => {
    const direct = await snapshot(ports.get(LEADER)!);
    const via = await snapshot(ports.get(STANDBY)!);
    expect(via.status).toBe(200);
    expect(via.body.hub.leader).toBe(true); // the leader's answer
    expect(via.body.mirrors).toEqual(direct.body.mirrors);

    const ctrl = new AbortController();
    const res = await fetch(`http://127.0.0.1:${ports.get(STANDBY)}/api/v1/watch`, {
      headers: { authorization: `Bearer ${token}` },
      signal: ctrl.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += new TextDecoder().decode(value);
      }
    })().catch(() => undefined);
    await e.ensureNamespace('team-2'); // a new copy: news for every open dashboard
    await eventually(() => expect(text.match(/event: changed/g)?.length ?? 0).toBeGreaterThan(1));
    ctrl.abort();
    await reading;

    // Without a token the standby answers itself: nothing is passed on unauthenticated.
    const anon = await fetch(`http://127.0.0.1:${ports.get(STANDBY)}/api/v1/snapshot`);
    expect(anon.status).toBe(401);
  });

  it('passes on nothing it did not check: no other host, no unknown token, method or path', async () => {
    // Anything that connects here was sent by the standby to a host of the request's choosing.
    const canaryConnections: string[] = [];
    const canary = net.createServer((s) => {
      canaryConnections.push(`${s.remoteAddress}:${s.remotePort}`);
      s.destroy();
    });
    await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
    const c = (canary.address() as net.AddressInfo).port;
    const standbyPort = ports.get(STANDBY)!;
    const bearer = `authorization: Bearer ${token}`;
    try {
      const before = leaderSaw();
      const refused: [string, string[], number][] = [
        // Absolute and scheme-relative targets, with a valid token: 400, nothing opened.
        [`GET http://127.0.0.1:${c}/x HTTP/1.1`, [bearer], 400],
        [`GET http://127.0.0.1:${c}/api/v1/snapshot HTTP/1.1`, [bearer], 400],
        [`GET //127.0.0.1:${c}/x HTTP/1.1`, [bearer], 400],
        [`GET //127.0.0.1:${c}/api/v1/watch HTTP/1.1`, [bearer], 400],
        [`GET /\\127.0.0.1:${c}/api/v1/snapshot HTTP/1.1`, [bearer], 400],
        // A token the API server does not accept: the standby answers itself.
        ['GET /api/v1/snapshot HTTP/1.1', ['authorization: Bearer garbage'], 401],
        [`GET http://127.0.0.1:${c}/api/v1/snapshot HTTP/1.1`, ['authorization: Bearer x'], 400],
        // Other methods, unknown paths and queries, dot segments: never forwarded.
        ['POST /api/v1/snapshot HTTP/1.1', [bearer, 'content-length: 0'], 405],
        ['DELETE /api/v1/mirrors/SecretMirror/src/app HTTP/1.1', [bearer], 405],
        ['HEAD /api/v1/snapshot HTTP/1.1', [bearer], 405],
        ['GET /api/v1/secrets HTTP/1.1', [bearer], 404],
        ['GET /api/v1/snapshot?groupBy=a&watch=1 HTTP/1.1', [bearer], 400],
        ['GET /api/v1/mirrors/SecretMirror/src/%2e%2e HTTP/1.1', [bearer], 400],
      ];
      for (const [line, headers, status] of refused) {
        expect((await rawRequest(standbyPort, line, headers)).status, line).toBe(status);
      }
      expect(canaryConnections).toEqual([]);
      expect(leaderSaw()).toEqual(before);

      // A viewer's GET of a real route still reaches the leader, as the path the standby checked.
      const ok = await rawRequest(standbyPort, 'GET /api/v1/snapshot?groupBy=env HTTP/1.1', [
        bearer,
      ]);
      expect(ok.status).toBe(200);
      expect((JSON.parse(ok.body) as Snapshot).hub.leader).toBe(true);
      expect(leaderSaw()).toEqual([...before, 'GET /api/v1/snapshot?groupBy=env']);
      expect(canaryConnections).toEqual([]);
    } finally {
      await new Promise((resolve) => canary.close(resolve));
    }
  });

  it('serves from its own caches once it leads', async () => {
    await e.stopHub();
    await eventually(() => expect(standby!.isLeader()).toBe(true), { timeoutMs: 30_000 });
    await eventually(
      async () => {
        const s = await snapshot(ports.get(STANDBY)!);
        expect(s.status).toBe(200);
        expect(s.body.mirrors.map((m) => m.key)).toEqual(['SecretMirror/src/app']);
      },
      { timeoutMs: 30_000 },
    );
  });

  it('finds the leader pod only among the replicas of its own Deployment', async () => {
    const core = e.kc.makeApiClient(CoreV1Api);
    const app = { 'app.kubernetes.io/name': 'mirrorhub-hub', 'app.kubernetes.io/instance': 'mh' };
    const pod = async (name: string, labels: Record<string, string>, ip: string) => {
      const body: V1Pod = {
        metadata: { name, labels },
        spec: { containers: [{ name: 'hub', image: 'mirrorhub' }] },
      };
      await core.createNamespacedPod({ namespace: SYSTEM_NS, body });
      await core.patchNamespacedPodStatus(
        { namespace: SYSTEM_NS, name, body: { status: { podIP: ip, podIPs: [{ ip }] } } },
        mergePatchOptions(),
      );
    };
    await pod('hub-a', app, '10.1.0.1');
    await pod('hub-b', app, '10.1.0.2');
    await pod('intruder', { 'app.kubernetes.io/name': 'mirrorhub-hub' }, '10.9.9.9');
    const rest = new RestClient(e.kc);
    try {
      const locate = podLeaderLocator({ rest, namespace: SYSTEM_NS, selfPod: 'hub-a', port: 8080 });
      expect(await locate('hub-b_0123abcd')).toBe('http://10.1.0.2:8080');
      expect(await locate('intruder_0123abcd')).toBeUndefined();
      expect(await locate('gone_0123abcd')).toBeUndefined();
    } finally {
      rest.close();
    }
  });
});

/** One request on its own connection, the request line exactly as given (fetch() would fix it). */
async function rawRequest(
  port: number,
  requestLine: string,
  headers: string[],
): Promise<{ status: number; body: string }> {
  const text = await new Promise<string>((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.write([requestLine, 'host: hub', 'connection: close', ...headers, '', ''].join('\r\n'));
    });
    let got = '';
    sock.on('data', (d: Buffer) => (got += d.toString()));
    sock.on('end', () => resolve(got));
    sock.on('error', reject);
  });
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1]);
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  return { status, body };
}
