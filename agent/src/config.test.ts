import { describe, expect, it } from 'vitest';
import { readConfig } from './config.js';

const base = { MIRRORHUB_CLUSTER_NAME: 'follower-a' };

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
        leaderElection: false,
        kubeconfigPath: undefined,
      },
    ],
    [
      'environment',
      [],
      { ...base, MIRRORHUB_NAMESPACE: 'ops', PORT: '9090', MIRRORHUB_RESYNC_SECONDS: '60' },
      { namespace: 'ops', healthPort: 9090, resyncSeconds: 60 },
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
  ])('%s', (_, argv, env, expected) => {
    expect(readConfig(argv, env)).toMatchObject(expected);
  });

  it.each<[string, string[], Record<string, string>, RegExp]>([
    ['cluster name missing', [], {}, /MIRRORHUB_CLUSTER_NAME/],
    ['port not a number', [], { ...base, PORT: 'http' }, /PORT must be a whole number/],
    ['unknown flag', ['--bogus'], base, /bogus/],
  ])('refuses: %s', (_, argv, env, message) => {
    expect(() => readConfig(argv, env)).toThrow(message);
  });
});
