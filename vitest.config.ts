import { defineConfig } from 'vitest/config';

// Tests run the TypeScript sources directly: the "source" export condition maps every
// @mirrorhub/* import to src/*.ts, so no build is needed before `vitest`.
export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'], externalConditions: ['source'] } },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['{shared,hub,agent,standalone,infra}/src/**/*.test.ts'],
          // Some unit tests start processes (the kit's services, a build lock's second process):
          // they take a second or two, and several times that when CI loads both cores. A
          // timeout only ends a hung test; it is not a speed check.
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/src/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 300_000,
          // Real API servers on 2 cores: one file at a time keeps timings honest.
          fileParallelism: false,
        },
      },
    ],
  },
});
