// What one MirrorDelivery status write costs the API server, by what the status lists.
//
// An agent writes a delivery's status again whenever a copy is added or changes state, and in
// the engine benchmark's new-namespace phase the API server spent far more CPU on those status
// patches than on the copies. Agents used to list every namespace as an object (name, state) in
// `status.namespaces`; they now list the synced ones by name in `status.syncedNamespaces` and
// only the problems as objects. This measures one patch as the agent sends it (a merge patch of
// the whole status, the lists atomic) on a real kube-apiserver with the chart's CRD: in either
// shape, and without any list, at 100 and 500 namespaces.

import { setTimeout as sleep } from 'node:timers/promises';

import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import type { DeliveryNamespaceStatus, MirrorDelivery } from '@mirrorhub/shared/api/types.gen';
import { CONTENT_TYPE, RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import type { Kit } from '@mirrorhub/infra/kit/index';

import { applyCrd, loadCrds } from '../support/crds.js';
import { cpuSeconds } from './util.js';

export type StatusShape = 'objects' | 'names' | 'none';

export interface StatusCostRow {
  shape: StatusShape;
  namespaces: number;
  /** API server + etcd CPU per status patch. */
  cpuMs: number;
  /** The delivery as the API server serves it (JSON). */
  objectBytes: number;
}

export interface StatusCostResult {
  deliveries: number;
  patchesPerRow: number;
  rows: StatusCostRow[];
}

const NS = 'mirrorhub-system';

export async function runStatusCostBench(
  kit: Kit,
  opts: { deliveries: number; patchesPerRow: number; log: (l: string) => void },
): Promise<StatusCostResult> {
  const cluster = kit.clusters[0]!;
  const kc = cluster.kubeConfig();
  await applyCrd(kc, deliveryCrd());
  const rest = new RestClient(kc, { maxSockets: opts.deliveries });
  try {
    await rest.post('/api/v1/namespaces', { metadata: { name: NS } });
    const base = `/apis/mirrorhub.io/v1alpha1/namespaces/${NS}/mirrordeliveries`;
    const names = Array.from({ length: opts.deliveries }, (_, i) => `sm-bench-src-mirror-${i}`);
    for (const name of names) await rest.post(base, delivery(name));
    const pids = kit.pids();
    const cpu = () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
    const rows: StatusCostRow[] = [];
    const rounds = Math.max(1, Math.round(opts.patchesPerRow / names.length));
    for (const namespaces of [100, 500]) {
      // Growing by one namespace a round, up to `namespaces` in the last.
      const listed = (round: number) => namespaces - rounds + round;
      for (const shape of ['objects', 'names', 'none'] as const) {
        // Each delivery in this shape first (the other shapes' fields cleared), then measure.
        for (const name of names) {
          await rest.patch(
            `${base}/${name}/status`,
            {
              status: { namespaces: null, syncedNamespaces: null, ...status(shape, listed(0), 0) },
            },
            CONTENT_TYPE.merge,
          );
        }
        await sleep(1_000);
        const cpu0 = cpu();
        for (let round = 1; round <= rounds; round++) {
          // As a new namespace does: one more copy reported by every delivery at once.
          await Promise.all(
            names.map((name) =>
              rest.patch(
                `${base}/${name}/status`,
                { status: status(shape, listed(round), round) },
                CONTENT_TYPE.merge,
              ),
            ),
          );
        }
        const cpuMs = (cpu() - cpu0) * 1000;
        const patches = rounds * names.length;
        const served = await rest.get<MirrorDelivery>(`${base}/${names[0]!}`);
        const row = {
          shape,
          namespaces,
          cpuMs: cpuMs / patches,
          objectBytes: JSON.stringify(served).length,
        };
        opts.log(
          `status ${shape} at ${namespaces} namespaces: ${row.cpuMs.toFixed(2)} ms of API server + etcd CPU a patch, object ${row.objectBytes} B`,
        );
        rows.push(row);
      }
    }
    return { deliveries: names.length, patchesPerRow: rounds * names.length, rows };
  } finally {
    rest.close();
  }
}

function deliveryCrd(): V1CustomResourceDefinition {
  const crd = loadCrds('mirrorhub-agent').find(
    (c) => c.metadata?.name === 'mirrordeliveries.mirrorhub.io',
  );
  if (!crd) throw new Error('charts/mirrorhub-agent/crds has no MirrorDelivery CRD');
  return crd;
}

/** A delivery as the hub writes one for a SecretMirror selecting namespaces by label. */
function delivery(name: string): MirrorDelivery {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: {
      name,
      namespace: NS,
      labels: {
        'mirrorhub.io/origin-cluster': 'hub',
        'mirrorhub.io/mirror-kind': 'SecretMirror',
        'mirrorhub.io/mirror-namespace': 'bench-src',
        'mirrorhub.io/mirror-name': name,
      },
      annotations: { 'mirrorhub.io/signature': `v1:hub:${'A'.repeat(86)}` },
      finalizers: ['mirrorhub.io/agent-cleanup'],
    },
    spec: {
      mirror: {
        kind: 'SecretMirror',
        namespace: 'bench-src',
        name,
        uid: '2cb6828c-1dcc-447c-8012-6ccceb60f7a3',
      },
      originCluster: 'hub',
      payloadSecretName: name,
      target: { kind: 'Secret', name },
      namespaceSelector: { matchLabels: { 'bench-shard': '1' } },
      sourceNamespace: 'bench-src',
      template: { type: 'kubernetes.io/tls' },
      deletePolicy: 'Delete',
      conflictPolicy: 'Skip',
      contentHash: `sha256:${'b'.repeat(43)}`,
    },
  };
}

/** The status an agent reports with `n` copies, all synced, at its `round`th write. */
function status(shape: StatusShape, n: number, round: number): Record<string, unknown> {
  const synced = Array.from({ length: n }, (_, i) => `bench-ns-${String(i).padStart(4, '0')}`);
  const common = {
    observedGeneration: 1,
    observedHash: `sha256:${'b'.repeat(43)}`,
    phase: 'Active',
    message: `${n}/${n} namespaces synced`,
    lastSyncTime: new Date(Date.UTC(2026, 0, 1, 0, 0, round)).toISOString().replace('.000', ''),
    agentVersion: '0.1.0',
    counts: { namespaces: n, synced: n, failed: 0, conflicts: 0 },
  };
  if (shape === 'objects') {
    const entries: DeliveryNamespaceStatus[] = synced.map((name) => ({ name, state: 'Synced' }));
    return { ...common, namespaces: entries };
  }
  return shape === 'names' ? { ...common, namespaces: [], syncedNamespaces: synced } : common;
}
