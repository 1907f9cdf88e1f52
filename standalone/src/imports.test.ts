// One process holds hub and agent, so it pays for whatever either imports: neither
// @kubernetes/client-node's generated API nor the AWS SDK (loaded by the hub with its first EKS
// MirrorCluster) may be reached by a static import, through hub, agent or shared; nor may
// shared's test helpers.
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

import {
  heavyChains,
  resolveOurs,
  sources,
  testingChains,
} from '@mirrorhub/shared/testing/import-graph';

const SRC = new URL('.', import.meta.url).pathname;

describe('standalone imports', () => {
  it.each(sources(SRC).map((f) => [relative(SRC, f), f]))(
    '%s loads neither client-node nor the AWS SDK, also through hub, agent and shared',
    (_, file) => {
      expect(heavyChains(file)).toEqual([]);
      expect(testingChains(file)).toEqual([]);
    },
  );

  it('the check follows the imports into hub and agent', () => {
    const repo = join(SRC, '../..');
    expect(resolveOurs(SRC, '@mirrorhub/hub/hub')).toBe(join(repo, 'hub/src/hub.ts'));
    expect(resolveOurs(SRC, '@mirrorhub/agent/agent')).toBe(join(repo, 'agent/src/agent.ts'));
    // and through them: shared's testing entry is found heavy, so a path to it would be too.
    expect(heavyChains(join(repo, 'shared/src/testing/index.ts')).length).toBeGreaterThan(0);
  });
});
