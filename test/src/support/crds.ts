import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { ApiextensionsV1Api, type KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parse } from 'yaml';

import { eventually } from './eventually.js';

export const chartsDir = resolve(import.meta.dirname, '../../../charts');

export function loadCrds(chart: 'mirrorhub-hub' | 'mirrorhub-agent'): V1CustomResourceDefinition[] {
  const dir = join(chartsDir, chart, 'crds');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => parse(readFileSync(join(dir, f), 'utf8')) as V1CustomResourceDefinition);
}

/** Creates (or replaces) the chart's CRDs and waits until the API server serves them. */
export async function installCrds(kc: KubeConfig, chart: 'mirrorhub-hub' | 'mirrorhub-agent' = 'mirrorhub-hub'): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  for (const crd of loadCrds(chart)) {
    const name = crd.metadata!.name!;
    try {
      await api.createCustomResourceDefinition({ body: crd });
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      const cur = await api.readCustomResourceDefinition({ name });
      await api.replaceCustomResourceDefinition({ name, body: { ...crd, metadata: { ...crd.metadata, resourceVersion: cur.metadata!.resourceVersion } } });
    }
    await eventually(async () => {
      const cur = await api.readCustomResourceDefinition({ name });
      if (!cur.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) {
        throw new Error(`CRD ${name} not established yet`);
      }
    });
  }
}
