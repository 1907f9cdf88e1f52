import { describe, expect, it } from 'vitest';
import { configFromEnv } from './config.js';

describe('configFromEnv', () => {
  it('defaults', () => {
    const c = configFromEnv({ POD_NAME: 'hub-0' });
    expect(c).toMatchObject({
      namespace: 'mirrorhub-system',
      agentNamespace: 'mirrorhub-system',
      clusterName: 'hub',
      healthPort: 8080,
      concurrency: 4,
    });
    expect(c.identity).toMatch(/^hub-0_[0-9a-f]{8}$/);
    expect(c.leaderElection).toBeUndefined();
  });

  it('reads every variable', () => {
    expect(
      configFromEnv({
        MIRRORHUB_NAMESPACE: 'mh',
        MIRRORHUB_AGENT_NAMESPACE: 'agents',
        MIRRORHUB_CLUSTER_NAME: 'mgmt',
        PORT: '9090',
        MIRRORHUB_CONCURRENCY: '8',
        MIRRORHUB_LEADER_ELECTION: 'false',
      }),
    ).toMatchObject({
      namespace: 'mh',
      agentNamespace: 'agents',
      clusterName: 'mgmt',
      healthPort: 9090,
      concurrency: 8,
      leaderElection: false,
    });
  });

  it.each([
    [{ PORT: 'http' }, /PORT must be an integer/],
    [{ PORT: '70000' }, /PORT must be an integer from 0 to 65535/],
    [{ MIRRORHUB_CONCURRENCY: '0' }, /MIRRORHUB_CONCURRENCY/],
    [{ MIRRORHUB_LEADER_ELECTION: 'maybe' }, /MIRRORHUB_LEADER_ELECTION must be true or false/],
  ])('refuses %j', (env, message) => {
    expect(() => configFromEnv(env)).toThrow(message);
  });
});
