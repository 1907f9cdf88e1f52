// The agent's memory target (docs/BENCHMARKS.md) leaves no room for @kubernetes/client-node's
// generated API or the AWS SDK, each a large share of it once imported. They must only ever be
// loaded on demand (a kubeconfig with an exec plugin), never by a static import on the agent's
// path — including the shared modules it imports, followed transitively.
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

import {
  heavyChains,
  resolveOurs,
  SHARED_SRC,
  sources,
} from '@mirrorhub/shared/testing/import-graph';

const SRC = new URL('.', import.meta.url).pathname;

describe('agent imports', () => {
  it.each(sources(SRC).map((f) => [relative(SRC, f), f]))(
    '%s loads neither client-node nor the AWS SDK, also through shared',
    (_, file) => {
      expect(heavyChains(file)).toEqual([]);
    },
  );

  it('the check sees through shared (its testing entry loads client-node)', () => {
    const probe = join(SRC, '..', 'package.json'); // any file: we only need a `from` path
    expect(resolveOurs(probe, '@mirrorhub/shared/testing/index')).toBe(
      join(SHARED_SRC, 'testing/index.ts'),
    );
    expect(heavyChains(join(SHARED_SRC, 'testing/index.ts')).join('\n')).toMatch(
      /testing\/client-node\.ts -> @kubernetes\/client-node/,
    );
  });
});
