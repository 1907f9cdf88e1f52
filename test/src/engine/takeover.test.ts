// Switching from another tool with no copy ever missing (issue 38, item 2; item 4 for the
// sources' trigger annotations). Each tool's rule is seeded as its users write it (reflector's
// and kubed's annotations on the source, a ClusterSecret, a KTS SecretMirror) and its copies
// exactly as that tool writes them (the marks, trigger annotations and ownerReference read from
// its source; see agent/src/controllers/delivery/takeover.ts). `mirrorhub migrate` (its gather
// and convert, as the CLI runs them) translates the rule with no refusal, selecting the same
// namespaces before and after whatever the tool's anchoring, and its output is applied, under
// the default follower policy (no allowAdopt) and the default conflictPolicy (Skip). Every copy
// is taken over in place (same uid), its content sampled throughout the switch is never missing
// or wrong, the old tool's marks and ownerReferences are gone, an unrelated Secret of the same
// name is left alone (Conflict), and status and an Event say how many were taken over from which
// tool. Real kube-apiserver, real hub and agent.
//
// The kit runs no controller-manager, so no garbage collector: that a ClusterSecret's copies
// survive its deletion is shown by what the collector acts on, no ownerReference to it left.
import { setTimeout as sleep } from 'node:timers/promises';

import type { V1Secret } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { convert, gatherInventory } from '@mirrorhub/hub/cli/migrate/index';
import type { Tool } from '@mirrorhub/hub/cli/migrate/model';
import type { ClusterSecretMirror, Predecessor, SecretMirror } from '@mirrorhub/shared';
import { RestClient } from '@mirrorhub/shared/kit/k8s/rest';

import { applyCrd } from '../support/crds.js';
import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { CLUSTER_SECRET_CRD, KTS_CRD } from '../support/incumbents.js';
import { SYSTEM_NS } from '../support/objects.js';

const SRC = 'src';
/** Namespaces holding the old tool's copies. */
const COPIES = ['team-1', 'team-2'];
/** Holds its own, unmarked Secret with the copy's name: the old tool left it alone, so do we. */
const UNRELATED = 'other';
const DESTINATIONS = [...COPIES, UNRELATED];
/** The namespace label kubed's sync selector asks for: exactly the DESTINATIONS carry it. */
const KUBED_SELECTOR = { 'kubed-sync': 'yes' };

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
  /** The same tool as migrate names it. */
  migrates: Tool;
  /** The source's (and every copy's) name. */
  name: string;
  /**
   * The source Secret's annotations and labels as that tool's users write them; none when the
   * tool's own object holds the values (a ClusterSecret's inline data: migrate writes the source).
   */
  source?: { annotations?: Record<string, string>; labels?: Record<string, string> };
  /** The tool's own object (a CR) as its users write it, with `value`; its uid. */
  rule?(e: Engine, value: string): Promise<{ uid: string }>;
  /** One copy as the tool wrote it into `ns`, from `source` (owner: the tool's object). */
  copy(ns: string, source: V1Secret | undefined, owner?: { uid: string }): Partial<V1Secret>;
  /** A copy the tool has not updated since the source changed: its content is stale. */
  stale?: string;
}

const CASES: Case[] = [
  {
    tool: 'reflector',
    migrates: 'reflector',
    name: 'refl',
    // Reflector's auto-reflection: the source allows and asks for copies in these namespaces,
    // each entry a regex matching the whole name.
    source: {
      annotations: {
        'reflector.v1.k8s.emberstack.com/reflection-allowed': 'true',
        'reflector.v1.k8s.emberstack.com/reflection-allowed-namespaces': 'team-[12],other',
        'reflector.v1.k8s.emberstack.com/reflection-auto-enabled': 'true',
        'reflector.v1.k8s.emberstack.com/reflection-auto-namespaces': 'team-[12],other',
      },
    },
    // ResourceMirror.cs: the source's data, and these four annotations.
    copy: (_ns, src) => ({
      metadata: {
        annotations: {
          'reflector.v1.k8s.emberstack.com/auto-reflects': 'True',
          'reflector.v1.k8s.emberstack.com/reflects': `${SRC}/refl`,
          'reflector.v1.k8s.emberstack.com/reflected-version': src!.metadata!.resourceVersion!,
          'reflector.v1.k8s.emberstack.com/reflected-at': '2026-01-01T00:00:00.0000000+00:00',
        },
      },
    }),
  },
  {
    tool: 'kubed',
    migrates: 'kubed',
    name: 'kubed',
    // kubed's sync: a namespace label selector.
    source: {
      annotations: { 'kubed.appscode.com/sync': 'kubed-sync=yes' },
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
            uid: src!.metadata!.uid,
            apiVersion: 'v1',
            resourceVersion: src!.metadata!.resourceVersion,
          }),
        },
      },
    }),
    // kubed has not caught up with the source's last change in team-2.
    stale: 'team-2',
  },
  {
    tool: 'ClusterSecret',
    migrates: 'ClusterSecret',
    name: 'cs',
    // Inline data, and matchNamespace patterns matched at the start of the name.
    rule: (e, value) =>
      eventually(
        () =>
          e.custom().createClusterCustomObject({
            group: 'clustersecret.io',
            version: 'v1',
            plural: 'clustersecrets',
            body: {
              apiVersion: 'clustersecret.io/v1',
              kind: 'ClusterSecret',
              metadata: { name: 'cs' },
              matchNamespace: ['team-[12]', 'oth'],
              data: { value: b64(value) },
            },
          }) as Promise<{ metadata: { uid: string } }>,
      ).then((cs) => ({ uid: cs.metadata.uid })),
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
    migrates: 'KTS',
    name: 'kts',
    source: {},
    // A v1alpha2 SecretMirror beside its source; destination patterns match anywhere in the name.
    rule: (e) =>
      eventually(
        () =>
          e.custom().createNamespacedCustomObject({
            group: 'mirrors.kts.studio',
            version: 'v1alpha2',
            namespace: SRC,
            plural: 'secretmirrors',
            body: {
              apiVersion: 'mirrors.kts.studio/v1alpha2',
              kind: 'SecretMirror',
              metadata: { name: 'kts-mirror', namespace: SRC },
              spec: {
                source: { name: 'kts' },
                destination: { namespaces: ['team-[12]', 'the'] },
              },
            },
          }) as Promise<{ metadata: { uid: string } }>,
      ).then((m) => ({ uid: m.metadata.uid })),
    // dest_namespaces.go: owned-by "<mirror ns>/<mirror name>", sync time, parent version,
    // source type.
    copy: (_ns, src) => ({
      metadata: {
        annotations: {
          'mirrors.kts.studio/owned-by': `${SRC}/kts-mirror`,
          'mirrors.kts.studio/last-sync-at': '2026-01-01 00:00:00 +0000 UTC',
          'mirrors.kts.studio/parent-version': src!.metadata!.resourceVersion!,
          'mirrors.kts.studio/source-type': 'secret',
        },
      },
    }),
  },
];

type Mirror = SecretMirror | ClusterSecretMirror;

/** The objects' kubectl-style identity, as migrate names a rule's mirror. */
const identity = (o: Record<string, unknown>) => {
  const m = (o['metadata'] ?? {}) as { name?: string; namespace?: string };
  return `${String(o['kind'])} ${m.namespace ? `${m.namespace}/` : ''}${m.name}`;
};

/**
 * `mirrorhub migrate` as the CLI runs it (gather through the cluster's API, then the pure
 * converter), with no refusal: the objects of `c`'s one rule (its mirror, and the source Secret a
 * ClusterSecret's inline data becomes), in apply order. The other tools' rules, seeded before,
 * are translated too and left out: their mirrors are applied already.
 */
async function migrate(
  e: Engine,
  c: Case,
): Promise<{ mirror: Mirror; objects: Record<string, unknown>[] }> {
  const rest = new RestClient(e.kc, { userAgent: 'mirrorhub-cli' });
  const inv = await gatherInventory(rest, e.kit.cluster('hub').server).finally(() => rest.close());
  const t = convert(inv, { agentNamespace: SYSTEM_NS, sourceNamespace: SRC });
  expect(t.refusals).toEqual([]);
  const rules = t.rules.filter((r) => r.tool === c.migrates);
  expect(rules).toHaveLength(1);
  const rule = rules[0]!;
  // The same namespaces, whatever the tool's anchoring: the ones the test samples.
  expect(rule.before).toEqual([...DESTINATIONS].sort());
  expect(rule.after).toEqual([...DESTINATIONS].sort());
  expect(rule.dropped).toEqual([]);
  const objects = t.objects.filter(
    (o) =>
      identity(o) === rule.mirror ||
      identity(o) === `Secret ${rule.source.namespace}/${rule.source.name}`,
  );
  const mirror = objects.find((o) => identity(o) === rule.mirror) as unknown as Mirror;
  expect(mirror).toBeDefined();
  return { mirror, objects };
}

/** Applies migrate's output as `kubectl apply` would create it. */
async function apply(e: Engine, objects: Record<string, unknown>[]): Promise<void> {
  for (const o of objects) {
    if (o['kind'] === 'Secret') {
      const namespace = (o['metadata'] as { namespace: string }).namespace;
      await e.core().createNamespacedSecret({ namespace, body: o });
    } else {
      await e.applyMirror(o as unknown as Mirror);
    }
  }
}

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
  /** Each tool's mirror as migrate wrote it and the test applied it. */
  const migrated = new Map<Predecessor, Mirror>();

  beforeAll(async () => {
    e = await Engine.start();
    await e.ensureNamespace(SRC);
    for (const ns of DESTINATIONS) await e.ensureNamespace(ns, KUBED_SELECTOR);
    await applyCrd(e.kc, CLUSTER_SECRET_CRD);
    await applyCrd(e.kc, KTS_CRD);
  });

  afterAll(async () => {
    await e?.stop();
  });

  it.each(CASES.map((c) => [c.tool, c] as const))(
    '%s: every copy taken over in place, never missing or wrong',
    async (tool, c) => {
      const value = `${c.name}-v1`;
      const owner = await c.rule?.(e, value);
      if (tool === 'ClusterSecret') clusterSecretUid = owner!.uid;
      const source = c.source
        ? await e.putSecret(SRC, c.name, { value }, { metadata: c.source })
        : undefined;
      const seeded = new Map<string, string>();
      for (const ns of COPIES) {
        const shaped = c.copy(ns, source, owner);
        const old = ns === c.stale ? `${c.name}-v0` : value;
        const s = await e.putSecret(ns, c.name, { value: old }, shaped);
        seeded.set(ns, s.metadata!.uid!);
      }
      const unrelated = await e.putSecret(UNRELATED, c.name, { value: 'their-own' });

      const { mirror, objects } = await migrate(e, c);
      migrated.set(tool, mirror);
      const sampling = sampler(e, c.name, COPIES);
      await apply(e, objects);
      const { kind, metadata } = mirror;
      const { name, namespace } = metadata as { name: string; namespace?: string };
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
      const m = migrated.get(c.tool)!;
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
        expect.arrayContaining(Object.keys(c.source!.annotations ?? {})),
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
