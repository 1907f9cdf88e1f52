import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { applyPatchOptions, mergePatchOptions } from './client-node.js';
import { startHttpStub, type HttpStub } from './http-stub.js';

describe('patch options make client-node send the right Content-Type', () => {
  let stub: HttpStub | undefined;
  afterEach(() => stub?.close());

  async function custom(): Promise<CustomObjectsApi> {
    stub = await startHttpStub();
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [
        {
          name: 'c',
          server: stub.access.getCurrentCluster()!.server.replace(/\/$/, ''),
          skipTLSVerify: true,
        },
      ],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
      currentContext: 'c',
    });
    return kc.makeApiClient(CustomObjectsApi);
  }

  const ref = { group: 'mirrorhub.io', version: 'v1alpha1', plural: 'secretmirrors', name: 'm' };

  it.each([
    { name: 'mergePatchOptions', options: mergePatchOptions, type: 'application/merge-patch+json' },
    { name: 'applyPatchOptions', options: applyPatchOptions, type: 'application/apply-patch+yaml' },
  ])('$name sends $type', async ({ options, type }) => {
    const api = await custom();
    const body = { status: { phase: 'Active' } };
    await api.patchNamespacedCustomObjectStatus({ ...ref, namespace: 'team-a', body }, options());
    expect(stub!.requests[0]).toMatchObject({
      method: 'PATCH',
      url: '/apis/mirrorhub.io/v1alpha1/namespaces/team-a/secretmirrors/m/status',
      json: body,
    });
    expect(stub!.requests[0]!.headers['content-type']).toBe(type);
  });
});
