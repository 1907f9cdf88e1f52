/**
 * How the charts start node, read from each chart's values.yaml, so the bench starts hub and
 * agent as a `helm install` does and there is one place to change it: `nodeOptions`
 * (NODE_OPTIONS), `v8Flags` (V8 flags NODE_OPTIONS refuses, on node's command line) and
 * `mallocArenaMax` (MALLOC_ARENA_MAX).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { parse } from 'yaml';

/** `hub-in-process`: the hub chart's pod with localAgent.inProcess (hub and agent in one). */
export type Component = 'hub' | 'agent' | 'hub-in-process';

/** NODE_OPTIONS of the hubs and agents a benchmark starts (the charts', or `--node-options`). */
export type ProcessNodeOptions = { hub: string; agent: string };

interface ChartNodeValues {
  nodeOptions?: unknown;
  v8Flags?: unknown;
  mallocArenaMax?: unknown;
  localAgent?: { v8Flags?: unknown };
}

function chartValues(
  root: string,
  component: Component,
): { file: string; values: ChartNodeValues } {
  const chart = component === 'hub-in-process' ? 'hub' : component;
  const file = join(root, 'charts', `mirrorhub-${chart}`, 'values.yaml');
  const values = parse(readFileSync(file, 'utf8')) as ChartNodeValues;
  if (component !== 'hub-in-process') return { file, values };
  // With localAgent.inProcess the hub chart takes the V8 flags from localAgent (its
  // deployment.yaml), NODE_OPTIONS and the allocator setting as always.
  return {
    file,
    values: {
      nodeOptions: values.nodeOptions,
      v8Flags: values.localAgent?.v8Flags,
      mallocArenaMax: values.mallocArenaMax,
    },
  };
}

function optionalString(file: string, key: string, value: unknown): string {
  if (value !== undefined && typeof value !== 'string') {
    throw new Error(`${file}: ${key} must be a string`);
  }
  return value ?? '';
}

/** `nodeOptions` of charts/mirrorhub-<component>/values.yaml ('' when unset). */
export function chartNodeOptions(root: string, component: Component): string {
  const { file, values } = chartValues(root, component);
  return optionalString(file, 'nodeOptions', values.nodeOptions);
}

/** `v8Flags` of the chart, one argument each (none when unset). */
export function chartV8Flags(root: string, component: Component): string[] {
  const { file, values } = chartValues(root, component);
  return optionalString(file, 'v8Flags', values.v8Flags).split(/\s+/).filter(Boolean);
}

/** The environment the chart sets for the allocator: MALLOC_ARENA_MAX from `mallocArenaMax`. */
export function chartMallocEnv(root: string, component: Component): Record<string, string> {
  const { file, values } = chartValues(root, component);
  const n = values.mallocArenaMax;
  if (n === undefined || n === 0) return {};
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw new Error(`${file}: mallocArenaMax must be a whole number`);
  }
  return { MALLOC_ARENA_MAX: String(n) };
}
