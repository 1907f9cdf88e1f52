// A signed delivery cannot go back in time. Whoever may write in a follower's agent namespace
// (here: the hub's own group there, with the RBAC the agent chart grants it) keeps a copy of a
// MirrorDelivery and its payload Secret, and writes them back while the hub cannot reach the
// follower. Both signatures still verify; the sequence the hub signed with them does not pass:
// the agent refuses it (status, Event), also after a restart, and a deleted Retain mirror's last
// delivery brings nothing back. When the hub is back, its next delivery is accepted.
import type { KubeConfig, V1Secret } from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { MirrorDelivery } from '@mirrorhub/shared/api/index';
import { SEQUENCES_CONFIGMAP } from '@mirrorhub/shared/api/contract';
import { consistently, eventually } from '../support/eventually.js';
import {
  clusterSecretMirror,
  HUB,
  HUB_GROUP,
  MultiCluster,
  SYSTEM_NS,
} from '../support/multicluster.js';
import { impersonatingKubeConfig } from '../support/serviceaccount.js';

const F = 'follower-a';
const GROUP = { group: 'mirrorhub.io', version: 'v1alpha1', plural: 'mirrordeliveries' };
const KIND = 'ClusterSecretMirror';

describe('a signed delivery written back while the hub cannot reach the follower', () => {
  let m: MultiCluster;
  /** The hub's group in the follower, as its access entry maps it. */
  let asHub: KubeConfig;

  const deliveryOf = async (mirror: string): Promise<MirrorDelivery | undefined> =>
    (await m.deliveries(F)).find((d) => d.spec.mirror.name === mirror);
  const readDelivery = async (name: string): Promise<MirrorDelivery> =>
    (await m
      .custom(F)
      .getNamespacedCustomObject({ ...GROUP, namespace: SYSTEM_NS, name })) as MirrorDelivery;
  const readPayload = (name: string): Promise<V1Secret> =>
    m.core(F).readNamespacedSecret({ namespace: SYSTEM_NS, name });
  const copyData = (ns: string, name: string) => m.secretData(F, ns, name);

  /** What an attacker keeps of a delivery: its spec and marks, and its payload. */
  async function capture(mirror: string) {
    const delivery = (await deliveryOf(mirror))!;
    const payload = await readPayload(delivery.metadata.name!);
    return { delivery, payload };
  }

  beforeAll(async () => {
    m = await MultiCluster.start({ followers: [{ name: F, labels: { env: 'prod' } }] });
    asHub = impersonatingKubeConfig(m.kc(F), {
      user: 'arn:aws:sts::222222222222:assumed-role/mirrorhub-follower/mirrorhub',
      group: HUB_GROUP,
    });
    await m.ensureNamespace(HUB, 'certs');
    for (const ns of ['team-a', 'team-b']) await m.ensureNamespace(F, ns);
    for (const [name, deletePolicy] of [
      ['tls', 'Delete'],
      ['kept', 'Retain'],
    ] as const) {
      await m.putSecret(HUB, 'certs', name, { v: '1' });
      await m.applyMirror(
        clusterSecretMirror(name, {
          source: { kind: 'Secret', name, namespace: 'certs' },
          destination: { clusters: { names: [F] }, namespaces: ['team-a', 'team-b'] },
          deletePolicy,
        }),
      );
    }
    await eventually(
      async () => {
        for (const name of ['tls', 'kept']) {
          for (const ns of ['team-a', 'team-b'])
            expect(await copyData(ns, name)).toEqual({ v: '1' });
        }
      },
      { timeoutMs: 30_000 },
    );
  }, 180_000);

  afterAll(async () => {
    await m?.stop();
  });

  it('an older delivery and payload are refused, the copies keep the newer content, also after the agent restarts; the hub’s next write is accepted', async () => {
    await eventually(async () => expect((await deliveryOf('tls'))?.status?.phase).toBe('Active'));
    const v1 = await capture('tls');
    const name = v1.delivery.metadata.name!;
    const s1 = v1.delivery.spec.sequence!;
    expect(s1).toBeGreaterThan(0);

    // The source changes: the hub writes v2 under a higher sequence, and the copies follow.
    await m.putSecret(HUB, 'certs', 'tls', { v: '2' });
    await eventually(async () => {
      for (const ns of ['team-a', 'team-b']) expect(await copyData(ns, 'tls')).toEqual({ v: '2' });
      expect((await readDelivery(name)).status?.phase).toBe('Active');
    });
    const s2 = (await readDelivery(name)).spec.sequence!;
    expect(s2).toBeGreaterThan(s1);

    // The hub goes away; v1 is written back, payload and delivery, as the hub's group can.
    await m.stopHub();
    const payloadNow = await readPayload(name);
    await asHub.makeApiClient(CoreV1Api).replaceNamespacedSecret({
      namespace: SYSTEM_NS,
      name,
      body: {
        metadata: {
          name,
          labels: v1.payload.metadata!.labels!,
          annotations: v1.payload.metadata!.annotations!,
          resourceVersion: payloadNow.metadata!.resourceVersion!,
        },
        type: v1.payload.type!,
        data: v1.payload.data!,
      },
    });
    const deliveryNow = await readDelivery(name);
    await asHub.makeApiClient(CustomObjectsApi).replaceNamespacedCustomObject({
      ...GROUP,
      namespace: SYSTEM_NS,
      name,
      body: {
        ...deliveryNow,
        metadata: { ...deliveryNow.metadata, annotations: v1.delivery.metadata.annotations! },
        spec: v1.delivery.spec,
      },
    });

    // Refused: Error, "Replayed", the newest sequence for the hub, an Event; the copies keep v2.
    const replayed = new RegExp(
      `^Replayed: nothing is written for this delivery: MirrorDelivery ${name} carries sequence ${s1}, older than ${s2}, the newest this agent applied under this name; the hub writes its current delivery when it next reaches this cluster$`,
    );
    await eventually(async () => {
      const d = await readDelivery(name);
      expect(d.spec.sequence).toBe(s1);
      expect(d.status?.phase).toBe('Error');
      expect(d.status?.message).toMatch(replayed);
      expect(d.status?.newestSequence).toBe(s2);
    });
    await m.on(F).eventWith(SYSTEM_NS, name, 'Replayed');
    await consistently(
      async () => {
        for (const ns of ['team-a', 'team-b'])
          expect(await copyData(ns, 'tls')).toEqual({ v: '2' });
      },
      { forMs: 2_000 },
    );

    // The agent restarts, remembering nothing in memory: its ConfigMap says what it applied.
    // The status is cleared meanwhile, so that what it says next is the new process's verdict.
    await m.stopAgent(F);
    await m.custom(F).patchNamespacedCustomObjectStatus({
      ...GROUP,
      namespace: SYSTEM_NS,
      name,
      body: [{ op: 'remove', path: '/status' }],
    });
    const memory = await m.core(F).readNamespacedConfigMap({
      namespace: SYSTEM_NS,
      name: SEQUENCES_CONFIGMAP,
    });
    expect(memory.data?.[name]).toBe(`${s2} ${deliveryNow.metadata.uid}`);
    await m.startAgent(F);
    await eventually(async () => {
      const d = await readDelivery(name);
      expect(d.status?.phase).toBe('Error');
      expect(d.status?.message).toMatch(replayed);
    });
    await consistently(
      async () => {
        for (const ns of ['team-a', 'team-b'])
          expect(await copyData(ns, 'tls')).toEqual({ v: '2' });
      },
      { forMs: 2_000 },
    );

    // The hub is back: it finds v1 where it wants v2 and writes v2 above what the agent applied;
    // the agent takes it, and the copies still hold v2.
    await m.startHub();
    await eventually(
      async () => {
        const d = await readDelivery(name);
        expect(d.spec.sequence).toBeGreaterThan(s2);
        expect(d.status?.phase).toBe('Active');
        expect(d.status?.newestSequence).toBeUndefined();
        expect(d.status?.observedHash).toBe(d.spec.contentHash);
      },
      { timeoutMs: 30_000 },
    );
    for (const ns of ['team-a', 'team-b']) expect(await copyData(ns, 'tls')).toEqual({ v: '2' });
    await m.mirrorStatus(KIND, 'tls', undefined, (s) => expect(s.status?.phase).toBe('Active'));
  });

  it('the last delivery of a deleted Retain mirror, written back, brings nothing back', async () => {
    const last = await capture('kept');
    const name = last.delivery.metadata.name!;
    // Deleted: the agent releases the copies (they stay, without mirrorhub's marks), and a
    // namespace's owner then removes the one they do not want.
    await m.deleteMirror(KIND, 'kept');
    await eventually(
      async () => {
        expect(await deliveryOf('kept')).toBeUndefined();
        expect(
          (await m.on(F).readSecret('team-a', 'kept'))?.metadata?.labels?.[
            'mirrorhub.io/managed-by'
          ],
        ).toBeUndefined();
      },
      { timeoutMs: 30_000 },
    );
    await m.core(F).deleteNamespacedSecret({ namespace: 'team-b', name: 'kept' });

    // The hub cannot reach the follower; the delivery and its payload are created again as the
    // hub last wrote them, by the hub's group.
    await m.stopHub();
    const strip = <
      T extends { metadata?: { name?: string; labels?: object; annotations?: object } },
    >(
      o: T,
    ) => ({
      name: o.metadata!.name!,
      labels: o.metadata!.labels as Record<string, string>,
      annotations: o.metadata!.annotations as Record<string, string>,
    });
    await asHub.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: SYSTEM_NS,
      body: { metadata: strip(last.payload), type: last.payload.type!, data: last.payload.data! },
    });
    await asHub.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...GROUP,
      namespace: SYSTEM_NS,
      body: {
        apiVersion: 'mirrorhub.io/v1alpha1',
        kind: 'MirrorDelivery',
        metadata: strip(last.delivery),
        spec: last.delivery.spec,
      },
    });

    const s = last.delivery.spec.sequence!;
    await eventually(async () => {
      const d = await readDelivery(name);
      expect(d.status?.phase).toBe('Error');
      expect(d.status?.message).toBe(
        `Replayed: nothing is written for this delivery: MirrorDelivery ${name} is a new object carrying sequence ${s}, not newer than ${s}, which this agent applied under this name to an earlier object (deleted since); the hub writes its current delivery when it next reaches this cluster`,
      );
      expect(d.metadata.finalizers ?? []).toEqual([]);
    });
    await m.on(F).eventWith(SYSTEM_NS, name, 'Replayed');
    // Nothing is recreated, nothing re-marked.
    const untouched = async () => {
      expect(await m.on(F).readSecret('team-b', 'kept')).toBeUndefined();
      const kept = await m.on(F).readSecret('team-a', 'kept');
      expect(kept?.metadata?.labels?.['mirrorhub.io/managed-by']).toBeUndefined();
      expect(await copyData('team-a', 'kept')).toEqual({ v: '1' });
    };
    await consistently(untouched, { forMs: 2_000 });

    // The hub, back, removes what names a mirror it no longer has; still nothing comes back.
    await m.startHub();
    await eventually(async () => expect(await deliveryOf('kept')).toBeUndefined(), {
      timeoutMs: 30_000,
    });
    await untouched();
  });
});
