// EksClusterAccess, the production path from the hub into an EKS follower, on the real kit:
// moto as STS/IAM, the EKS emulator's API and TokenReview webhook, real kube-apiservers.
//
// hub user (111111111111) --AssumeRole + ExternalId--> mirrorhub-follower (222222222222)
//   --DescribeCluster--> endpoint + CA --token (x-k8s-aws-id: follower-a)--> kube-apiserver
//
// Rotation runs on the real clock (the apiserver checks token times against it) with the
// thresholds pushed to the limit (15 minute sessions refreshed when more than a second old,
// tokens re-minted when more than 250 ms old), and each round also forces a new session. One
// KubeConfig and one API client are built at the start and used throughout, as the hub does.
//
// What moto cannot show: it never expires a session, so an old session's token would still be
// accepted; what is proven is that rotating underneath live clients never produces a 401.
import { ApiException, AuthenticationV1Api, CoreV1Api } from '@kubernetes/client-node';
import type { Principal } from '@mirrorhub/infra/aws/moto';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import { hubWithEditAccess } from './support/edit-access.js';
import {
  EksClusterAccess,
  type EksClusterAccessOptions,
} from '@mirrorhub/hub/clusters/aws/cluster-access';
import { decodeEksToken } from '@mirrorhub/hub/clusters/aws/eks-token';
import { eksKubeConfig } from '@mirrorhub/infra/aws/eks-kubeconfig';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const AGENT_NS = 'mirrorhub-system';
const EXTERNAL_ID = 'mirrorhub-eks-access-test';
const ROUNDS = 40;
const PARALLEL = 3;

let kit: Kit;
let hub: Principal;
let roleArn: string;
const accesses: EksClusterAccess[] = [];

function access(over: Partial<EksClusterAccessOptions> = {}): EksClusterAccess {
  const { stsEndpoint, eksEndpoint, region } = kit.aws!;
  const a = new EksClusterAccess({
    cluster: { name: 'follower-a', region, roleArn, externalId: EXTERNAL_ID },
    baseCredentials: hub.credentials,
    stsEndpoint,
    eksEndpoint,
    ...over,
  });
  accesses.push(a);
  return a;
}

async function status(p: Promise<unknown>): Promise<number | string> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    return (err as Error).message;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function motoSessions(): Promise<Array<{ access_key_id: string; session_name: string }>> {
  const res = await fetch(`${kit.aws!.stsEndpoint}/moto-api/data.json`);
  const data = (await res.json()) as {
    sts?: {
      AssumedRole?: Array<{ access_key_id: string; session_name: string; role_arn: string }>;
    };
  };
  return (data.sts?.AssumedRole ?? []).filter((s) => s.role_arn === roleArn);
}

beforeAll(async () => {
  kit = await startKit({ clusters: ['hub', 'follower-a'] });
  const follower = kit.cluster('follower-a');

  // What terraform/ sets up: the hub's identity, a follower role trusting it (with ExternalId),
  // an access entry scoped to the agent namespace.
  ({ hub, roleArn } = await hubWithEditAccess(kit, {
    hubCluster: 'hub',
    follower: 'follower-a',
    externalId: EXTERNAL_ID,
    namespace: AGENT_NS,
  }));

  const core = follower.kubeConfig().makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'team-a' } } });
  for (const namespace of [AGENT_NS, 'team-a']) {
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'payload' }, stringData: { k: 'v' } },
    });
  }
});

afterAll(async () => {
  for (const a of accesses) a.destroy();
  await kit?.stop();
});

describe('EksClusterAccess on the kit', () => {
  it('keeps one KubeConfig working across many credential and token rotations with no 401', async () => {
    const a = access({
      roleDurationSeconds: 900,
      refreshBeforeMs: 900_000, // clamped to 899 s: a session older than a second is refreshed
      tokenRefreshBeforeMs: 15 * 60_000 - 250,
    });
    const sessionsBefore = (await motoSessions()).length;
    const kc = await eksKubeConfig(a);
    const lean = await a.kubeAccess(); // what kc's requests are authenticated with
    expect(kc.getCurrentCluster()?.server).toBe(kit.cluster('follower-a').server);
    const core = kc.makeApiClient(CoreV1Api); // built once, like the hub's clients

    const results = new Map<number | string, number>();
    const keys = new Set<string>();
    const tokens = new Set<string>();
    const started = Date.now();
    for (let i = 0; i < ROUNDS; i++) {
      // Every round forces a new session on top of the time-based ones; the parallel requests
      // race for it.
      a.invalidateCredentials();
      expect(await a.kubeAccess()).toBe(lean);
      const round = await Promise.all(
        Array.from({ length: PARALLEL }, () =>
          status(core.listNamespacedSecret({ namespace: AGENT_NS })),
        ),
      );
      for (const s of round) results.set(s, (results.get(s) ?? 0) + 1);
      // The token the next request carries, and the session that signed it.
      const auth = (await kc.applyToFetchOptions({})).headers as { get(n: string): string | null };
      const token = auth.get('authorization')!.slice('Bearer '.length);
      tokens.add(token);
      keys.add(decodeEksToken(token).searchParams.get('X-Amz-Credential')!.split('/')[0]!);
      await sleep(100);
    }
    const elapsedMs = Date.now() - started;
    const assumed = (await motoSessions()).length - sessionsBefore;
    console.error(
      `eks-access: ${ROUNDS * PARALLEL} requests in ${elapsedMs} ms, ${assumed} AssumeRole calls, ` +
        `${keys.size} sessions and ${tokens.size} tokens seen; results ${JSON.stringify([...results])}`,
    );

    expect(results.get(401) ?? 0).toBe(0);
    expect([...results]).toEqual([[200, ROUNDS * PARALLEL]]);
    expect(keys.size).toBe(ROUNDS); // a new session (and so a new token) every round
    expect(tokens.size).toBe(ROUNDS);
    expect(assumed).toBeGreaterThan(ROUNDS);
    expect(assumed).toBeLessThan(ROUNDS * PARALLEL); // parallel requests shared one AssumeRole

    const h = a.health();
    expect(h.lastError).toBeUndefined();
    expect(h.credentialsExpireAt!.getTime()).toBeGreaterThan(Date.now() + 14 * 60_000);
    expect(h.tokenExpiresAt!.getTime()).toBeGreaterThan(Date.now());
    expect(h.server).toBe(kit.cluster('follower-a').server);
  });

  it('is the follower role, named after the hub, with the ExternalId on record', async () => {
    const a = access();
    const kc = await eksKubeConfig(a);
    const review = await kc
      .makeApiClient(AuthenticationV1Api)
      .createSelfSubjectReview({ body: {} });
    const accountId = kit.cluster('follower-a').accountId;
    expect(a.roleSessionName).toMatch(/^mirrorhub-hub-/);
    expect(review.status?.userInfo?.username).toBe(
      `arn:aws:sts::${accountId}:assumed-role/mirrorhub-follower/${a.roleSessionName}`,
    );
    expect(review.status?.userInfo?.groups).not.toContain('system:masters');
    const key = (await a.credentials()).accessKeyId;
    const res = await fetch(`${kit.aws!.stsEndpoint}/moto-api/data.json`);
    const data = (await res.json()) as {
      sts?: { AssumedRole?: Array<{ access_key_id: string; external_id: string }> };
    };
    expect(data.sts?.AssumedRole?.find((s) => s.access_key_id === key)?.external_id).toBe(
      EXTERNAL_ID,
    );
  });

  it('gets 403 outside the agent namespace', async () => {
    const a = access();
    const core = (await eksKubeConfig(a)).makeApiClient(CoreV1Api);
    expect(await status(core.readNamespacedSecret({ namespace: AGENT_NS, name: 'payload' }))).toBe(
      200,
    );
    expect(await status(core.readNamespacedSecret({ namespace: 'team-a', name: 'payload' }))).toBe(
      403,
    );
    expect(await status(core.listNamespacedSecret({ namespace: 'team-a' }))).toBe(403);
    expect(await status(core.listNamespacedSecret({ namespace: 'kube-system' }))).toBe(403);
    expect(await status(core.listSecretForAllNamespaces())).toBe(403);
  });

  it('keeps its endpoint while the apiserver is unreachable and carries on with the same KubeConfig', async () => {
    const a = access({ describeMinIntervalMs: 0 });
    const kc = await eksKubeConfig(a);
    const lean = await a.kubeAccess(); // what kc's requests are authenticated with
    const core = kc.makeApiClient(CoreV1Api);
    expect(await status(core.listNamespacedSecret({ namespace: AGENT_NS }))).toBe(200);
    const before = (await a.endpoint()).describedAt;

    const follower = kit.cluster('follower-a');
    await follower.stopApiServer();
    let failure: unknown;
    try {
      await core.listNamespacedSecret({ namespace: AGENT_NS });
    } catch (err) {
      failure = err;
    } finally {
      await follower.startApiServer();
    }
    // Refused: the cluster is down, not moved (a new EKS cluster has a new endpoint name), so
    // no DescribeCluster for an hour.
    expect(a.reportRequestError(failure)).toBe('unreachable');
    expect(await a.kubeAccess()).toBe(lean);
    expect((await a.endpoint()).describedAt).toEqual(before);
    expect(await status(core.listNamespacedSecret({ namespace: AGENT_NS }))).toBe(200);
    expect(a.health().lastError).toBeUndefined();
  });
});
