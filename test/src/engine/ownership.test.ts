// The hub writes a MirrorDelivery (and its payload Secret) only over one of the same mirror: a
// delivery under a mirror's name that names another mirror (another uid), or that the hub's own
// watches do not show, is never written over nor deleted by the mirror's sync; the mirror's status
// says whose it is and what to do. A mirror deleted and created again under the same name has the
// old delivery cleaned up (by the agent, per its deletePolicy) before it delivers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { deliveryName, type MirrorDelivery } from '@mirrorhub/shared';
import { FOREIGN_RECHECK_MS } from '@mirrorhub/hub';
import { mergePatchOptions } from '@mirrorhub/shared/testing/index';

import { Engine, secretMirror, SYSTEM_NS } from '../support/engine.js';
import { consistently, eventually } from '../support/eventually.js';

const GROUP = 'mirrorhub.io';
const VERSION = 'v1alpha1';
const PLURAL = 'mirrordeliveries';
const ORIGIN_LABEL = 'mirrorhub.io/origin-cluster';

describe('deliveries that are not the mirror’s', () => {
  let e: Engine;

  const nameOf = (name: string) =>
    deliveryName({ kind: 'SecretMirror', namespace: 'src', name }, 'hub');

  async function getDelivery(name: string): Promise<MirrorDelivery | undefined> {
    try {
      return (await e.custom().getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: SYSTEM_NS,
        plural: PLURAL,
        name,
      })) as MirrorDelivery;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  async function createDelivery(body: MirrorDelivery): Promise<MirrorDelivery> {
    return (await e.custom().createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: SYSTEM_NS,
      plural: PLURAL,
      body,
    })) as MirrorDelivery;
  }

  async function deleteDelivery(name: string): Promise<void> {
    await e.custom().deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: SYSTEM_NS,
      plural: PLURAL,
      name,
    });
  }

  /** Someone with write access to the agent namespace puts a delivery under `name`. */
  function planted(name: string, labels: Record<string, string>): MirrorDelivery {
    return {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'MirrorDelivery',
      metadata: { name, namespace: SYSTEM_NS, labels },
      spec: {
        mirror: {
          kind: 'SecretMirror',
          namespace: 'elsewhere',
          name: 'other',
          uid: 'uid-of-another',
        },
        originCluster: 'hub',
        payloadSecretName: name,
        target: { kind: 'Secret', name: 'other' },
        namespaces: ['nowhere'],
        contentHash: 'not-a-real-hash',
      },
    };
  }

  const mirrorOf = (name: string) =>
    secretMirror('src', name, {
      source: { kind: 'Secret', name: 'tls' },
      destination: { namespaces: ['app-.*'], name },
      pollPeriodSeconds: 3600,
    });

  beforeAll(async () => {
    e = await Engine.start();
    for (const ns of ['src', 'app-1']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'tls', { key: 'from-source' });
  });

  afterAll(async () => {
    await e?.stop();
  });

  it.each<[string, Record<string, string>]>([
    ['labelled as this hub’s (the hub’s watch shows it)', { [ORIGIN_LABEL]: 'hub' }],
    ['not labelled (only a write finds it)', {}],
  ])(
    'never writes over another mirror’s delivery under its name, %s, and says whose it is',
    async (_, labels) => {
      const mirrorName = Object.keys(labels).length > 0 ? 'labelled' : 'unlabelled';
      const name = nameOf(mirrorName);
      const before = await createDelivery(planted(name, labels));
      await e.applyMirror(mirrorOf(mirrorName));
      const m = await e.mirrorStatus('SecretMirror', mirrorName, 'src', (m) => {
        expect(m.status?.phase).toBe('Error');
        expect(m.status?.clusters?.[0]).toMatchObject({ name: 'hub', phase: 'Error' });
      });
      const message = m.status?.clusters?.[0]?.message ?? '';
      expect(message).toContain(`MirrorDelivery ${name} (namespace ${SYSTEM_NS})`);
      expect(message).toContain('belongs to another mirror (SecretMirror/elsewhere/other');
      expect(message).toContain('uid uid-of-another');
      expect(message).toContain(`not to this one (uid ${m.metadata.uid})`);
      expect(message).toContain(`if it is stale, delete it (kubectl -n ${SYSTEM_NS} delete`);
      expect(m.status?.message).toContain(message);
      await e.eventWith('src', mirrorName, 'SyncError');

      // Nothing of the mirror's is written there: not the delivery, not a payload, no copy.
      await consistently(
        async () => {
          const d = await getDelivery(name);
          expect(d?.metadata.uid).toBe(before.metadata.uid);
          expect(d?.spec).toEqual(before.spec);
          expect(d?.metadata.labels ?? {}).toEqual(labels);
          expect(d?.metadata.annotations?.['mirrorhub.io/signature']).toBeUndefined();
          expect(await e.payloads()).not.toContain(name);
          expect(await e.copies(mirrorName)).toEqual([]);
        },
        { forMs: 2_000 },
      );

      // Once it is deleted (it was stale), the mirror delivers.
      await deleteDelivery(name);
      // Watched: at once. Not watched: when the hub looks again, FOREIGN_RECHECK_MS (30 s) after
      // its first look; other reconciles of the mirror in between must not push that out.
      await eventually(
        async () => expect(await e.secretData('app-1', mirrorName)).toEqual({ key: 'from-source' }),
        { timeoutMs: FOREIGN_RECHECK_MS + 15_000 },
      );
      await e.mirrorStatus('SecretMirror', mirrorName, 'src', (m) => {
        expect(m.status?.phase).toBe('Active');
      });
      expect((await getDelivery(name))?.spec.mirror.uid).toBe(m.metadata.uid);
    },
  );

  it('cleans up the delivery of a deleted mirror of the same name first, then delivers', async () => {
    const mirrorName = 'recreated';
    const name = nameOf(mirrorName);
    await e.applyMirror(mirrorOf(mirrorName));
    await eventually(async () =>
      expect(await e.secretData('app-1', mirrorName)).toEqual({ key: 'from-source' }),
    );
    const first = (await e.getMirror('SecretMirror', mirrorName, 'src'))!;
    const oldDelivery = (await getDelivery(name))!;
    expect(oldDelivery.spec.mirror.uid).toBe(first.metadata.uid);

    // The mirror is deleted while the hub cannot clean up (here: it is down, and the finalizer is
    // released by hand, as the hub does after cleanupGraceMs), then created again.
    await e.stopHub();
    await e.custom().patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: 'src',
        plural: 'secretmirrors',
        name: mirrorName,
        body: { metadata: { finalizers: null } },
      },
      mergePatchOptions(),
    );
    await e.deleteMirror('SecretMirror', mirrorName, 'src');
    await eventually(async () =>
      expect(await e.getMirror('SecretMirror', mirrorName, 'src')).toBeUndefined(),
    );
    await e.applyMirror(mirrorOf(mirrorName));
    const second = (await e.getMirror('SecretMirror', mirrorName, 'src'))!;
    expect(second.metadata.uid).not.toBe(first.metadata.uid);
    await e.startHub();

    // The old delivery goes (a new object takes the name), the new mirror delivers.
    await eventually(
      async () => {
        const d = await getDelivery(name);
        expect(d?.metadata.uid).not.toBe(oldDelivery.metadata.uid);
        expect(d?.spec.mirror.uid).toBe(second.metadata.uid);
      },
      { timeoutMs: 30_000 },
    );
    await eventually(async () =>
      expect(await e.secretData('app-1', mirrorName)).toEqual({ key: 'from-source' }),
    );
    await e.mirrorStatus('SecretMirror', mirrorName, 'src', (m) => {
      expect(m.status?.phase).toBe('Active');
    });
  });
});
