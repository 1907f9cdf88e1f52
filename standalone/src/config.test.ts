import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSigner, createVerifier } from '@mirrorhub/shared/mirror/signing';
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { checkPairing } from './standalone.js';
import { standaloneConfigFromEnv } from './config.js';

const dir = mkdtempSync(join(tmpdir(), 'mirrorhub-standalone-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keyFile = join(dir, 'private.pem');
const privateKeyPem = generateKeyPairSync('ed25519')
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
writeFileSync(keyFile, privateKeyPem);
const BASE = { MIRRORHUB_SIGNING_KEY_FILE: keyFile };

describe('standaloneConfigFromEnv', () => {
  it('gives the agent half the hub cluster, its agent namespace and its own public key', () => {
    const c = standaloneConfigFromEnv({
      ...BASE,
      MIRRORHUB_NAMESPACE: 'mirrorhub',
      MIRRORHUB_AGENT_NAMESPACE: 'mirrorhub-agent',
      MIRRORHUB_CLUSTER_NAME: 'mgmt',
      MIRRORHUB_POLICY: '{"allowAdopt":true}',
      MIRRORHUB_LOCAL_AGENT_SERVICE_ACCOUNT: 'mirrorhub-hub-agent',
      POD_NAME: 'mirrorhub-hub-0',
    });
    expect(c.hub).toMatchObject({ namespace: 'mirrorhub', clusterName: 'mgmt', healthPort: 8080 });
    expect(c.agent).toMatchObject({
      namespace: 'mirrorhub-agent',
      clusterName: 'mgmt',
      healthPort: 8081,
      policy: { allowAdopt: true },
      leaderElection: { leaseName: 'mirrorhub-agent-leader' },
    });
    expect(c.agentServiceAccount).toBe('mirrorhub-hub-agent');
    // What the hub signs, the agent half verifies, and nothing signed by another key.
    const signer = createSigner(privateKeyPem);
    const verifier = createVerifier(c.agent.hubPublicKeys);
    const msg = Buffer.from('delivery');
    expect(verifier.verify(msg, signer.sign(msg))).toMatchObject({ ok: true });
    const other = createSigner(
      generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    );
    expect(verifier.verify(msg, other.sign(msg))).toMatchObject({ ok: false });
    // What the hub pairs with is what it produced.
    expect(() =>
      checkPairing(
        { ...c.hub, kubeConfig: undefined as never, version: 'v' },
        { ...c.agent, kubeConfig: undefined as never },
      ),
    ).not.toThrow();
  });

  it('takes the hub settings the agent must share over the environment', () => {
    const c = standaloneConfigFromEnv({
      ...BASE,
      // The agent's own variables, as a separate agent would read them, lose to the hub's.
      MIRRORHUB_HUB_PUBLIC_KEYS: 'not the hub key',
      MIRRORHUB_LEADER_ELECTION: 'false',
    });
    expect(c.agent).toMatchObject({
      namespace: 'mirrorhub-system',
      clusterName: 'hub',
      leaderElection: false,
    });
    expect(c.agent.hubPublicKeys).toContain('-----BEGIN PUBLIC KEY-----');
    expect(c.agentServiceAccount).toBeUndefined();
  });

  it.each([
    [
      { PORT: '9000', MIRRORHUB_LOCAL_AGENT_PORT: '9000' },
      /MIRRORHUB_LOCAL_AGENT_PORT \(9000\) must differ from PORT/,
    ],
    [
      { MIRRORHUB_LOCAL_AGENT_SERVICE_ACCOUNT: 'Bad_Name' },
      /must be a ServiceAccount name; got "Bad_Name"/,
    ],
    [{ MIRRORHUB_POLICY: '{nope' }, /MIRRORHUB_POLICY is not JSON/],
    [{ MIRRORHUB_SIGNING_KEY_FILE: '' }, /MIRRORHUB_SIGNING_KEY_FILE is required/],
  ])('refuses %j with a message naming the setting', (env, message) => {
    expect(() => standaloneConfigFromEnv({ ...BASE, ...env })).toThrow(message);
  });
});

describe('checkPairing', () => {
  const hub = { kubeConfig: undefined as never, identity: 'x', version: 'v', signingKey: '' };
  const agent = {
    kubeConfig: undefined as never,
    namespace: 'mirrorhub-system',
    clusterName: 'hub',
    hubPublicKeys: '',
    version: 'v',
  };
  it('refuses an agent of another cluster or namespace', () => {
    expect(() => checkPairing(hub, { ...agent, clusterName: 'other' })).toThrow(
      /the agent's cluster name "other" is not the hub's "hub"/,
    );
    expect(() => checkPairing(hub, { ...agent, namespace: 'elsewhere' })).toThrow(
      /the agent's namespace "elsewhere" is not the hub's agent namespace "mirrorhub-system"/,
    );
  });
});
