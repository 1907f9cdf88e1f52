// Health probes reuse one connection per cluster. A local HTTP server answers like an API server
// (GET /version, the agent's Lease) and counts the connections the hub opens: a client per probe
// paid a handshake per request and left every kept-alive socket open in the hub (at 100 clusters
// probed every 10 s, thousands of idle sockets).
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { ProbeClient, probeCluster, type ProbeContext } from './probe.js';

let server: http.Server;
let url: string;
const sockets: Socket[] = [];
let requests = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requests++;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    res.setHeader('Content-Type', 'application/json');
    if (path === '/version') {
      res.end(JSON.stringify({ gitVersion: 'v1.34.0' }));
    } else if (path === '/apis/coordination.k8s.io/v1/namespaces/mh/leases/mirrorhub-agent') {
      res.end(
        JSON.stringify({
          metadata: {
            name: 'mirrorhub-agent',
            annotations: { 'mirrorhub.io/agent-version': '1.2.3' },
          },
          spec: { holderIdentity: 'agent-0', renewTime: '2026-11-25T10:00:00.000000Z' },
        }),
      );
    } else {
      res.statusCode = 404;
      res.end('{"kind":"Status","code":404}');
    }
  });
  server.on('connection', (s: Socket) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function access(): KubeAccess {
  return { getCurrentCluster: () => ({ server: url }), applyToHTTPSOptions: async () => {} };
}

const ctx: ProbeContext = {
  cluster: 'c',
  type: 'Kubeconfig',
  agentNamespace: 'mh',
  timeoutMs: 5_000,
};
const open = () => sockets.filter((s) => !s.destroyed).length;
const closed = async () => {
  // the server sees a client's close on its next turn
  await new Promise((r) => setTimeout(r, 50));
};

describe('health probes', () => {
  it('read the version and the heartbeat over one connection, probe after probe', async () => {
    const before = sockets.length;
    const served = requests;
    const kc = access();
    const client = new ProbeClient(5_000);
    for (let i = 0; i < 20; i++) {
      const r = await probeCluster(
        async () => kc,
        client,
        ctx,
        () => {},
        Date.now,
      );
      expect(r.version).toEqual({ ok: true, gitVersion: 'v1.34.0' });
      expect(r.lease).toEqual({
        ok: true,
        lease: { renewTime: '2026-11-25T10:00:00.000000Z', version: '1.2.3', holder: 'agent-0' },
      });
    }
    expect(requests - served).toBe(40);
    expect(sockets.length - before).toBe(1);
    client.close();
    await closed();
    expect(open()).toBe(0);
  });

  it('open a new connection when the cluster access is replaced, and close the old one', async () => {
    const before = sockets.length;
    const client = new ProbeClient(5_000);
    const first = access();
    await probeCluster(
      async () => first,
      client,
      ctx,
      () => {},
      Date.now,
    );
    await probeCluster(
      async () => first,
      client,
      ctx,
      () => {},
      Date.now,
    );
    expect(sockets.length - before).toBe(1);
    const rotated = access(); // e.g. a new kubeconfig in the Secret, or a moved EKS endpoint
    await probeCluster(
      async () => rotated,
      client,
      ctx,
      () => {},
      Date.now,
    );
    await closed();
    expect(sockets.length - before).toBe(2);
    expect(open()).toBe(1);
    client.close();
    await closed();
    expect(open()).toBe(0);
  });

  it('report a cluster access without a server as an access error, not a crash', async () => {
    const client = new ProbeClient(5_000);
    const r = await probeCluster(
      async () => ({ getCurrentCluster: () => null, applyToHTTPSOptions: async () => {} }),
      client,
      ctx,
      () => {},
      Date.now,
    );
    expect(r.accessError).toBe('the kubeconfig has no current cluster');
  });
});
