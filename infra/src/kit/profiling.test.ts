// MIRRORHUB_KIT_PROFILING=1 serves Go's pprof on the kit's API servers (how docs/BENCHMARKS.md
// split the API server's cost per copy); without it they serve none, as a cluster should not.
import { request, type RequestOptions } from 'node:https';

import { afterEach, describe, expect, it } from 'vitest';

import { startKit, type Kit } from './index.js';

// Each test starts a real API server and etcd: on a loaded 2-core machine that takes longer than
// the unit project's default timeout, as the other kit tests' beforeAll hooks allow for.
const KIT_START_MS = 180_000;

describe('the kit with MIRRORHUB_KIT_PROFILING', () => {
  let kit: Kit | undefined;
  const before = process.env.MIRRORHUB_KIT_PROFILING;
  afterEach(async () => {
    await kit?.stop();
    kit = undefined;
    if (before === undefined) delete process.env.MIRRORHUB_KIT_PROFILING;
    else process.env.MIRRORHUB_KIT_PROFILING = before;
  }, 30_000);

  const pprofIndex = async (setting: string | undefined) => {
    if (setting === undefined) delete process.env.MIRRORHUB_KIT_PROFILING;
    else process.env.MIRRORHUB_KIT_PROFILING = setting;
    kit = await startKit({ clusters: ['prof'], aws: false });
    const cluster = kit.cluster('prof');
    // As the kit's admin (pprof is not JSON, so not through a Kubernetes client).
    const opts: RequestOptions = { method: 'GET' };
    await cluster.kubeConfig().applyToHTTPSOptions(opts);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${cluster.server}/debug/pprof/`, opts, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    return status === 200 ? 'served' : `refused ${status}`;
  };

  it(
    'serves /debug/pprof/ when set to 1',
    async () => {
      expect(await pprofIndex('1')).toBe('served');
    },
    KIT_START_MS,
  );

  it(
    'serves no profiles otherwise',
    async () => {
      expect(await pprofIndex(undefined)).toBe('refused 404');
    },
    KIT_START_MS,
  );
});
