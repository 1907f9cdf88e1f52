// Vault connections as a test writes and reads them (custom objects of the mirrorhub group),
// shared by the Vault source suites.
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';

import { GROUP, VERSION } from '@mirrorhub/shared/api/index';

export interface ConnectionView {
  spec?: Record<string, unknown>;
  status?: {
    ready?: boolean;
    message?: string;
    authMethod?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

export async function createObject(
  kc: KubeConfig,
  plural: string,
  body: Record<string, unknown>,
  namespace?: string,
): Promise<void> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const full = { apiVersion: `${GROUP}/${VERSION}`, ...body };
  if (namespace)
    await api.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural,
      body: full,
    });
  else await api.createClusterCustomObject({ group: GROUP, version: VERSION, plural, body: full });
}

export async function getObject(
  kc: KubeConfig,
  plural: string,
  name: string,
  namespace?: string,
): Promise<ConnectionView> {
  const api = kc.makeApiClient(CustomObjectsApi);
  return (
    namespace
      ? await api.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural,
          name,
        })
      : await api.getClusterCustomObject({ group: GROUP, version: VERSION, plural, name })
  ) as ConnectionView;
}
