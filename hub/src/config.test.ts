import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configFromEnv as readEnv } from './config.js';

const KEY_DIR = mkdtempSync(join(tmpdir(), 'mirrorhub-hub-config-'));
const KEY_FILE = join(KEY_DIR, 'private.pem');
afterAll(() => rmSync(KEY_DIR, { recursive: true, force: true }));
const KEY_PEM = generateKeyPairSync('ed25519')
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
writeFileSync(KEY_FILE, KEY_PEM);

/** The environment under test, with the signing key every hub needs. */
const configFromEnv = (env: Record<string, string | undefined>) =>
  readEnv({ MIRRORHUB_SIGNING_KEY_FILE: KEY_FILE, ...env });

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
        MIRRORHUB_CLUSTER_HEALTH_INTERVAL_SECONDS: '5',
        MIRRORHUB_AGENT_HEARTBEAT_GRACE_SECONDS: '60',
        MIRRORHUB_CLUSTER_REQUEST_TIMEOUT_SECONDS: '3',
        MIRRORHUB_CLEANUP_GRACE_SECONDS: '0',
        MIRRORHUB_WATCH_PROGRESS_DEADLINE_SECONDS: '90',
        MIRRORHUB_STS_ENDPOINT: 'http://127.0.0.1:5000',
        MIRRORHUB_EKS_ENDPOINT: 'http://127.0.0.1:5001',
        MIRRORHUB_STS_REGION: 'us-east-1',
        MIRRORHUB_ROLE_DURATION_SECONDS: '900',
      }),
    ).toMatchObject({
      namespace: 'mh',
      agentNamespace: 'agents',
      clusterName: 'mgmt',
      healthPort: 9090,
      concurrency: 8,
      leaderElection: false,
      clusterHealthIntervalMs: 5000,
      agentHeartbeatGraceMs: 60_000,
      clusterRequestTimeoutMs: 3000,
      cleanupGraceMs: 0,
      watchProgressDeadlineMs: 90_000,
      aws: {
        stsEndpoint: 'http://127.0.0.1:5000',
        eksEndpoint: 'http://127.0.0.1:5001',
        region: 'us-east-1',
        roleDurationSeconds: 900,
      },
    });
  });

  it('reads the signing key and the tenancy rules', () => {
    expect(
      configFromEnv({
        MIRRORHUB_REMOTE_NAMESPACES: '["platform-.+"]',
        MIRRORHUB_REQUIRE_ACCEPTANCE: 'true',
      }),
    ).toMatchObject({
      signingKey: KEY_PEM,
      remoteNamespaces: ['platform-.+'],
      requireAcceptance: true,
    });
    expect(configFromEnv({})).toMatchObject({ remoteNamespaces: [], requireAcceptance: false });
  });

  it('leaves AWS to the default chain when nothing is set', () => {
    expect(configFromEnv({}).aws).toBeUndefined();
    expect(configFromEnv({}).proxy).toBeUndefined();
  });

  it('reads per-region STS and EKS endpoints beside the global ones', () => {
    expect(
      configFromEnv({
        MIRRORHUB_STS_ENDPOINT: 'https://sts.example',
        MIRRORHUB_STS_ENDPOINT_EU_WEST_1: 'https://vpce-1.sts.eu-west-1.vpce.amazonaws.com',
        MIRRORHUB_EKS_ENDPOINT_US_EAST_1: 'https://vpce-2.eks.us-east-1.vpce.amazonaws.com',
      }).aws,
    ).toEqual({
      stsEndpoint: 'https://sts.example',
      stsEndpoints: { 'eu-west-1': 'https://vpce-1.sts.eu-west-1.vpce.amazonaws.com' },
      eksEndpoints: { 'us-east-1': 'https://vpce-2.eks.us-east-1.vpce.amazonaws.com' },
    });
  });

  it('shares the followers only when told to', () => {
    expect(configFromEnv({}).shareFollowers).toBeUndefined();
    expect(configFromEnv({ MIRRORHUB_SHARE_FOLLOWERS: 'true' }).shareFollowers).toBe(true);
    expect(configFromEnv({ MIRRORHUB_SHARE_FOLLOWERS: 'false' }).shareFollowers).toBeUndefined();
  });

  it('reads the egress proxy as curl and Go do', () => {
    expect(
      configFromEnv({ https_proxy: 'http://squid.corp:3128', NO_PROXY: '.internal,10.0.0.0/8' })
        .proxy,
    ).toEqual({ httpsProxy: 'http://squid.corp:3128', noProxy: '.internal,10.0.0.0/8' });
    // NO_PROXY alone changes nothing
    expect(configFromEnv({ NO_PROXY: '*' }).proxy).toBeUndefined();
  });

  it.each([
    [{ PORT: 'http' }, /PORT must be an integer/],
    [{ PORT: '70000' }, /PORT must be an integer from 0 to 65535/],
    [{ MIRRORHUB_CONCURRENCY: '0' }, /MIRRORHUB_CONCURRENCY/],
    [{ MIRRORHUB_LEADER_ELECTION: 'maybe' }, /MIRRORHUB_LEADER_ELECTION must be true or false/],
    [{ MIRRORHUB_SHARE_FOLLOWERS: 'yes' }, /MIRRORHUB_SHARE_FOLLOWERS must be true or false/],
    [
      { MIRRORHUB_SHARE_FOLLOWERS: 'true', MIRRORHUB_LEADER_ELECTION: 'false' },
      /MIRRORHUB_SHARE_FOLLOWERS=true needs leader election/,
    ],
    [{ MIRRORHUB_STS_ENDPOINT: 'moto:5000' }, /MIRRORHUB_STS_ENDPOINT must be an http\(s\) URL/],
    [{ MIRRORHUB_ROLE_DURATION_SECONDS: '7200' }, /from 900 to 3600/],
    [{ MIRRORHUB_EKS_ENDPOINT_EU_WEST_1: 'vpce' }, /MIRRORHUB_EKS_ENDPOINT_EU_WEST_1 must be/],
    [{ HTTPS_PROXY: 'socks5://proxy:1080' }, /HTTPS_PROXY must be an http:\/\/ or https:\/\//],
    [
      { MIRRORHUB_CLUSTER_HEALTH_INTERVAL_SECONDS: '0' },
      /MIRRORHUB_CLUSTER_HEALTH_INTERVAL_SECONDS/,
    ],
    [{ MIRRORHUB_SIGNING_KEY_FILE: '' }, /MIRRORHUB_SIGNING_KEY_FILE is required/],
    [{ MIRRORHUB_SIGNING_KEY_FILE: '/nonexistent/key.pem' }, /cannot read \/nonexistent\/key.pem/],
    [{ MIRRORHUB_REMOTE_NAMESPACES: 'platform' }, /must be a JSON array of patterns/],
    [{ MIRRORHUB_REQUIRE_ACCEPTANCE: 'yes' }, /must be true or false/],
    [
      { MIRRORHUB_WATCH_PROGRESS_DEADLINE_SECONDS: '20' },
      /from 90 to 3600; got "20" \(the API server sends a bookmark about once a minute/,
    ],
  ])('refuses %j', (env, message) => {
    expect(() => configFromEnv(env)).toThrow(message);
  });
});
