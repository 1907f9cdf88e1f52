// The hub behind an egress proxy, and with one STS / EKS endpoint per region, on the kit: moto
// as STS, the EKS emulator, real kube-apiservers. The hub's own connection code (StsClients and
// EksClusterAccess for EKS followers, a MirrorCluster kubeconfig for the other, the REST client
// and list/watch transport over them) with the configuration main.ts reads from HTTPS_PROXY /
// HTTP_PROXY / NO_PROXY and MIRRORHUB_{STS,EKS}_ENDPOINT[_<REGION>].
//
// The proxy is a CONNECT proxy written here (support/connect-proxy.ts): it records each
// tunnel's target and answers anything else 405, so a request sent to it in the clear fails.
// The kit's STS and EKS are http:// on loopback, so they go through HTTP_PROXY (tunnelled the
// same way); the API servers are https:// and go through HTTPS_PROXY with TLS end to end.
import { readFile } from 'node:fs/promises';

import type { Principal } from '@mirrorhub/infra/aws/moto';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import { hubWithEditAccess } from './support/edit-access.js';
import { EksClusterAccess, StsClients } from '@mirrorhub/hub/clusters/aws/cluster-access';
import { endpointOverridesFromEnv } from '@mirrorhub/hub/clusters/aws/endpoints';
import { timedRestClient } from '@mirrorhub/hub/clusters/client';
import { proxyEnvFrom, type ProxyEnv } from '@mirrorhub/hub/clusters/egress-proxy';
import { parseKubeconfig } from '@mirrorhub/hub/clusters/kubeconfig';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { kubeListerWatcher } from '@mirrorhub/shared/kit/k8s/listwatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ConnectProxy } from './support/connect-proxy.js';
import { TcpProxy } from './support/tcp-proxy.js';

const AGENT_NS = 'mirrorhub-system';
const EXTERNAL_ID = 'mirrorhub-egress-test';
/** In the proxy URL: it must reach the proxy, and no message or status. */
const PROXY_PASSWORD = 'pr0xy-pw-7c41';

let kit: Kit;
let hub: Principal;
let roleArn: string;
let proxy: ConnectProxy;
/** follower-b's kubeconfig as a MirrorCluster Secret carries it (inline credentials). */
let kubeconfigB: string;
const cleanups: (() => void)[] = [];

const hostOf = (url: string) => new URL(url).host;

/** What the hub does for an EKS follower with `env` as its environment. */
function eksFollower(env: Record<string, string>, region?: string): EksClusterAccess {
  const proxyEnv = proxyEnvFrom(env);
  const sts = endpointOverridesFromEnv(env, 'sts');
  const eks = endpointOverridesFromEnv(env, 'eks');
  const clients = new StsClients({
    baseCredentials: hub.credentials,
    ...(sts?.global ? { stsEndpoint: sts.global } : {}),
    ...(sts?.byRegion ? { stsEndpoints: sts.byRegion } : {}),
    proxy: proxyEnv,
  });
  const access = new EksClusterAccess({
    cluster: {
      name: 'follower-a',
      region: region ?? kit.aws!.region,
      roleArn,
      externalId: EXTERNAL_ID,
    },
    stsClients: clients,
    ...(eks?.global ? { eksEndpoint: eks.global } : {}),
    ...(eks?.byRegion ? { eksEndpoints: eks.byRegion } : {}),
    proxy: proxyEnv,
    backoff: { initialMs: 10, maxMs: 10 },
  });
  cleanups.push(() => {
    access.destroy();
    clients.destroy();
  });
  return access;
}

/** What the hub does for a kubeconfig follower (MirrorCluster.spec.kubeconfigSecretRef). */
function kubeconfigFollower(text: string, proxyEnv: ProxyEnv): KubeAccess {
  const parsed = parseKubeconfig(text, 'Secret mirrorhub-system/follower-b (key "kubeconfig")', {
    proxy: proxyEnv,
  });
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.kubeConfig;
}

/** A request and a list, as the hub's probe and informers make them. */
async function reach(access: KubeAccess): Promise<void> {
  const rest = timedRestClient(access);
  cleanups.push(() => rest.close());
  const secret = await rest.get<{ metadata: { name: string } }>(
    `/api/v1/namespaces/${AGENT_NS}/secrets/payload`,
  );
  expect(secret.metadata.name).toBe('payload');
  const page = await kubeListerWatcher(access, {
    group: '',
    version: 'v1',
    plural: 'secrets',
    namespace: AGENT_NS,
  }).list({ limit: 10 });
  expect(page.items.length).toBeGreaterThan(0);
}

beforeAll(async () => {
  kit = await startKit({ clusters: ['hub', 'follower-a', 'follower-b'] });
  ({ hub, roleArn } = await hubWithEditAccess(kit, {
    hubCluster: 'hub',
    follower: 'follower-a',
    externalId: EXTERNAL_ID,
    namespace: AGENT_NS,
  }));
  for (const name of ['follower-a', 'follower-b']) {
    const { CoreV1Api } = await import('@kubernetes/client-node');
    const core = kit.cluster(name).kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: AGENT_NS } } }).catch(() => undefined);
    await core.createNamespacedSecret({
      namespace: AGENT_NS,
      body: { metadata: { name: 'payload' }, stringData: { k: 'v' } },
    });
  }
  kubeconfigB = await readFile(kit.cluster('follower-b').kubeconfigPath, 'utf8');
  proxy = new ConnectProxy();
  await proxy.start();
}, 10 * 60_000);

afterAll(async () => {
  for (const c of cleanups) c();
  await proxy?.stop();
  await kit?.stop();
});

describe('the egress proxy', () => {
  it('takes every connection to STS, EKS and each follower through the proxy when HTTPS_PROXY is set', async () => {
    proxy.reset();
    const url = proxy.url(`ops:${PROXY_PASSWORD}`);
    const env = {
      HTTPS_PROXY: url,
      HTTP_PROXY: url,
      MIRRORHUB_STS_ENDPOINT: kit.aws!.stsEndpoint,
      MIRRORHUB_EKS_ENDPOINT: kit.aws!.eksEndpoint,
    };
    const a = eksFollower(env);
    await reach(await a.kubeAccess());
    await reach(kubeconfigFollower(kubeconfigB, proxyEnvFrom(env)));
    const serverA = a.health().server!;
    expect(proxy.distinct()).toEqual(
      [
        hostOf(kit.aws!.stsEndpoint),
        hostOf(kit.aws!.eksEndpoint),
        hostOf(serverA),
        hostOf(kit.cluster('follower-b').server),
      ].sort(),
    );
    expect(new Set(proxy.authorizations)).toEqual(
      new Set([`Basic ${Buffer.from(`ops:${PROXY_PASSWORD}`).toString('base64')}`]),
    );
    expect(JSON.stringify(a.health())).not.toContain(PROXY_PASSWORD);
  });

  it('goes direct to NO_PROXY hosts: the proxy records none of them', async () => {
    proxy.reset();
    const serverA = (
      await eksFollower({
        MIRRORHUB_STS_ENDPOINT: kit.aws!.stsEndpoint,
        MIRRORHUB_EKS_ENDPOINT: kit.aws!.eksEndpoint,
      }).endpoint()
    ).server;
    const env = {
      https_proxy: proxy.url(),
      http_proxy: proxy.url(),
      // STS and EKS by host:port, follower-a by its IP with its port; follower-b is not listed
      no_proxy: [hostOf(kit.aws!.stsEndpoint), hostOf(kit.aws!.eksEndpoint), hostOf(serverA)].join(
        ',',
      ),
      MIRRORHUB_STS_ENDPOINT: kit.aws!.stsEndpoint,
      MIRRORHUB_EKS_ENDPOINT: kit.aws!.eksEndpoint,
    };
    await reach(await eksFollower(env).kubeAccess());
    await reach(kubeconfigFollower(kubeconfigB, proxyEnvFrom(env)));
    expect(proxy.distinct()).toEqual([hostOf(kit.cluster('follower-b').server)]);

    // NO_PROXY=* : nothing at all through the proxy
    proxy.reset();
    const all = { ...env, no_proxy: '*' };
    await reach(await eksFollower(all).kubeAccess());
    await reach(kubeconfigFollower(kubeconfigB, proxyEnvFrom(all)));
    expect(proxy.targets).toEqual([]);
  });

  it("honours a kubeconfig's proxy-url whatever NO_PROXY says", async () => {
    proxy.reset();
    const withProxyUrl = kubeconfigB.replace(
      /^(\s+)server: (.+)$/m,
      `$1server: $2\n$1proxy-url: ${proxy.url()}`,
    );
    expect(withProxyUrl).toContain('proxy-url:');
    await reach(kubeconfigFollower(withProxyUrl, { noProxy: '*' }));
    expect(proxy.distinct()).toEqual([hostOf(kit.cluster('follower-b').server)]);
  });
});

describe('per-region endpoints', () => {
  it("sends each region's STS and EKS calls to its own endpoint", async () => {
    const { stsEndpoint, eksEndpoint, region } = kit.aws!;
    // One recording forwarder per (service, region), in front of the kit's STS and EKS, as one
    // interface VPC endpoint per region is in front of AWS.
    const seen = new Map<string, number>();
    const forwarder = async (name: string, target: string) => {
      const f = new TcpProxy(Number(new URL(target).port), () =>
        seen.set(name, (seen.get(name) ?? 0) + 1),
      );
      await f.open();
      cleanups.push(() => void f.cut());
      return `http://127.0.0.1:${f.port}`;
    };
    const other = region === 'us-east-1' ? 'ap-south-1' : 'us-east-1';
    const suffix = (r: string) => r.toUpperCase().replace(/-/g, '_');
    const env = {
      MIRRORHUB_STS_ENDPOINT: await forwarder('sts global', stsEndpoint),
      MIRRORHUB_EKS_ENDPOINT: await forwarder('eks global', eksEndpoint),
      [`MIRRORHUB_STS_ENDPOINT_${suffix(region)}`]: await forwarder(`sts ${region}`, stsEndpoint),
      [`MIRRORHUB_EKS_ENDPOINT_${suffix(region)}`]: await forwarder(`eks ${region}`, eksEndpoint),
      [`MIRRORHUB_STS_ENDPOINT_${suffix(other)}`]: await forwarder(`sts ${other}`, stsEndpoint),
      [`MIRRORHUB_EKS_ENDPOINT_${suffix(other)}`]: await forwarder(`eks ${other}`, eksEndpoint),
    };
    await reach(await eksFollower(env).kubeAccess());
    expect([...seen.keys()].sort()).toEqual([`eks ${region}`, `sts ${region}`].sort());

    // A cluster in the other region: its calls go to that region's endpoints (the kit's EKS has
    // no cluster there, so DescribeCluster answers ResourceNotFound, through the right door).
    seen.clear();
    const elsewhere = eksFollower(env, other);
    await expect(elsewhere.endpoint()).rejects.toThrow(/DescribeCluster follower-a in/);
    expect([...seen.keys()].sort()).toEqual([`eks ${other}`, `sts ${other}`].sort());
  });
});
