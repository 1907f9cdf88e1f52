import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');

// What `npm run demo` runs, after the build the README's command does first.
describe('the README demo', () => {
  it('starts a hub and two EKS followers with agents, converges the sample mirrors, prints where to look and stops cleanly', async () => {
    await run(join(root, 'node_modules/.bin/tsc'), ['-b'], { cwd: root });
    const dir = await mkdtemp(join(tmpdir(), 'mirrorhub-demo-'));
    try {
      const { stdout } = await run(
        process.execPath,
        [join(root, 'test/dist/demo/main.js'), '--exit', '--dir', dir],
        {
          cwd: root,
          timeout: 180_000,
        },
      );
      const tables = [
        /^cert-manager +secretmirror\.mirrorhub\.io\/wildcard-tls +Secret +wildcard-tls +.* Active +2\/2 /m,
        /^platform +secretmirror\.mirrorhub\.io\/feature-flags +ConfigMap +feature-flags +.* Active +1\/1 /m,
        // Across clusters: two EKS followers in two accounts, selected by label.
        /clustersecretmirror\.mirrorhub\.io\/registry-credentials +Secret +registry-credentials +\/team-\.\+\/ on env=prod .* Active +4\/4 /,
        /^follower-a +EKS +true +0\.1\.0 /m,
        /^follower-b +EKS +true +0\.1\.0 /m,
      ];
      for (const row of tables) expect(stdout).toMatch(row);
      expect(stdout).toContain(`export KUBECONFIG=${join(dir, 'hub', 'kubeconfig')}`);
      expect(stdout).toMatch(/\[demo\] demo converged; stopped/);
      const { stdout: ps } = await run('ps', ['-eo', 'args=']);
      expect(ps.split('\n').filter((l) => l.includes(dir))).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
