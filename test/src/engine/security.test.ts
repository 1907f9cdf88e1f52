// The trust boundary, on a real API server: what anyone who can write in the agent namespace
// (the hub's identity there, a compromised hub) or a SecretMirror author (a tenant) can make the
// agent do for them. Each attack from the security review is replayed; each must change nothing
// outside policy and say why, in status and as an Event. The API server's own refusals (RBAC and
// the charts' ValidatingAdmissionPolicies, with TokenRequest tokens) are test/src/admission.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MirrorDelivery, MirrorDeliverySpec } from '@mirrorhub/shared/api/index';
import {
  createSigner,
  deliveryMessage,
  payloadMessage,
  type Signer,
} from '@mirrorhub/shared/mirror/signing';

import { Engine, secretMirror, SYSTEM_NS } from '../support/engine.js';
import { consistently, eventually } from '../support/eventually.js';
import { generateHubKeyPair, TEST_HUB_KEY } from '../support/signing.js';
import {
  ANNOTATION_CONTENT_HASH,
  ANNOTATION_SIGNATURE,
  LABEL_PAYLOAD,
} from '@mirrorhub/shared/api/contract';

const GROUP = { group: 'mirrorhub.io', version: 'v1alpha1' };
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('the trust boundary', () => {
  let e: Engine;
  const hubSigner = createSigner(TEST_HUB_KEY.privateKeyPem);

  beforeAll(async () => {
    e = await Engine.start();
    for (const ns of ['src', 'team-a', 'team-b']) await e.ensureNamespace(ns);
    // Secrets nobody gave mirrorhub: the attacks aim at them.
    await e.putSecret('kube-system', 'victim', { token: 'original' });
    await e.putSecret('team-a', 'victim', { token: 'team-a-own' });
  });

  afterAll(async () => {
    await e?.stop();
  });

  /** Neither victim changed, for a while. */
  const victimsUntouched = () =>
    consistently(
      async () => {
        expect(await e.secretData('kube-system', 'victim')).toEqual({ token: 'original' });
        expect(await e.secretData('team-a', 'victim')).toEqual({ token: 'team-a-own' });
      },
      { forMs: 2_000 },
    );

  /** A delivery as an attacker writes it: payload + MirrorDelivery, signed by `signer` or not. */
  async function plant(
    name: string,
    spec: Partial<MirrorDeliverySpec>,
    signer?: Signer,
  ): Promise<void> {
    const data = { token: b64('attacker') };
    const payloadAnnotations: Record<string, string> = { [ANNOTATION_CONTENT_HASH]: 'forged' };
    const place = { cluster: 'hub', namespace: SYSTEM_NS, name };
    if (signer) {
      payloadAnnotations[ANNOTATION_SIGNATURE] = signer.sign(
        payloadMessage(place, { contentHash: 'forged', binaryKeys: undefined, data }),
      );
    }
    await e.core().createNamespacedSecret({
      namespace: SYSTEM_NS,
      body: {
        metadata: { name, labels: { [LABEL_PAYLOAD]: 'true' }, annotations: payloadAnnotations },
        type: 'Opaque',
        data,
      },
    });
    const fullSpec: MirrorDeliverySpec = {
      mirror: { kind: 'ClusterSecretMirror', name: 'attack', uid: 'attack-uid' },
      originCluster: 'hub',
      payloadSecretName: name,
      target: { kind: 'Secret', name: 'victim' },
      namespaces: ['kube-system', 'team-a'],
      conflictPolicy: 'Adopt',
      deletePolicy: 'Delete',
      contentHash: 'forged',
      ...spec,
    };
    const annotations = signer
      ? { [ANNOTATION_SIGNATURE]: signer.sign(deliveryMessage(place, fullSpec)) }
      : undefined;
    await e.custom().createNamespacedCustomObject({
      ...GROUP,
      namespace: SYSTEM_NS,
      plural: 'mirrordeliveries',
      body: {
        apiVersion: 'mirrorhub.io/v1alpha1',
        kind: 'MirrorDelivery',
        metadata: { name, ...(annotations ? { annotations } : {}) },
        spec: fullSpec,
      },
    });
  }

  const delivery = async (name: string) =>
    (await e.custom().getNamespacedCustomObject({
      ...GROUP,
      namespace: SYSTEM_NS,
      plural: 'mirrordeliveries',
      name,
    })) as MirrorDelivery;

  const reportOf = (name: string, check: (d: MirrorDelivery) => void) =>
    eventually(async () => {
      const d = await delivery(name);
      check(d);
      return d;
    });

  async function remove(name: string): Promise<void> {
    await e.custom().deleteNamespacedCustomObject({
      ...GROUP,
      namespace: SYSTEM_NS,
      plural: 'mirrordeliveries',
      name,
    });
    // No agent finalizer holds it: the agent never took it on.
    await eventually(async () => {
      const left = (await e.deliveries()).map((d) => d.metadata.name);
      expect(left).not.toContain(name);
    });
  }

  it('an unsigned MirrorDelivery writes nothing, and deleting it deletes nothing', async () => {
    await plant('forged-unsigned', {});
    const d = await reportOf('forged-unsigned', (d) => expect(d.status?.phase).toBe('Error'));
    expect(d.status?.message).toBe(
      'SignatureInvalid: nothing is written for this delivery: MirrorDelivery forged-unsigned: not signed (no mirrorhub.io/signature annotation)',
    );
    expect(d.metadata.finalizers ?? []).toEqual([]);
    await e.eventWith(SYSTEM_NS, 'forged-unsigned', 'SignatureInvalid');
    await victimsUntouched();
    await remove('forged-unsigned');
    await victimsUntouched();
  });

  it('a MirrorDelivery signed with a key the agent does not trust writes nothing', async () => {
    const stranger = createSigner(generateHubKeyPair().privateKeyPem);
    await plant('forged-foreign-key', {}, stranger);
    const d = await reportOf('forged-foreign-key', (d) => expect(d.status?.phase).toBe('Error'));
    expect(d.status?.message).toMatch(
      new RegExp(`signed with key ${stranger.keyId}, which this agent does not trust`),
    );
    await victimsUntouched();
    await remove('forged-foreign-key');
  });

  it("a delivery signed by the hub's own key (a compromised hub) still cannot leave the policy", async () => {
    await plant('compromised-hub', {}, hubSigner);
    const d = await reportOf('compromised-hub', (d) =>
      expect(d.status?.counts).toMatchObject({ namespaces: 2, synced: 0, denied: 2 }),
    );
    expect(d.status?.phase).toBe('Degraded');
    expect(d.status?.namespaces).toEqual([
      {
        name: 'kube-system',
        state: 'PolicyDenied',
        message:
          'PolicyDenied (policy.namespaces.always-denied): namespace kube-system is never written by mirrorhub (system or agent namespace)',
      },
      {
        name: 'team-a',
        state: 'PolicyDenied',
        message:
          "PolicyDenied (policy.allowAdopt): the target name is taken by an object mirrorhub does not own, and this cluster's policy does not allow Adopt",
      },
    ]);
    await e.eventWith(SYSTEM_NS, 'compromised-hub', 'PolicyDenied');
    await victimsUntouched();
    await remove('compromised-hub');
    await victimsUntouched();
  });

  it('a hub-signed delivery of a service-account token is refused everywhere', async () => {
    await plant(
      'sa-token',
      {
        namespaces: ['team-b'],
        target: { kind: 'Secret', name: 'minted' },
        conflictPolicy: 'Skip',
        template: { type: 'kubernetes.io/service-account-token' },
      },
      hubSigner,
    );
    const d = await reportOf('sa-token', (d) => expect(d.status?.phase).toBe('Error'));
    expect(d.status?.message).toMatch(
      /^PolicyDenied \(policy.secretTypes\): Secret type kubernetes.io\/service-account-token is never written/,
    );
    await consistently(async () => expect(await e.readSecret('team-b', 'minted')).toBeUndefined(), {
      forMs: 1_500,
    });
    await remove('sa-token');
  });

  describe("a real mirror's delivery, tampered with in the agent namespace", () => {
    let name = '';
    beforeAll(async () => {
      await e.putSecret('src', 'app-key', { key: 'genuine' });
      await e.applyMirror(
        secretMirror('src', 'app-key', {
          source: { kind: 'Secret', name: 'app-key' },
          destination: { namespaces: ['team-b'] },
          pollPeriodSeconds: 3600,
        }),
      );
      await eventually(async () =>
        expect(await e.secretData('team-b', 'app-key')).toEqual({ key: 'genuine' }),
      );
      name = (await e.deliveries()).find((d) => d.spec.mirror.name === 'app-key')!.metadata.name!;
    });

    it('a changed payload is refused: the copies keep the genuine value', async () => {
      const payload = await e.readSecret(SYSTEM_NS, name);
      await e.core().replaceNamespacedSecret({
        namespace: SYSTEM_NS,
        name,
        body: { ...payload, data: { key: b64('attacker') } },
      });
      const d = await reportOf(name, (d) => expect(d.status?.phase).toBe('Error'));
      expect(d.status?.message).toMatch(
        new RegExp(
          `^SignatureInvalid: nothing is written for this delivery: payload Secret ${name}: the signature \\(key [0-9a-f]{16}\\) does not match`,
        ),
      );
      await consistently(
        async () => expect(await e.secretData('team-b', 'app-key')).toEqual({ key: 'genuine' }),
        { forMs: 1_500 },
      );
      // The mirror's author learns that the agent refused, not what the agent namespace holds.
      await e.mirrorStatus('SecretMirror', 'app-key', 'src', (m) => {
        expect(m.status?.phase).toBe('Error');
        expect(m.status?.clusters?.[0]?.message).toMatch(
          /^the agent refused the delivery; details in MirrorDelivery/,
        );
      });
      // The remedy docs/security.md gives: delete the payload; the hub writes it again, signed.
      await e.core().deleteNamespacedSecret({ namespace: SYSTEM_NS, name });
      await e.mirrorStatus('SecretMirror', 'app-key', 'src', (m) =>
        expect(m.status?.phase).toBe('Active'),
      );
      expect(await e.secretData('team-b', 'app-key')).toEqual({ key: 'genuine' });
    });

    it('a changed delivery spec is refused, and the hub puts its own back', async () => {
      // A source change makes the hub rewrite payload and delivery, both signed again.
      await e.putSecret('src', 'app-key', { key: 'renewed' });
      await eventually(async () =>
        expect(await e.secretData('team-b', 'app-key')).toEqual({ key: 'renewed' }),
      );
      const current = await delivery(name);
      await e.custom().replaceNamespacedCustomObject({
        ...GROUP,
        namespace: SYSTEM_NS,
        plural: 'mirrordeliveries',
        name,
        body: { ...current, spec: { ...current.spec, namespaces: ['kube-system', 'team-a'] } },
      });
      // The hub sees a spec that is not its own and rewrites it; the agent never acted on the
      // tampered one, whichever of the two came first.
      await victimsUntouched();
      await reportOf(name, (d) => {
        expect(d.spec.namespaces).toEqual(['team-b']);
        expect(d.status?.phase).toBe('Active');
      });
    });
  });

  describe('SecretMirror authors (tenants)', () => {
    it('cannot use Adopt: the API server refuses it', async () => {
      await expect(
        e.applyMirror(
          secretMirror('src', 'adopter', {
            source: { kind: 'Secret', name: 'app-key' },
            destination: { namespaces: ['team-a'] },
            conflictPolicy: 'Adopt',
          }),
        ),
      ).rejects.toThrow(/conflictPolicy Adopt is for ClusterSecretMirrors only/);
    });

    it('cannot reach a namespace the policy denies: PolicyDenied in status and as an Event', async () => {
      await e.putSecret('src', 'wide', { k: 'v' });
      await e.applyMirror(
        secretMirror('src', 'wide', {
          source: { kind: 'Secret', name: 'wide' },
          destination: { namespaces: ['kube-system', 'team-a'] },
          pollPeriodSeconds: 3600,
        }),
      );
      const m = await e.mirrorStatus('SecretMirror', 'wide', 'src', (m) =>
        expect(m.status?.counts).toMatchObject({ namespaces: 2, synced: 1, denied: 1 }),
      );
      expect(m.status?.phase).toBe('Degraded');
      expect(m.status?.problems).toEqual([
        {
          cluster: 'hub',
          namespace: 'kube-system',
          state: 'PolicyDenied',
          // Not the rule's words: those describe another namespace.
          message: expect.stringMatching(/^PolicyDenied: details in MirrorDelivery sm-src-wide-/),
        },
      ]);
      await e.eventWith('src', 'wide', 'PolicyDenied');
      expect(await e.readSecret('kube-system', 'wide')).toBeUndefined();
    });
  });
});

describe('acceptance: a namespace chooses which source namespaces may put Secrets in it', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start({ hub: { requireAcceptance: true } });
    await e.ensureNamespace('src');
    await e.ensureNamespace('acc-1', { 'accept.mirrorhub.io/src': 'true' });
    await e.ensureNamespace('acc-2');
    await e.putSecret('src', 'db', { password: 'x' });
    await e.applyMirror(
      secretMirror('src', 'db', {
        source: { kind: 'Secret', name: 'db' },
        destination: { namespaces: ['acc-.+'] },
        pollPeriodSeconds: 3600,
      }),
    );
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('copies land only where the namespace accepts the source namespace', async () => {
    await eventually(async () =>
      expect(await e.secretData('acc-1', 'db')).toEqual({ password: 'x' }),
    );
    await consistently(async () => expect(await e.readSecret('acc-2', 'db')).toBeUndefined(), {
      forMs: 1_500,
    });
    await e.mirrorStatus('SecretMirror', 'db', 'src', (m) =>
      expect(m.status).toMatchObject({ phase: 'Active', synced: '1/1' }),
    );
  });

  it('a namespace that starts accepting gets its copy at once', async () => {
    await e.labelNamespace('acc-2', { 'accept.mirrorhub.io/src': 'true' });
    await eventually(async () =>
      expect(await e.secretData('acc-2', 'db')).toEqual({ password: 'x' }),
    );
  });
});
