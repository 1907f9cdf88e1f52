// What a process pays for importing shared, and what production may import at all.
// @kubernetes/client-node (its whole generated API) and the AWS SDK may only be reached, by static
// imports, from the test helpers under testing/ (the AWS SDK's one user is the hub's
// clusters/aws/, which hub/src/imports.test.ts checks). The package root re-exports only lean
// modules, so anything a controller imports from '@mirrorhub/shared' is lean by construction;
// test helpers live under testing/ ('@mirrorhub/shared/testing/index') and no production file of
// shared, hub or agent reaches them.
import { readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

import {
  costlyBuiltinImports,
  heavyChains,
  sources,
  testingChains,
  TESTING_DIR,
} from './testing/import-graph.js';

const SRC = new URL('.', import.meta.url).pathname;
const REPO = resolve(SRC, '../..');

/** Production sources of shared, hub, agent and standalone: tests and shared's testing/ excluded. */
const production = ['shared/src', 'hub/src', 'agent/src', 'standalone/src']
  .flatMap((dir) => sources(join(REPO, dir)))
  .filter((f) => !f.startsWith(TESTING_DIR + sep));

describe('shared imports', () => {
  it('the package root loads neither client-node nor the AWS SDK', () => {
    expect(heavyChains(resolve(SRC, 'index.ts'))).toEqual([]);
  });

  it('the package root reaches nothing under testing/', () => {
    expect(testingChains(resolve(SRC, 'index.ts'))).toEqual([]);
  });

  it.each([
    'kit/runtime/index',
    'kit/k8s/index',
    'kit/k8s/access',
    'kit/k8s/rest',
    'kit/k8s/yaml',
    'kit/controller/index',
    'api/contract',
    'kit/k8s/listwatch',
    'kit/k8s/watcher',
    'kit/k8s/workqueue',
    'mirror/index',
    'api/index',
  ])('%s loads neither client-node nor the AWS SDK', (mod) => {
    expect(heavyChains(resolve(SRC, `${mod}.ts`))).toEqual([]);
  });

  it.each(production.map((f) => [relative(REPO, f), f]))(
    '%s reaches nothing under shared/src/testing',
    (_, file) => {
      expect(testingChains(file)).toEqual([]);
    },
  );

  // runtime/builtins.ts says why: on Node 24 such an import loads undici (node:http), WebCrypto
  // (node:crypto) and more, memory every process would pay for nothing.
  it.each(production.map((f) => [relative(REPO, f), f]))(
    '%s takes node:http, node:crypto, node:fs and node:util from runtime/builtins',
    (_, file) => {
      expect(costlyBuiltinImports(readFileSync(file, 'utf8'))).toEqual([]);
    },
  );

  it('the built-ins check sees value imports, not type imports', () => {
    const text = [
      "import http from 'node:http';",
      "import { createHash,\n  randomBytes } from 'crypto';",
      "import type { IncomingMessage } from 'node:http';",
      "import { hostname } from 'node:os';",
      "export { readFileSync } from 'node:fs';",
    ].join('\n');
    expect(costlyBuiltinImports(text)).toEqual(['node:http', 'crypto', 'node:fs']);
  });

  it('the production list covers shared, hub, agent and standalone, and leaves testing/ out', () => {
    const listed = production.map((f) => relative(REPO, f));
    expect(listed).toContain('shared/src/index.ts');
    expect(listed).toContain('hub/src/main.ts');
    expect(listed).toContain('agent/src/main.ts');
    expect(listed).toContain('standalone/src/main.ts');
    expect(listed.filter((f) => f.startsWith('shared/src/testing/'))).toEqual([]);
  });

  it('the checks see a heavy import and a test helper through re-exports', () => {
    expect(heavyChains(resolve(SRC, 'testing/index.ts')).join('\n')).toMatch(
      /testing\/client-node\.ts -> @kubernetes\/client-node/,
    );
    // A test file importing the fake is seen (tests may; production may not).
    expect(testingChains(resolve(SRC, 'kit/k8s/watcher.test.ts'))).toEqual([
      'shared/src/testing/fake.ts',
    ]);
  });
});
