// What the trust boundary costs per delivery, without a cluster: the hub signs a MirrorDelivery
// and its payload for every cluster on every plan, the agent verifies both on every reconcile and
// checks its policy once per delivery and once per namespace. Timed with the real functions of
// shared/src/mirror/signing.ts and agent/src/policy.ts on a realistic delivery: a ~4 KB
// kubernetes.io/tls payload and a spec like the hub writes.
import { generateKeyPairSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import type { MirrorDeliverySpec } from '@mirrorhub/shared/api/types.gen';
import { parsePolicy } from '@mirrorhub/agent/policy';
import {
  createSigner,
  createVerifier,
  deliveryMessage,
  payloadMessage,
} from '@mirrorhub/shared/mirror/signing';

export interface SigningBenchResult {
  iterations: number;
  payloadBytes: number;
  /** Microseconds per operation, median of 5 rounds. */
  us: {
    signDelivery: number;
    signPayload: number;
    verifyDelivery: number;
    verifyPayload: number;
    policyDelivery: number;
    policyNamespace: number;
  };
}

export function runSigningBench(iterations = 2000): SigningBenchResult {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const signer = createSigner(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  const verifier = createVerifier(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  const policy = parsePolicy({ namespaces: { deny: ['legacy-.*'] } }, 'mirrorhub-system');
  const place = {
    cluster: 'follower-01',
    namespace: 'mirrorhub-system',
    name: 'csm-wildcard-tls-0123456789abcdef',
  };
  const spec: MirrorDeliverySpec = {
    mirror: {
      kind: 'ClusterSecretMirror',
      name: 'wildcard-tls',
      uid: '6b0a0f9e-1c1e-4c51-9a43-2f0d1c7a9b11',
    },
    originCluster: 'hub',
    payloadSecretName: place.name,
    target: { kind: 'Secret', name: 'wildcard-tls' },
    namespaces: ['team-.+'],
    excludeNamespaces: ['team-sandbox'],
    template: {
      type: 'kubernetes.io/tls',
      labels: { 'app.kubernetes.io/name': 'wildcard-tls' },
      annotations: { 'cert-manager.io/issuer-name': 'letsencrypt' },
    },
    deletePolicy: 'Delete',
    conflictPolicy: 'Skip',
    suspend: false,
    contentHash: '0123456789abcdef0123456789abcdef',
  };
  const data = {
    'tls.crt': Buffer.alloc(3000, 'c').toString('base64'),
    'tls.key': Buffer.alloc(1700, 'k').toString('base64'),
  };
  const payload = { contentHash: spec.contentHash, binaryKeys: undefined, data };
  const dSig = signer.sign(deliveryMessage(place, spec));
  const pSig = signer.sign(payloadMessage(place, payload));
  const copy = {
    kind: 'Secret' as const,
    type: spec.template!.type,
    labels: spec.template!.labels,
    annotations: spec.template!.annotations,
  };
  const ns = { name: 'team-a', labels: { team: 'a' } };

  const time = (fn: () => unknown): number => {
    const rounds: number[] = [];
    for (let r = 0; r < 5; r++) {
      const t0 = performance.now();
      for (let i = 0; i < iterations; i++) fn();
      rounds.push(((performance.now() - t0) * 1000) / iterations);
    }
    return rounds.sort((a, b) => a - b)[2]!;
  };
  const must = (ok: boolean) => {
    if (!ok) throw new Error('signing bench: a signature did not verify');
  };
  return {
    iterations,
    payloadBytes: Object.values(data).reduce((n, v) => n + v.length, 0),
    us: {
      signDelivery: time(() => signer.sign(deliveryMessage(place, spec))),
      signPayload: time(() => signer.sign(payloadMessage(place, payload))),
      verifyDelivery: time(() => must(verifier.verify(deliveryMessage(place, spec), dSig).ok)),
      verifyPayload: time(() => must(verifier.verify(payloadMessage(place, payload), pSig).ok)),
      policyDelivery: time(() => policy.checkDelivery(copy)),
      policyNamespace: time(() => policy.checkNamespace(ns)),
    },
  };
}
