// Several hub replicas: clusters another replica owns (remote) are planned from their owner's
// report, never written to or deleted from here.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { SecretMirror, SecretMirrorSpec } from '@mirrorhub/shared';
import { createSigner } from '@mirrorhub/shared/mirror/signing';
import {
  cleanupReportOf,
  deliveryReportOf,
  planCleanup,
  planMirror,
  type ClusterObservation,
  type MirrorPlan,
  type PlanInput,
} from './plan.js';
import type { SourceObservation } from '../../status.js';
import { ANNOTATION_SIGNATURE } from '@mirrorhub/shared/api/contract';

const NOW = new Date('2026-01-02T03:04:05Z');
const SIGNER = createSigner(
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
);
const VALUE = 'pa55w0rd-never-in-a-report';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const ID = { kind: 'ClusterSecretMirror' as const, name: 'tls' };

function mirror(generation = 1, spec: Partial<SecretMirrorSpec> = {}): SecretMirror {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'ClusterSecretMirror',
    metadata: { name: 'tls', uid: 'uid-1', generation, finalizers: ['mirrorhub.io/hub'] },
    spec: {
      source: { kind: 'Secret', name: 'tls', namespace: 'src' },
      destination: { namespaces: ['app-.*'], clusters: { names: ['a', 'b'] } },
      ...spec,
    },
  } as unknown as SecretMirror;
}

const found = (value = VALUE): SourceObservation => ({
  state: 'found',
  object: { type: 'Opaque', data: { password: b64(value) }, metadata: {} },
});

function cluster(name: string, o: Partial<ClusterObservation> = {}): ClusterObservation {
  return { name, agentNamespace: 'mirrorhub-system', labels: {}, local: false, synced: true, ...o };
}

function plan(input: Partial<PlanInput>): MirrorPlan {
  return planMirror({
    mirror: mirror(),
    source: found(),
    clusters: [],
    hubSecret: 'hub-secret-for-tests',
    originCluster: 'hub',
    signer: SIGNER,
    now: NOW,
    ...input,
  });
}

/** Cluster `name` as its owner sees it once its writes landed and the agent reported. */
function ownerView(name: string, m: SecretMirror, source = found()): ClusterObservation {
  const first = plan({ mirror: m, source, clusters: [cluster(name)] });
  const w = first.writes.find((x) => x.cluster === name)!;
  const d = w.delivery!;
  return cluster(name, {
    delivery: {
      ...d,
      metadata: { ...d.metadata, generation: 1 },
      status: {
        observedGeneration: 1,
        observedHash: d.spec.contentHash,
        phase: 'Degraded',
        lastSyncTime: '2026-01-02T03:00:00Z',
        counts: { namespaces: 3, synced: 2, failed: 1, conflicts: 0 },
        namespaces: [{ name: 'app-x', state: 'Failed', message: 'quota exceeded' }],
      },
    },
    payload: {
      contentHash: d.spec.contentHash,
      signature: w.payload?.metadata.annotations?.[ANNOTATION_SIGNATURE],
    },
  });
}

/** The report the owner of `name` publishes for `m`. */
function reportFrom(name: string, m: SecretMirror, source = found()) {
  const obs = ownerView(name, m, source);
  const owner = plan({ mirror: m, source, clusters: [obs] });
  return {
    report: deliveryReportOf(m, owner, obs)!,
    entry: owner.status.clusters!.find((c) => c.name === name)!,
  };
}

describe('planMirror with remote clusters', () => {
  it('writes only to the clusters it owns; a remote one without a report is Pending, naming its owner', () => {
    const p = plan({
      clusters: [cluster('a'), cluster('b', { remote: { owner: 'hub-1', report: undefined } })],
    });
    expect(p.writes.map((w) => w.cluster)).toEqual(['a']);
    expect(p.deletes).toEqual([]);
    expect(p.status.clusters?.find((c) => c.name === 'b')).toEqual({
      name: 'b',
      phase: 'Pending',
      namespaces: 0,
      synced: 0,
      failed: 0,
      conflicts: 0,
      message: 'delivered by hub replica hub-1; waiting for its report',
    });
    // Both clusters are selected: the mirror is valid on a replica owning only one of them.
    expect(p.status.phase).toBe('Pending');
    expect(p.invalid).toBeUndefined();
  });

  it('counts a report for the current generation and content exactly as its owner computed it', () => {
    const m = mirror();
    const { report, entry } = reportFrom('b', m);
    const p = plan({
      mirror: m,
      clusters: [ownerView('a', m), cluster('b', { remote: { owner: 'hub-1', report } })],
    });
    expect(p.writes).toEqual([]);
    expect(p.status.clusters?.find((c) => c.name === 'b')).toEqual(entry);
    expect(p.status.counts).toMatchObject({ clusters: 2, namespaces: 6, synced: 4, failed: 2 });
    expect(p.status.problems).toEqual([
      { cluster: 'a', namespace: 'app-x', state: 'Failed', message: 'quota exceeded' },
      { cluster: 'b', namespace: 'app-x', state: 'Failed', message: 'quota exceeded' },
    ]);
  });

  it.each([
    ['an older generation', () => reportFrom('b', mirror(1)).report, mirror(2), found()],
    ['other content', () => reportFrom('b', mirror(), found('old')).report, mirror(), found()],
  ])('does not count a report for %s', (_what, report, m, source) => {
    const p = plan({
      mirror: m,
      source,
      clusters: [cluster('a'), cluster('b', { remote: { owner: 'hub-1', report: report() } })],
    });
    const b = p.status.clusters?.find((c) => c.name === 'b');
    expect(b).toMatchObject({
      phase: 'Pending',
      synced: 0,
      message: 'delivered by hub replica hub-1; waiting for its report',
    });
    expect(p.status.problems ?? []).toEqual([]);
  });

  it('never deletes from a remote cluster no longer selected', () => {
    const m = mirror(1, { destination: { namespaces: ['app-.*'], clusters: { names: ['a'] } } });
    const { report } = reportFrom('b', mirror());
    const p = plan({
      mirror: m,
      clusters: [cluster('a'), cluster('b', { remote: { owner: 'hub-1', report } })],
    });
    expect(p.deletes).toEqual([]);
    expect(p.writes.map((w) => w.cluster)).toEqual(['a']);
  });

  it('keeps no secret value in a report', () => {
    const { report } = reportFrom('b', mirror());
    expect(JSON.stringify(report)).not.toContain(VALUE);
    expect(JSON.stringify(report)).not.toContain(b64(VALUE));
    expect(report).toMatchObject({
      mirror: 'ClusterSecretMirror//tls',
      generation: 1,
      present: true,
    });
  });
});

describe('planCleanup with remote clusters', () => {
  const holding = cleanupReportOf(
    ID,
    'd',
    cluster('b', { delivery: ownerView('b', mirror()).delivery }),
  );

  it('waits for a remote cluster whose report still holds the mirror', () => {
    expect(holding).toMatchObject({ present: true, phase: 'Pending' });
    const c = planCleanup([cluster('b', { remote: { owner: 'hub-1', report: holding } })], {
      mirror: ID,
    });
    expect(c).toMatchObject({ deletes: [], waitingFor: ['b'], done: false });
  });

  it('is done once the report holds nothing of it', () => {
    expect(cleanupReportOf(ID, 'd', cluster('b'))).toBeUndefined();
    const c = planCleanup([cluster('b', { remote: { owner: 'hub-1', report: undefined } })], {
      mirror: ID,
    });
    expect(c).toMatchObject({ deletes: [], waitingFor: [], done: true });
  });

  it('gives up on an unreachable remote cluster after the grace period', () => {
    const down = cleanupReportOf(
      ID,
      'd',
      cluster('b', { synced: false, error: 'connection refused' }),
    );
    expect(down).toMatchObject({ present: true, phase: 'Error' });
    const obs = [cluster('b', { remote: { owner: 'hub-1', report: down } })];
    const since = new Date(NOW.getTime() - 60_000);
    expect(planCleanup(obs, { deletingSince: since, now: NOW, graceMs: 120_000 }).done).toBe(false);
    const later = new Date(NOW.getTime() + 120_000);
    expect(planCleanup(obs, { deletingSince: since, now: later, graceMs: 120_000 })).toMatchObject({
      done: true,
      abandoned: [{ cluster: 'b', reason: 'unreachable: connection refused' }],
    });
  });
});

describe('the finalizer comes first, wherever the writes are', () => {
  it('asks for it when only a remote cluster is delivered to', () => {
    const p = plan({ clusters: [cluster('a', { remote: { owner: 'hub-1', report: undefined } })] });
    expect(p.writes).toEqual([]);
    expect(p.remoteWrites).toBe(true);
  });

  it('does not ask for it without remote clusters (one replica writes as before)', () => {
    expect(plan({ clusters: [cluster('a')] }).remoteWrites).toBeUndefined();
  });
});
