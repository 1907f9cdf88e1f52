// Two status lists went from list-maps to atomic lists: MirrorDelivery's status.namespaces
// (written by the agent) and SecretMirror's / ClusterSecretMirror's status.clusters (written by
// the hub). The API server's per-entry field tracking made every status write 2.4-2.6x the work.
// Then MirrorDelivery's status got syncedNamespaces (the synced namespaces by name; namespaces
// keeps the problems): an object per namespace made each status write cost twice as much again.
// docs/helm.md tells users to apply the new CRDs over existing objects, and a hub or agent may
// meet either version: both directions are exercised here, with the hub and agent running. The
// SecretMirror CRD stands for ClusterSecretMirror too: both status schemas come from one
// definition in shared/src/api/schema.ts (mirrorStatus).

import { ApiextensionsV1Api, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { applyCrd, loadCrds } from '../support/crds.js';
import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';

/** Each CRD whose status list changed, the chart shipping it and the list's status field. */
const LISTS = [
  { crd: 'mirrordeliveries.mirrorhub.io', chart: 'mirrorhub-agent', field: 'namespaces' },
  { crd: 'secretmirrors.mirrorhub.io', chart: 'mirrorhub-hub', field: 'clusters' },
] as const;
type List = (typeof LISTS)[number];

/** The status list's schema in `crd`. */
function listSchema(crd: V1CustomResourceDefinition, l: List) {
  const status = crd.spec.versions[0]!.schema!.openAPIV3Schema!.properties!['status']!;
  return status.properties![l.field]!;
}

/**
 * The CRD as this release ships it, or as earlier releases did: the list a list-map by name, and
 * a MirrorDelivery status without syncedNamespaces.
 */
function crdOf(l: List, version: 'current' | 'old'): V1CustomResourceDefinition {
  const crd = loadCrds(l.chart).find((c) => c.metadata!.name === l.crd)!;
  if (version === 'old') {
    const schema = listSchema(crd, l);
    schema.x_kubernetes_list_type = 'map';
    schema.x_kubernetes_list_map_keys = ['name'];
    delete crd.spec.versions[0]!.schema!.openAPIV3Schema!.properties!['status']!.properties![
      'syncedNamespaces'
    ];
  }
  return crd;
}

/**
 * What the status writer's managedFields entry holds under status.<field>: `{}` when the list is
 * one owned field (atomic), one `k:{"name":...}` key per element as a list-map.
 */
function ownedList(o: { metadata?: { managedFields?: unknown[] } }, field: string): unknown {
  const entries = (o.metadata?.managedFields ?? []) as {
    subresource?: string;
    fieldsV1?: Record<string, Record<string, unknown>>;
  }[];
  return entries.find((f) => f.subresource === 'status')?.fieldsV1?.['f:status']?.[`f:${field}`];
}

describe('upgrading the CRDs whose status lists became atomic, over existing objects', () => {
  let e: Engine;
  const api = () => e.kc.makeApiClient(ApiextensionsV1Api);
  const applyAll = (version: 'current' | 'old') =>
    Promise.all(LISTS.map((l) => applyCrd(e.kc, crdOf(l, version))));

  /**
   * A new namespace gets its copy, the delivery's status counts every namespace synced and, with
   * the current CRD, names them (an old CRD drops the names), and the mirror's status counts
   * them in its one cluster.
   */
  async function delivers(namespaces: string[], crd: 'current' | 'old'): Promise<void> {
    await e.ensureNamespace(namespaces.at(-1)!);
    await eventually(async () =>
      expect(await e.secretData(namespaces.at(-1)!, 'tls')).toEqual({ v: '1' }),
    );
    await eventually(async () => {
      const [d] = await e.deliveries();
      expect(d?.status?.counts?.synced).toBe(namespaces.length);
      expect(d?.status?.namespaces).toEqual([]);
      expect(d?.status?.syncedNamespaces).toEqual(crd === 'current' ? namespaces : undefined);
    });
    await e.mirrorStatus('SecretMirror', 'tls', 'src', (m) =>
      expect(m.status?.clusters?.map((c) => c.synced)).toEqual([namespaces.length]),
    );
  }

  beforeAll(async () => {
    e = await Engine.start();
    await e.ensureNamespace('src');
    await e.putSecret('src', 'tls', { v: '1' });
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('keeps delivering and reporting from the old CRDs to the new and back', async () => {
    for (const l of LISTS)
      expect(listSchema(crdOf(l, 'current'), l).x_kubernetes_list_type).toBe('atomic');
    await e.applyMirror(
      secretMirror('src', 'tls', {
        source: { kind: 'Secret', name: 'tls' },
        destination: { namespaces: ['app-.*'] },
        pollPeriodSeconds: 3600,
      }),
    );
    await delivers(['app-1'], 'current');

    // Back to the earlier releases: list-maps, and no syncedNamespaces. Hub and agent report on.
    await applyAll('old');
    await delivers(['app-1', 'app-2'], 'old');
    for (const l of LISTS) {
      const old = await api().readCustomResourceDefinition({ name: l.crd });
      expect(listSchema(old, l).x_kubernetes_list_type).toBe('map');
    }
    // Written under the list-map schema: one managed entry per element.
    const mirrorBefore = await e.getMirror('SecretMirror', 'tls', 'src');
    expect(JSON.stringify(ownedList(mirrorBefore!, 'clusters'))).toContain('k:{\\"name\\":');

    // Upgraded again, over the objects whose status the old CRDs hold: the next report names
    // every synced namespace again.
    await applyAll('current');
    await delivers(['app-1', 'app-2', 'app-3'], 'current');
    // Each list is one owned field now, not one managed entry per element.
    const [d] = await e.deliveries();
    expect(ownedList(d!, 'syncedNamespaces')).toEqual({});
    const m = await e.getMirror('SecretMirror', 'tls', 'src');
    expect(ownedList(m!, 'clusters')).toEqual({});
  });
});
