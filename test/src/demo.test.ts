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
  it('starts a hub and two EKS followers with agents and OpenBao, converges the sample mirrors (one Vault-sourced), prints where to look and stops cleanly', async () => {
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
        // From OpenBao's KV v2 through the hub to both followers.
        /clustersecretmirror\.mirrorhub\.io\/api-credentials +Vault +secret\/demo\/api +\/team-\.\+\/ on env=prod .* Active +4\/4 /,
        /^hub +InCluster +true +0\.1\.0 /m,
        /^follower-a +EKS +true +0\.1\.0 /m,
        /^follower-b +EKS +true +0\.1\.0 /m,
        /^openbao +http:\/\/127\.0\.0\.1:\d+ +token +true /m,
      ];
      for (const row of tables) expect(stdout).toMatch(row);
      // Both charts' ServiceAccounts, RBAC and admission policies, as `helm install` makes them:
      // in every cluster the agent namespace is sealed, and the hub's identity there (the group
      // its EKS access entry maps to, in a follower) may not create a token Secret of the agent.
      for (const [cluster, who] of [
        ['hub', 'ServiceAccount mirrorhub-system/mirrorhub-hub'],
        ['follower-a', 'group mirrorhub-hub'],
        ['follower-b', 'group mirrorhub-hub'],
      ] as const) {
        const line = new RegExp(`^\\[demo\\] ${cluster}: admission policies (.*); (.*)$`, 'm').exec(
          stdout,
        );
        expect(line, cluster).not.toBeNull();
        const policies = line![1]!.split(', ');
        expect(policies).toEqual(
          expect.arrayContaining([
            'mirrorhub-agent-copies',
            'mirrorhub-agent-hub-payloads',
            'mirrorhub-agent-token-secrets',
          ]),
        );
        if (cluster === 'hub') {
          expect(policies).toEqual(
            expect.arrayContaining(['mirrorhub-hub-payloads', 'mirrorhub-hub-token-secrets']),
          );
        }
        expect(line![2]).toMatch(
          new RegExp(
            `^the hub's identity \\(${who}\\) is refused a service-account-token Secret for mirrorhub-agent \\(by mirrorhub-(agent-token-secrets|agent-hub-payloads|hub-payloads)\\)$`,
          ),
        );
      }
      // How to change the value in OpenBao and see it arrive.
      expect(stdout).toMatch(/export BAO_ADDR=http:\/\/127\.0\.0\.1:\d+ BAO_TOKEN=\S+/);
      expect(stdout).toMatch(/\/bao kv put secret\/demo\/api api_key=demo-api-key-v2 /);
      expect(stdout).toContain(`export KUBECONFIG=${join(dir, 'hub', 'kubeconfig')}`);
      expect(stdout).toMatch(/\[demo\] demo converged; stopped/);
      // The dashboard's address and a token to sign in with (the demo checked both answer).
      expect(stdout).toMatch(
        /Dashboard: http:\/\/127\.0\.0\.1:\d+\/\n.*dashboard-viewer.*\n {2}eyJ[\w-]+\.[\w-]+\.[\w-]+\n/,
      );
      // Nothing left running: clusters, hub, agents (all under dir) and the OpenBao dev server.
      const bao = /OpenBao http:\/\/(127\.0\.0\.1:\d+) \(dev server\) ready/.exec(stdout);
      expect(bao).not.toBeNull();
      const { stdout: ps } = await run('ps', ['-eo', 'args=']);
      expect(
        ps
          .split('\n')
          .filter((l) => l.includes(dir) || l.includes(`-dev-listen-address=${bao![1]}`)),
      ).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
