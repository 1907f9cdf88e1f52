// Switching from another tool with no copy ever missing (issue 38, item 2; item 4 for the
// sources' trigger annotations). Each tool's copies are seeded exactly as that tool writes them
// (the marks, trigger annotations and ownerReference read from its source; see
// agent/src/controllers/delivery/takeover.ts), then the mirror a migration writes is applied,
// under the default follower policy (no allowAdopt) and the default conflictPolicy (Skip). Every
// copy is taken over in place (same uid), its content sampled throughout the switch is never
// missing or wrong, the old tool's marks and ownerReferences are gone, an unrelated Secret of the
// same name is left alone (Conflict), and status and an Event say how many were taken over from
// which tool. Real kube-apiserver, real hub and agent.
//
// The kit runs no controller-manager, so no garbage collector: that a ClusterSecret's copies
// survive its deletion is shown by what the collector acts on, no ownerReference to it left.
import { setTimeout as sleep } from 'node:timers/promises';

import { ApiextensionsV1Api, type V1Secret } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { ClusterSecretMirror, Predecessor, SecretMirror } from '@mirrorhub/shared';

import { clusterSecretMirror, Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';

const SRC = 'src';
/** Namespaces holding the old tool's copies. */
const COPIES = ['team-1', 'team-2'];
/** Holds its own, unmarked Secret with the copy's name: the old tool left it alone, so do we. */
const UNRELATED = 'other';
const DESTINATIONS = [...COPIES, UNRELATED];

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** Every key prefix of the four tools: none may remain on a copy once it is mirrorhub's. */
const TOOL_KEYS = [
  'reflector.v1.k8s.emberstack.com/',
  'kubed.appscode.com/',
  'clustersecret.io',
  'mirrors.kts.studio/',
];

interface Case {
  tool: Predecessor;
  /** The source's (and every copy's) name. */
  name: string;
  /** The source's annotations and labels as that tool's users write them. */
  source: { annotations?: Record<string, string>; labels?: Record<string, string> };
  /** One copy as the tool wrote it into `ns`, from `source` (owner: the ClusterSecret). */
  copy(ns: string, source: V1Secret, owner?: { uid: string }): Partial<V1Secret>;
  /** A copy the tool has not updated since the source changed: its content is stale. */
  stale?: string;
}

const CASES: Case[] = [
  {
    tool: 'reflector',
    name: 'refl',
    // Reflector's auto-reflection: the source allows and asks for copies in these namespaces.
    source: {
      annotations: {
        'reflector.v1.k8s.emberstack.com/reflection-allowed': 'true',
        'reflector.v1.k8s.emberstack.com/reflection-allowed-namespaces': DESTINATIONS.join(','),
        'reflector.v1.k8s.emberstack.com/reflection-auto-enabled': 'true',
        'reflector.v1.k8s.emberstack.com/reflection-auto-namespaces': DESTINATIONS.join(','),
      },
    },
    // ResourceMirror.cs: the source's data, and these four annotations.
    copy: (_ns, src) => ({
      metadata: {
        annotations: {
          'reflector.v1.k8s.emberstack.com/auto-reflects': 'True',
          'reflector.v1.k8s.emberstack.com/reflects': `${SRC}/refl`,
          'reflector.v1.k8s.emberstack.com/reflected-version': src.metadata!.resourceVersion!,
          'reflector.v1.k8s.emberstack.com/reflected-at': '2026-01-01T00:00:00.0000000+00:00',
        },
      },
    }),
  },
  {
    tool: 'kubed',
    name: 'kubed',
    source: {
      annotations: { 'kubed.appscode.com/sync': '' },
      labels: { app: 'web' },
    },
    // syncer.go: the source's labels merged with the origin labels (origin.cluster is kubed's
    // clusterName, "unicorn" in its example config, which mirrorhub does not know: the origin
    // annotation's uid proves the copy was made from this source here), its annotations but
    // the sync keys, and origin (the source's object reference).
    copy: (_ns, src) => ({
      metadata: {
        labels: {
          app: 'web',
          'kubed.appscode.com/origin.name': 'kubed',
          'kubed.appscode.com/origin.namespace': SRC,
          'kubed.appscode.com/origin.cluster': 'unicorn',
        },
        annotations: {
          'kubed.appscode.com/origin': JSON.stringify({
            kind: 'Secret',
            namespace: SRC,
            name: 'kubed',
            uid: src.metadata!.uid,
            apiVersion: 'v1',
            resourceVersion: src.metadata!.resourceVersion,
          }),
        },
      },
    }),
    // kubed has not caught up with the source's last change in team-2.
    stale: 'team-2',
  },
  {
    tool: 'ClusterSecret',
    name: 'cs',
    source: {},
    // kubernetes_utils.py: label clustersecret.io, created-by/version/last-sync annotations;
    // an ownerReference to the ClusterSecret (as kopf's adoption sets it).
    copy: (_ns, _rv, owner) => ({
      metadata: {
        labels: { 'clustersecret.io': 'true' },
        annotations: {
          'clustersecret.io/created-by': 'ClusterSecrets',
          'clustersecret.io/version': '0.0.14',
          'clustersecret.io/last-sync': '2026-01-01T00:00:00.000000',
        },
        ownerReferences: [
          {
            apiVersion: 'clustersecret.io/v1',
            kind: 'ClusterSecret',
            name: 'cs',
            uid: owner!.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
    }),
  },
  {
    tool: 'kts-mirrors',
    name: 'kts',
    source: {},
    // dest_namespaces.go: owned-by "<mirror ns>/<mirror name>", sync time, parent version,
    // source type.
    copy: (_ns, src) => ({
      metadata: {
        annotations: {
          'mirrors.kts.studio/owned-by': `${SRC}/kts-mirror`,
          'mirrors.kts.studio/last-sync-at': '2026-01-01 00:00:00 +0000 UTC',
          'mirrors.kts.studio/parent-version': src.metadata!.resourceVersion!,
          'mirrors.kts.studio/source-type': 'secret',
        },
      },
    }),
  },
];

/**
 * The mirror a migration writes for each tool's rule (the lead swaps this for the converter's
 * output): the same source, the same namespaces, the copies' name.
 */
function migratedMirror(c: Case): SecretMirror | ClusterSecretMirror {
  const destination = { namespaces: [...DESTINATIONS] };
  switch (c.tool) {
    case 'ClusterSecret':
      // A ClusterSecret's inline data becomes a source Secret; the mirror keeps its name.
      return clusterSecretMirror(c.name, {
        source: { kind: 'Secret', name: c.name, namespace: SRC },
        destination,
      });
    case 'kts-mirrors':
      return secretMirror(SRC, 'kts-mirror', {
        source: { kind: 'Secret', name: c.name },
        destination,
      });
    default:
      return secretMirror(SRC, c.name, { source: { kind: 'Secret', name: c.name }, destination });
  }
}

const mirrorKey = (c: Case) => {
  const m = migratedMirror(c);
  return { kind: m.kind, name: m.metadata!.name!, namespace: m.metadata!.namespace };
};

/** One read of every copy: its uid and decoded data (undefined: missing). */
interface Sample {
  ns: string;
  uid?: string | undefined;
  value?: string | undefined;
}

/** Reads the copies every 50 ms until stopped; every tick's reads start together. */
function sampler(e: Engine, name: string, namespaces: string[]) {
  const ticks: Sample[][] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      ticks.push(
        await Promise.all(
          namespaces.map(async (ns): Promise<Sample> => {
            const s = await e.readSecret(ns, name);
            const v = s?.data?.['value'];
            return {
              ns,
              uid: s?.metadata?.uid,
              value: v === undefined ? undefined : Buffer.from(v, 'base64').toString(),
            };
          }),
        ),
      );
      await sleep(50);
    }
  })();
  return {
    async stop(): Promise<Sample[][]> {
      stopped = true;
      await loop;
      return ticks;
    },
  };
}

describe('taking over the copies of the tool mirrorhub replaces', () => {
  let e: Engine;
  let clusterSecretUid = '';

  beforeAll(async () => {
    e = await Engine.start();
    for (const ns of [SRC, ...DESTINATIONS]) await e.ensureNamespace(ns);
    // A minimal ClusterSecret CRD and the ClusterSecret that owns its copies.
    await e.kc.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({
      body: {
        metadata: { name: 'clustersecrets.clustersecret.io' },
        spec: {
          group: 'clustersecret.io',
          scope: 'Cluster',
          names: { kind: 'ClusterSecret', plural: 'clustersecrets', singular: 'clustersecret' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              },
            },
          ],
        },
      },
    });
    const cs = await eventually(
      () =>
        e.custom().createClusterCustomObject({
          group: 'clustersecret.io',
          version: 'v1',
          plural: 'clustersecrets',
          body: {
            apiVersion: 'clustersecret.io/v1',
            kind: 'ClusterSecret',
            metadata: { name: 'cs' },
            matchNamespace: COPIES,
            data: { value: b64('cs-v1') },
          },
        }) as Promise<{ metadata: { uid: string } }>,
    );
    clusterSecretUid = cs.metadata.uid;
  });

  afterAll(async () => {
    await e?.stop();
  });

  it.each(CASES.map((c) => [c.tool, c] as const))(
    '%s: every copy taken over in place, never missing or wrong',
    async (tool, c) => {
      const value = `${c.name}-v1`;
      const source = await e.putSecret(SRC, c.name, { value }, { metadata: c.source });
      const seeded = new Map<string, string>();
      for (const ns of COPIES) {
        const shaped = c.copy(ns, source, { uid: clusterSecretUid });
        const old = ns === c.stale ? `${c.name}-v0` : value;
        const s = await e.putSecret(ns, c.name, { value: old }, shaped);
        seeded.set(ns, s.metadata!.uid!);
      }
      const unrelated = await e.putSecret(UNRELATED, c.name, { value: 'their-own' });

      const sampling = sampler(e, c.name, COPIES);
      await e.applyMirror(migratedMirror(c));
      const { kind, name, namespace } = mirrorKey(c);
      const m = await e.mirrorStatus(kind, name, namespace, (m) => {
        expect(m.status?.takenOver).toEqual([{ from: tool, copies: COPIES.length }]);
        expect(m.status?.counts).toMatchObject({ synced: COPIES.length, conflicts: 1 });
      });
      const ticks = await sampling.stop();

      // Through the switch: each copy always there, the same object, never a wrong value (a
      // stale copy may show its old value until it is taken over, never after).
      expect(ticks.length).toBeGreaterThan(0);
      for (const ns of COPIES) {
        const seen = ticks.map((t) => t.find((s) => s.ns === ns)!);
        expect(seen.filter((s) => s.uid !== seeded.get(ns))).toEqual([]);
        const values = seen.map((s) => s.value);
        const first = values.indexOf(value);
        const allowed = ns === c.stale ? [`${c.name}-v0`] : [];
        expect(
          values.slice(0, first < 0 ? values.length : first).filter((v) => !allowed.includes(v!)),
        ).toEqual([]);
        if (first >= 0) expect(values.slice(first).filter((v) => v !== value)).toEqual([]);
      }

      // After: mirrorhub's copy, in the same object, with none of the tool's keys or owners.
      for (const ns of COPIES) {
        const s = (await e.readSecret(ns, c.name))!;
        expect(s.metadata?.uid).toBe(seeded.get(ns));
        expect(await e.secretData(ns, c.name)).toEqual({ value });
        expect(s.metadata?.labels?.['mirrorhub.io/managed-by']).toBe('mirrorhub');
        const keys = [
          ...Object.keys(s.metadata?.labels ?? {}),
          ...Object.keys(s.metadata?.annotations ?? {}),
        ];
        expect(keys.filter((k) => TOOL_KEYS.some((p) => k.startsWith(p)))).toEqual([]);
        expect(s.metadata?.ownerReferences ?? []).toEqual([]);
      }

      // The unrelated Secret: untouched, and reported as the Conflict it is.
      const after = (await e.readSecret(UNRELATED, c.name))!;
      expect(after.metadata?.resourceVersion).toBe(unrelated.metadata?.resourceVersion);
      expect(await e.secretData(UNRELATED, c.name)).toEqual({ value: 'their-own' });
      expect(m.status?.problems).toEqual([
        expect.objectContaining({ namespace: UNRELATED, state: 'Conflict' }),
      ]);

      // The delivery names each namespace and the tool; the mirror's Event the count.
      const delivery = (await e.deliveries()).find((d) => d.spec.mirror.name === name)!;
      expect(delivery.status?.takenOver).toEqual(
        COPIES.map((ns) => ({ namespace: ns, from: tool })),
      );
      const event = await e.eventWith(namespace ?? 'default', name, 'TakenOver');
      expect(event.message).toMatch(new RegExp(`^${COPIES.length} copies made by ${tool} `));
    },
  );

  it('ClusterSecret: deleting the old ClusterSecret leaves no copy the garbage collector would take', async () => {
    await e.custom().deleteClusterCustomObject({
      group: 'clustersecret.io',
      version: 'v1',
      plural: 'clustersecrets',
      name: 'cs',
    });
    const all = await e.core().listSecretForAllNamespaces();
    const dependents = all.items.filter((s) =>
      (s.metadata?.ownerReferences ?? []).some((r) => r.uid === clusterSecretUid),
    );
    expect(dependents).toEqual([]);
    for (const ns of COPIES) expect(await e.secretData(ns, 'cs')).toEqual({ value: 'cs-v1' });
  });

  it("a source's trigger annotations never reach its copies, also in a namespace it newly selects", async () => {
    await e.ensureNamespace('team-3');
    for (const c of CASES.filter((c) => c.tool === 'reflector' || c.tool === 'kubed')) {
      const m = migratedMirror(c);
      await e.applyMirror({
        ...m,
        spec: { ...m.spec, destination: { namespaces: [...DESTINATIONS, 'team-3'] } },
      });
      const copy = await eventually(async () => {
        const s = await e.readSecret('team-3', c.name);
        expect(s?.metadata?.labels?.['mirrorhub.io/managed-by']).toBe('mirrorhub');
        return s!;
      });
      const keys = [
        ...Object.keys(copy.metadata?.labels ?? {}),
        ...Object.keys(copy.metadata?.annotations ?? {}),
      ];
      expect(keys.filter((k) => TOOL_KEYS.some((p) => k.startsWith(p)))).toEqual([]);
      // The source keeps them: it is the old tool's to the end of the migration.
      const source = await e.readSecret(SRC, c.name);
      expect(Object.keys(source?.metadata?.annotations ?? {})).toEqual(
        expect.arrayContaining(Object.keys(c.source.annotations ?? {})),
      );
    }
  });

  it('policy.takeOver false: the copy stays the old tool’s, a Conflict that says why', async () => {
    await e.stopAgent();
    await e.startAgent({ policy: { takeOver: false } });
    await e.putSecret(SRC, 'held', { value: 'held-v1' });
    const seeded = await e.putSecret(
      COPIES[0]!,
      'held',
      { value: 'held-v1' },
      {
        metadata: {
          annotations: {
            'reflector.v1.k8s.emberstack.com/auto-reflects': 'False',
            'reflector.v1.k8s.emberstack.com/reflects': `${SRC}/held`,
          },
        },
      },
    );
    await e.applyMirror(
      secretMirror(SRC, 'held', {
        source: { kind: 'Secret', name: 'held' },
        destination: { namespaces: [COPIES[0]!] },
      }),
    );
    const m = await e.mirrorStatus('SecretMirror', 'held', SRC, (m) => {
      expect(m.status?.counts?.conflicts).toBe(1);
    });
    expect(m.status?.takenOver).toBeUndefined();
    const delivery = (await e.deliveries()).find((d) => d.spec.mirror.name === 'held')!;
    expect(delivery.status?.namespaces).toEqual([
      {
        name: COPIES[0],
        state: 'Conflict',
        message: expect.stringMatching(
          /is a copy reflector made from Secret src\/held; .*turned takeover off \(policy\.takeOver: false\)/,
        ),
      },
    ]);
    const after = (await e.readSecret(COPIES[0]!, 'held'))!;
    expect(after.metadata?.resourceVersion).toBe(seeded.metadata?.resourceVersion);
    expect(after.metadata?.annotations?.['reflector.v1.k8s.emberstack.com/reflects']).toBe(
      `${SRC}/held`,
    );
  });

  it('no value reached a log, plain or base64; each takeover is logged with its tool', () => {
    const text = e.logs.text();
    for (const c of CASES) {
      for (const v of [`${c.name}-v1`, `${c.name}-v0`]) {
        expect(text).not.toContain(v);
        expect(text).not.toContain(b64(v));
      }
    }
    expect(text).toContain('copy taken over');
    for (const c of CASES) expect(text).toContain(`"from":"${c.tool}"`);
  });
});
