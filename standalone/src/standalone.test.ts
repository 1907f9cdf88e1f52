import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createManager } from '@mirrorhub/shared/kit/controller/manager';
import { standaloneConfigFromEnv } from './config.js';
import { agentHalf, type StandaloneConfig } from './standalone.js';

const dir = mkdtempSync(join(tmpdir(), 'mirrorhub-standalone-election-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keyFile = join(dir, 'private.pem');
writeFileSync(
  keyFile,
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
);

/** The one process's configuration as main.ts reads it from the chart's environment. */
function fromEnv(env: Record<string, string>): StandaloneConfig {
  const c = standaloneConfigFromEnv({ MIRRORHUB_SIGNING_KEY_FILE: keyFile, ...env });
  return {
    hub: { ...c.hub, kubeConfig: undefined as never, version: 'v' },
    agent: { ...c.agent, kubeConfig: undefined as never },
  };
}

describe('one election per process', () => {
  it("with leader election (the chart's default), the agent half leads on the hub's election, not on a Lease of its own", () => {
    const config = fromEnv({});
    // The agent half alone would elect on its own Lease, as a separate agent with replicas...
    expect(config.agent.leaderElection).toMatchObject({ leaseName: 'mirrorhub-agent-leader' });
    // ...but in one process it follows the hub's manager: one Lease, renewed by one elector.
    const hub = createManager();
    expect(agentHalf(config, hub)).toEqual({ follow: hub });
  });

  it('without leader election, neither half elects', () => {
    const config = fromEnv({ MIRRORHUB_LEADER_ELECTION: 'false' });
    expect(config.hub.leaderElection).toBe(false);
    expect(config.agent.leaderElection).toBe(false);
    expect(agentHalf(config, createManager())).toEqual({});
  });
});
