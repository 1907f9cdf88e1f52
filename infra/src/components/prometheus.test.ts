import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensurePrometheus } from './prometheus.js';

const savedEnv = { ...process.env };
let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-prometheus-test-'));
});
afterEach(async () => {
  process.env = { ...savedEnv };
  await fs.rm(root, { recursive: true, force: true });
});

async function fakeBins(dir: string, names = ['prometheus', 'promtool']): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  for (const n of names) await fs.writeFile(path.join(dir, n), '#!/bin/sh\n', { mode: 0o755 });
}

describe('ensurePrometheus', () => {
  it('returns MIRRORHUB_PROMETHEUS and the promtool beside it', async () => {
    await fakeBins(root);
    process.env.MIRRORHUB_PROMETHEUS = path.join(root, 'prometheus');
    expect(await ensurePrometheus({ systemPath: path.join(root, 'none', 'prometheus') })).toEqual({
      prometheus: path.join(root, 'prometheus'),
      promtool: path.join(root, 'promtool'),
    });
  });

  it('refuses a MIRRORHUB_PROMETHEUS without promtool beside it, in one line', async () => {
    await fakeBins(root, ['prometheus']);
    process.env.MIRRORHUB_PROMETHEUS = path.join(root, 'prometheus');
    await expect(ensurePrometheus()).rejects.toThrow(
      /^MIRRORHUB_PROMETHEUS=.*\/prometheus is not an executable prometheus with an executable promtool beside it: point it at one or unset it$/,
    );
  });

  it('uses the system binaries when present, and says what to do when they are not', async () => {
    delete process.env.MIRRORHUB_PROMETHEUS;
    const bin = path.join(root, 'bin');
    await fakeBins(bin);
    expect(await ensurePrometheus({ systemPath: path.join(bin, 'prometheus') })).toEqual({
      prometheus: path.join(bin, 'prometheus'),
      promtool: path.join(bin, 'promtool'),
    });

    process.env.PATH = path.join(root, 'empty'); // no apt-get: nothing is installed
    await expect(
      ensurePrometheus({ systemPath: path.join(root, 'none', 'prometheus') }),
    ).rejects.toThrow(
      /^Prometheus not found at .*\/none\/prometheus and apt-get is not available: install Prometheus \(prometheus and promtool\) and set MIRRORHUB_PROMETHEUS to its prometheus binary$/,
    );
  });
});
