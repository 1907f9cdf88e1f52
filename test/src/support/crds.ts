import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import {
  ApiextensionsV1Api,
  loadYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';

import { eventually } from './eventually.js';

export const chartsDir = resolve(import.meta.dirname, '../../../charts');

/**
 * The chart's CRDs as client-node models. client-node serializes a typed body by its TypeScript
 * field names (`_default`, `xKubernetesValidations`, ...), so the YAML is loaded into the model
 * with loadYaml; sent as-is, defaults, enums and CEL rules would be silently dropped.
 */
export function loadCrds(chart: 'mirrorhub-hub' | 'mirrorhub-agent'): V1CustomResourceDefinition[] {
  const dir = join(chartsDir, chart, 'crds');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, f), 'utf8')));
}

/** Creates (or replaces) the chart's CRDs and waits until the API server serves them. */
export async function installCrds(
  kc: KubeConfig,
  chart: 'mirrorhub-hub' | 'mirrorhub-agent' = 'mirrorhub-hub',
): Promise<void> {
  for (const crd of loadCrds(chart)) await applyCrd(kc, crd);
}

/** Creates `crd`, or replaces the one of its name, and waits until the API server serves it. */
export async function applyCrd(kc: KubeConfig, crd: V1CustomResourceDefinition): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const name = crd.metadata!.name!;
  try {
    await api.createCustomResourceDefinition({ body: crd });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
    const cur = await api.readCustomResourceDefinition({ name });
    await api.replaceCustomResourceDefinition({
      name,
      body: {
        ...crd,
        metadata: { ...crd.metadata, resourceVersion: cur.metadata!.resourceVersion },
      },
    });
  }
  await eventually(async () => {
    const cur = await api.readCustomResourceDefinition({ name });
    if (!cur.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) {
      throw new Error(`CRD ${name} not established yet`);
    }
  });
}
