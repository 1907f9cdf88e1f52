// What a process pays for importing shared. @kubernetes/client-node (~70 MB resident: its whole
// generated API) and the AWS SDK (~20 MB) may only be reached, by static imports, from the
// modules that really use them (k8s/client, k8s/fake and aws/*; the root re-exports k8s/ but
// not aws/). Everything a controller needs at run time — the lean API access, REST client, Events,
// list/watch, work queue, leader election, logging, metrics — must not load either.
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

import { heavyChains } from './testing/import-graph.js';

const SRC = new URL('.', import.meta.url).pathname;

describe('shared imports', () => {
  it.each([
    'runtime/index',
    'k8s/access',
    'k8s/rest',
    'k8s/events',
    'controller/index',
    'contract',
    'k8s/listwatch',
    'k8s/watcher',
    'k8s/workqueue',
    'mirror/index',
    'api/helpers',
  ])('%s loads neither client-node nor the AWS SDK', (mod) => {
    expect(heavyChains(resolve(SRC, `${mod}.ts`))).toEqual([]);
  });

  it('the package root loads client-node but not the AWS SDK (that is aws/index)', () => {
    const chains = heavyChains(resolve(SRC, 'index.ts'));
    expect(chains.filter((c) => !c.endsWith('@kubernetes/client-node'))).toEqual([]);
  });

  it('the check sees a heavy import through re-exports', () => {
    expect(heavyChains(resolve(SRC, 'aws/index.ts')).join('\n')).toMatch(
      /cluster-access\.ts -> @aws-sdk\/client-eks/,
    );
  });
});
