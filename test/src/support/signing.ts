// The hub's signing key for tests: one Ed25519 pair per test process, made with node:crypto the
// way `openssl genpkey -algorithm ed25519` makes one. The hub signs with the private half, the
// agents trust the public half (the charts' signing.existingSecret / hubPublicKeys).
import { generateKeyPairSync } from 'node:crypto';

export interface HubKeyPair {
  /** PKCS#8 PEM: HubConfig.signingKey, the hub chart's Secret key private.pem. */
  privateKeyPem: string;
  /** SPKI PEM: AgentConfig.hubPublicKeys, the agent chart's hubPublicKeys. */
  publicKeyPem: string;
}

export function generateHubKeyPair(): HubKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** The pair every in-process hub and agent of this test process uses, unless a test says otherwise. */
export const TEST_HUB_KEY: HubKeyPair = generateHubKeyPair();
