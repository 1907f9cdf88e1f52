// The whole hub behind an egress proxy: MirrorClusters for EKS followers, the hub configured as
// main.ts configures it from HTTPS_PROXY / HTTP_PROXY, a mirror delivered to both followers. The
// CONNECT proxy (support/connect-proxy.ts) records every tunnel: STS, EKS and each follower's API
// server are reached through it, and the hub's own API server is not (the pod's service account
// is never proxied). STS, EKS and the followers' endpoints go by names only the proxy resolves
// (`*.proxy-only.test`, and `kubernetes.default.svc`, which the API servers' certificates name),
// so a connection that went around the proxy would fail, not pass unseen. The kit's STS and EKS are http:// on loopback (HTTP_PROXY); the API servers
// https:// (HTTPS_PROXY, TLS end to end through the tunnel).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { proxyEnvFrom } from '@mirrorhub/hub/clusters/egress-proxy';

import { ConnectProxy } from '../support/connect-proxy.js';
import { eventually } from '../support/eventually.js';
import {
  clusterSecretMirror,
  condition,
  FOLLOWERS,
  HUB,
  MultiCluster,
} from '../support/multicluster.js';

const PROXY_PASSWORD = 'egress-pw-41d9';

describe('a hub behind an egress proxy', () => {
  let m: MultiCluster;
  const proxy = new ConnectProxy((h) =>
    h.endsWith('.proxy-only.test') || h === 'kubernetes.default.svc' ? '127.0.0.1' : h,
  );
  /** `url` with its host replaced by one only the proxy resolves. */
  const proxyOnly = (url: string, name: string) => {
    const u = new URL(url);
    u.hostname = name;
    return u.origin;
  };

  beforeAll(async () => {
    await proxy.start();
    const url = proxy.url(`ops:${PROXY_PASSWORD}`);
    m = await MultiCluster.start({
      followers: FOLLOWERS.filter((f) => f.labels['env'] === 'prod'),
      hub: { proxy: proxyEnvFrom({ HTTPS_PROXY: url, HTTP_PROXY: url }) },
    });
    // The hub again, now that AWS answers with names only the proxy resolves.
    await m.stopHub();
    for (const f of m.followers) {
      m.kit.aws!.describeEndpoint(
        f.name,
        proxyOnly(m.kit.cluster(f.name).server, 'kubernetes.default.svc'),
      );
    }
    proxy.reset();
    const { stsEndpoint, eksEndpoint } = m.kit.aws!;
    await m.startHub({
      aws: {
        stsEndpoint: proxyOnly(stsEndpoint, 'sts.proxy-only.test'),
        eksEndpoint: proxyOnly(eksEndpoint, 'eks.proxy-only.test'),
      },
    });
    for (const c of m.names()) await m.ensureNamespace(c, 'team-a');
    await m.ensureNamespace(HUB, 'certs');
    await m.putSecret(HUB, 'certs', 'wildcard-tls', { 'tls.crt': 'cert-1', 'tls.key': 'key-1' });
    await m.applyMirror(
      clusterSecretMirror('wildcard-tls', {
        source: { kind: 'Secret', name: 'wildcard-tls', namespace: 'certs' },
        destination: {
          clusters: { selector: { matchLabels: { env: 'prod' } } },
          namespaces: ['team-.+'],
        },
      }),
    );
  });

  afterAll(async () => {
    await m?.stop();
    await proxy.stop();
  });

  it('reaches STS, EKS and every follower only through the proxy, and delivers', async () => {
    for (const f of m.followers) {
      await m.mirrorClusterStatus(f.name, (mc) =>
        expect(condition(mc, 'Ready')?.status).toBe('True'),
      );
    }
    await eventually(
      async () => {
        for (const f of m.followers)
          expect(await m.copies(f.name, 'wildcard-tls')).toEqual(['team-a']);
      },
      { timeoutMs: 60_000 },
    );
    const port = (url: string) => new URL(url).port;
    const { stsEndpoint, eksEndpoint } = m.kit.aws!;
    expect(proxy.distinct()).toEqual(
      [
        `sts.proxy-only.test:${port(stsEndpoint)}`,
        `eks.proxy-only.test:${port(eksEndpoint)}`,
        ...m.followers.map((f) => `kubernetes.default.svc:${port(m.kit.cluster(f.name).server)}`),
      ].sort(),
    );
    expect(proxy.distinct().join()).not.toContain(`:${port(m.kit.cluster(HUB).server)}`);
    expect(m.logs.text()).not.toContain(PROXY_PASSWORD);
  });
});
