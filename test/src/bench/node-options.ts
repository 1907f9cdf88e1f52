/**
 * The NODE_OPTIONS the charts ship, read from each chart's values.yaml (`nodeOptions`), so the
 * bench starts hub and agent with the flags a `helm install` gives them and there is one place
 * to change them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { parse } from 'yaml';

export type Component = 'hub' | 'agent';

/** `nodeOptions` of charts/mirrorhub-<component>/values.yaml ('' when unset). */
export function chartNodeOptions(root: string, component: Component): string {
  const file = join(root, 'charts', `mirrorhub-${component}`, 'values.yaml');
  const values = parse(readFileSync(file, 'utf8')) as { nodeOptions?: unknown };
  if (values.nodeOptions !== undefined && typeof values.nodeOptions !== 'string') {
    throw new Error(`${file}: nodeOptions must be a string`);
  }
  return values.nodeOptions ?? '';
}

/**
 * What the bench passes. `--enable-source-maps` is dropped: the image deletes dependencies'
 * source maps (Dockerfile), but a checkout has them, and with the flag Node would load
 * client-node's ~1,000 maps into the hub (~30 MB the shipped hub never holds).
 */
export function benchNodeOptions(options: string): string {
  return options
    .split(/\s+/)
    .filter((o) => o && o !== '--enable-source-maps')
    .join(' ');
}
