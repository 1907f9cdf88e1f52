// The MirrorDelivery CRD's status.namespaces went from a list-map to an atomic list (the
// API server's per-entry field tracking made every status write 2.4x the work). docs/helm.md
// tells users to apply the new CRD over existing deliveries, and an agent may meet either
// version: both directions are exercised here, with the hub and agent running throughout.

import { ApiextensionsV1Api, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { applyCrd, loadCrds } from '../support/crds.js';
import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';

const CRD = 'mirrordeliveries.mirrorhub.io';

/** The status.namespaces schema of a MirrorDelivery CRD. */
function namespacesSchema(crd: V1CustomResourceDefinition) {
  const status = crd.spec.versions[0]!.schema!.openAPIV3Schema!.properties!['status']!;
  return status.properties!['namespaces']!;
}

/** The CRD as this release ships it, or as the release before did (a list-map by name). */
function deliveryCrd(listType: 'current' | 'map'): V1CustomResourceDefinition {
  const crd = loadCrds('mirrorhub-agent').find((c) => c.metadata!.name === CRD)!;
  if (listType === 'map') {
    const schema = namespacesSchema(crd);
    schema.x_kubernetes_list_type = 'map';
    schema.x_kubernetes_list_map_keys = ['name'];
  }
  return crd;
}

describe('upgrading the MirrorDelivery CRD over existing deliveries', () => {
  let e: Engine;
  const api = () => e.kc.makeApiClient(ApiextensionsV1Api);

  /** A new namespace gets its copy, and the delivery's status lists every namespace Synced. */
  async function delivers(namespaces: string[]): Promise<void> {
    await e.ensureNamespace(namespaces.at(-1)!);
    await eventually(async () =>
      expect(await e.secretData(namespaces.at(-1)!, 'tls')).toEqual({ v: '1' }),
    );
    await eventually(async () => {
      const [d] = await e.deliveries();
      expect(d?.status?.namespaces?.map((n) => `${n.name} ${n.state}`)).toEqual(
        namespaces.map((n) => `${n} Synced`),
      );
    });
  }

  beforeAll(async () => {
    e = await Engine.start();
    await e.ensureNamespace('src');
    await e.putSecret('src', 'tls', { v: '1' });
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('keeps delivering and reporting from the old CRD to the new and back', async () => {
    expect(namespacesSchema(deliveryCrd('current')).x_kubernetes_list_type).toBe('atomic');
    await e.applyMirror(
      secretMirror('src', 'tls', {
        source: { kind: 'Secret', name: 'tls' },
        destination: { namespaces: ['app-.*'] },
        pollPeriodSeconds: 3600,
      }),
    );
    await delivers(['app-1']);

    // Back to the release before: a list-map. The agent reports on.
    await applyCrd(e.kc, deliveryCrd('map'));
    await delivers(['app-1', 'app-2']);
    const old = await api().readCustomResourceDefinition({ name: CRD });
    expect(namespacesSchema(old).x_kubernetes_list_type).toBe('map');

    // Upgraded again, over the delivery whose status the list-map CRD holds.
    await applyCrd(e.kc, deliveryCrd('current'));
    await delivers(['app-1', 'app-2', 'app-3']);
    const [d] = await e.deliveries();
    // The status entries are one field now, not one managed entry per namespace.
    const agentFields = JSON.stringify(
      d!.metadata!.managedFields?.find((f) => f.subresource === 'status')?.fieldsV1,
    );
    expect(agentFields).toContain('f:namespaces');
    expect(agentFields).not.toContain('app-1');
  });
});
