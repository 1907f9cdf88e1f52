import { describe, expect, it } from 'vitest';
import { readConfig } from './config.js';

const KEY = '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----';
const base = { MIRRORHUB_CLUSTER_NAME: 'follower-a', MIRRORHUB_HUB_PUBLIC_KEYS: KEY };

describe('readConfig', () => {
  it.each<[string, string[], Record<string, string>, Record<string, unknown>]>([
    [
      'defaults',
      [],
      base,
      {
        namespace: 'mirrorhub-system',
        clusterName: 'follower-a',
        healthPort: 8080,
        resyncSeconds: 300,
        watchProgressDeadlineSeconds: 150,
        leaderElection: false,
        kubeconfigPath: undefined,
      },
    ],
    [
      'environment',
      [],
      {
        ...base,
        MIRRORHUB_NAMESPACE: 'ops',
        PORT: '9090',
        MIRRORHUB_RESYNC_SECONDS: '60',
        MIRRORHUB_WATCH_PROGRESS_DEADLINE_SECONDS: '90',
      },
      {
        namespace: 'ops',
        healthPort: 9090,
        resyncSeconds: 60,
        watchProgressDeadlineSeconds: 90,
      },
    ],
    [
      'flags win over the environment',
      ['--namespace', 'flag-ns', '--cluster-name', 'b', '--port', '0', '--kubeconfig', '/k'],
      { ...base, MIRRORHUB_NAMESPACE: 'env-ns' },
      { namespace: 'flag-ns', clusterName: 'b', healthPort: 0, kubeconfigPath: '/k' },
    ],
    [
      'leader election on request',
      [],
      { ...base, MIRRORHUB_LEADER_ELECTION: 'true' },
      { leaderElection: expect.objectContaining({ leaseName: 'mirrorhub-agent-leader' }) },
    ],
    [
      'version from the environment',
      [],
      { ...base, MIRRORHUB_VERSION: '9.9.9' },
      { version: '9.9.9' },
    ],
    [
      "the follower owner's policy and the hub keys",
      [],
      { ...base, MIRRORHUB_POLICY: '{"allowAdopt":true,"namespaces":{"deny":["legacy-.*"]}}' },
      {
        hubPublicKeys: KEY,
        policy: { allowAdopt: true, namespaces: { deny: ['legacy-.*'] } },
      },
    ],
  ])('%s', (_, argv, env, expected) => {
    expect(readConfig(argv, env)).toMatchObject(expected);
  });

  it.each<[string, string[], Record<string, string>, RegExp]>([
    ['cluster name missing', [], {}, /MIRRORHUB_CLUSTER_NAME/],
    ['port not a number', [], { ...base, PORT: 'http' }, /PORT must be a whole number/],
    ['unknown flag', ['--bogus'], base, /bogus/],
    [
      'no hub public key',
      [],
      { MIRRORHUB_CLUSTER_NAME: 'a' },
      /MIRRORHUB_HUB_PUBLIC_KEYS is required: the hub's Ed25519 public key/,
    ],
    [
      'policy not JSON',
      [],
      { ...base, MIRRORHUB_POLICY: 'allowAdopt: true' },
      /MIRRORHUB_POLICY is not JSON/,
    ],
    [
      'a progress deadline shorter than the bookmark period',
      [],
      { ...base, MIRRORHUB_WATCH_PROGRESS_DEADLINE_SECONDS: '30' },
      /MIRRORHUB_WATCH_PROGRESS_DEADLINE_SECONDS must be a whole number of seconds from 90 to 3600; got "30"/,
    ],
  ])('refuses: %s', (_, argv, env, message) => {
    expect(() => readConfig(argv, env)).toThrow(message);
  });
});
