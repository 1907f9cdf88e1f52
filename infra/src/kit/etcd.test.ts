// startEtcd against the real etcd binary: a port taken between choosing it and etcd binding it
// (another process of a parallel run) costs a retry on other ports, not a failed kit.
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { ensureKubeBinaries } from './binaries.js';
import { startEtcd } from './etcd.js';

describe('startEtcd', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('starts again on other ports when its port was taken before it could bind it', async () => {
    const { etcd: real } = await ensureKubeBinaries();
    const dir = await mkdtemp(join(tmpdir(), 'mirrorhub-etcd-test-'));
    dirs.push(dir);
    // The first start fails as etcd does when its port is taken; the next runs the real etcd.
    const marker = join(dir, 'first-start');
    const bin = join(dir, 'etcd-once-taken.sh');
    await writeFile(
      bin,
      [
        '#!/bin/sh',
        `if [ ! -e '${marker}' ]; then`,
        `  echo "$*" > '${marker}'`,
        `  echo '{"level":"fatal","msg":"discovery failed","error":"listen tcp: bind: address already in use"}'`,
        '  exit 1',
        'fi',
        `exec '${real}' "$@"`,
      ].join('\n'),
    );
    await chmod(bin, 0o755);
    const etcd = await startEtcd(bin, join(dir, 'etcd'));
    try {
      const res = await fetch(`${etcd.url}/health`);
      expect(((await res.json()) as { health?: string }).health).toBe('true');
      // The failed start had asked for other ports.
      expect(await readFile(marker, 'utf8')).not.toContain(etcd.url);
    } finally {
      await etcd.proc.stop();
    }
  }, 60_000);
});
