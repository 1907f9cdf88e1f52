/**
 * A hub and N EKS followers as the benchmarks run them: each follower its own kube-apiserver,
 * AWS account, IAM role with ExternalId, EKS access entry, namespaces and agent process; the
 * hub a process of its own assuming each role. Followers become MirrorClusters one `register`
 * at a time, so a benchmark can grow the fleet and watch what that costs.
 */
import { type ChildProcess } from 'node:child_process';

import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';

import { findFreePort } from '@mirrorhub/infra/components/cache';
import { createUserWithAccessKey } from '@mirrorhub/infra/aws/moto';
import type { Kit } from '@mirrorhub/infra/kit/index';

import { installCrds } from '../support/crds.js';
import { hubAwsEnv, prepareFollower } from '../support/multicluster.js';
import { registerCluster } from '../support/objects.js';
import { pool } from './util.js';
import { startMain, stopAll, waitHttp } from './procs.js';

export const SYSTEM_NS = 'mirrorhub-system';

export interface FleetOptions {
  followers: string[];
  /** Namespaces team-000, team-001, ... in each follower. */
  namespacesPerFollower: number;
  /** NODE_OPTIONS of the hub (the charts'). */
  hubNodeOptions: string;
  root: string;
  log: (line: string) => void;
}

export interface Fleet {
  core: CoreV1Api;
  custom: CustomObjectsApi;
  hub: ChildProcess;
  hubPort: number;
  /** Each follower's agent process. */
  agents: Map<string, ChildProcess>;
  /** Register `follower` as a MirrorCluster labelled bench=true. */
  register(follower: string): Promise<void>;
  stop(): Promise<void>;
}

/** Prepares every follower, starts its agent, then the hub; nothing is registered yet. */
export async function startFleet(kit: Kit, o: FleetOptions): Promise<Fleet> {
  const hubCluster = kit.cluster('hub');
  const kc = hubCluster.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await installCrds(kc, 'mirrorhub-hub');
  for (const ns of [SYSTEM_NS, 'platform'])
    await core.createNamespace({ body: { metadata: { name: ns } } });
  const hubUser = await createUserWithAccessKey(kit.aws!.stsEndpoint, {
    accountId: hubCluster.accountId,
    userName: 'mirrorhub-hub',
  });

  o.log(
    `preparing ${o.followers.length} followers (role, access entry, RBAC) and ${o.namespacesPerFollower} namespaces each`,
  );
  const access = new Map<string, { roleArn: string; externalId: string }>();
  await pool(o.followers, 4, async (f) => {
    access.set(f, await prepareFollower(kit, f, hubUser.arn));
    const fcore = kit.cluster(f).kubeConfig().makeApiClient(CoreV1Api);
    const names = Array.from(
      { length: o.namespacesPerFollower },
      (_, i) => `team-${String(i).padStart(3, '0')}`,
    );
    await pool(names, 16, (name) => fcore.createNamespace({ body: { metadata: { name } } }));
  });

  const procs: ChildProcess[] = [];
  const agents = new Map<string, ChildProcess>();
  try {
    for (const f of o.followers) {
      const port = await findFreePort();
      const agent = startMain(o.root, 'agent', {
        KUBECONFIG: kit.cluster(f).kubeconfigPath,
        MIRRORHUB_CLUSTER_NAME: f,
        PORT: String(port),
      });
      procs.push(agent);
      agents.set(f, agent);
      await waitHttp(`http://127.0.0.1:${port}/readyz`);
    }
    const hubPort = await findFreePort();
    const hub = startMain(o.root, 'hub', {
      NODE_OPTIONS: o.hubNodeOptions,
      KUBECONFIG: hubCluster.kubeconfigPath,
      MIRRORHUB_CLUSTER_NAME: 'hub',
      PORT: String(hubPort),
      ...hubAwsEnv(kit, hubUser),
    });
    procs.push(hub);
    await waitHttp(`http://127.0.0.1:${hubPort}/readyz`);
    return {
      core,
      custom,
      hub,
      hubPort,
      agents,
      async register(f) {
        const a = access.get(f)!;
        await registerCluster(
          custom,
          f,
          { bench: 'true' },
          {
            eks: { name: f, region: kit.aws!.region, roleArn: a.roleArn, externalId: a.externalId },
          },
        );
      },
      stop: () => stopAll(procs),
    };
  } catch (err) {
    await stopAll(procs);
    throw err;
  }
}

/** The ClusterSecretMirror both benchmarks deliver: platform/shared-tls to team-.+ in bench=true clusters. */
export async function createSharedTls(fleet: Fleet): Promise<void> {
  await fleet.core.createNamespacedSecret({
    namespace: 'platform',
    body: { metadata: { name: 'shared-tls' }, stringData: { 'tls.crt': 'v0' } },
  });
  await fleet.custom.createClusterCustomObject({
    group: 'mirrorhub.io',
    version: 'v1alpha1',
    plural: 'clustersecretmirrors',
    body: {
      apiVersion: 'mirrorhub.io/v1alpha1',
      kind: 'ClusterSecretMirror',
      metadata: { name: 'shared-tls' },
      spec: {
        source: { kind: 'Secret', name: 'shared-tls', namespace: 'platform' },
        destination: {
          clusters: { selector: { matchLabels: { bench: 'true' } } },
          namespaces: ['team-.+'],
        },
      },
    },
  });
}
