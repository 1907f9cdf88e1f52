import { describe, expect, it } from 'vitest';
import {
  resolveSource,
  resolveVaultDestination,
  type AnyMirror,
} from '@mirrorhub/shared/api/index';
import { DYNAMIC_ENGINES, dynamicEngineRefusal, grantMatches, grantRefusal } from './paths.js';

describe('grantMatches (Vault policy glob syntax on the logical path)', () => {
  it.each<[string, string, boolean]>([
    ['secret/shared/db', 'secret/shared/db', true],
    ['secret/shared/db', 'secret/shared/db2', false],
    ['secret/shared/db', 'secret/shared', false],
    ['secret/shared/*', 'secret/shared/db', true],
    ['secret/shared/*', 'secret/shared/a/b/c', true],
    ['secret/shared/*', 'secret/shared', false],
    ['secret/shared/*', 'secret/sharedx/db', false],
    ['secret/app*', 'secret/apple', true],
    ['secret/app*', 'secret/app/x', true],
    ['secret/app*', 'secret/ap', false],
    ['secret/+/db', 'secret/team-x/db', true],
    ['secret/+/db', 'secret/team-x/y/db', false],
    ['secret/teams/{namespace}/*', 'secret/teams/team-x/db', true],
    ['secret/teams/{namespace}/*', 'secret/teams/team-y/db', false],
    ['secret/teams/{namespace}/*', 'secret/teams/team-x', false],
    ['database/creds/{namespace}-ro', 'database/creds/team-x-ro', true],
    ['database/creds/{namespace}-ro', 'database/creds/team-y-ro', false],
    ['creds/+', 'creds/app', true],
    ['creds/+', 'rotate-root/app', false],
  ])('%s vs %s: %s', (grant, path, want) => {
    expect(grantMatches(grant, 'team-x', path)).toBe(want);
  });
});

describe('grantRefusal', () => {
  const grants = { read: ['secret/shared/*', 'secret/teams/{namespace}/*'] };
  it('allows a granted path, for its use only', () => {
    expect(grantRefusal('shared', grants, 'team-x', 'secret/shared/db', 'read')).toBeUndefined();
    expect(grantRefusal('shared', grants, 'team-x', 'secret/teams/team-x/db', 'read')).toBe(
      undefined,
    );
    expect(grantRefusal('shared', grants, 'team-x', 'secret/shared/db', 'dynamic')).toContain(
      'spec.tenantPaths.dynamic, which is empty',
    );
  });
  it("refuses another namespace's path and anything when nothing is granted, naming the rule", () => {
    const msg = grantRefusal('shared', grants, 'team-x', 'secret/teams/team-y/db', 'read');
    expect(msg).toContain('ClusterVaultConnection "shared" does not grant');
    expect(msg).toContain(
      "rule: a shared connection's paths are authorised in its spec.tenantPaths.read",
    );
    expect(msg).toContain('which lists secret/shared/*, secret/teams/{namespace}/*');
    expect(grantRefusal('shared', undefined, 'team-x', 'secret/shared/db', 'read')).toContain(
      'which is empty',
    );
  });
});

describe('dynamicEngineRefusal', () => {
  it.each<[string, string, string, 'GET' | 'POST', string | undefined]>([
    ['database/creds/app', 'database', 'database', 'GET', undefined],
    ['database/creds/app', 'database', 'database', 'POST', 'not POST'],
    ['database/rotate-root/pg', 'database', 'database', 'POST', 'not a credential endpoint'],
    ['database/config/pg', 'database', 'database', 'GET', 'not a credential endpoint'],
    ['db/team/creds/app', 'db/team', 'database', 'GET', undefined],
    ['aws/sts/deploy', 'aws', 'aws', 'POST', undefined],
    ['aws/creds/deploy', 'aws', 'aws', 'GET', undefined],
    ['aws/creds/deploy', 'aws', 'aws', 'POST', 'not POST'],
    ['k8s/creds/role', 'k8s', 'kubernetes', 'POST', undefined],
    ['k8s/creds/role', 'k8s', 'kubernetes', 'GET', 'not GET'],
    ['secret/shared/db', 'secret', 'kv', 'GET', 'does not issue leased credentials'],
    ['auth/token/revoke-self', 'auth/token', 'token', 'POST', 'does not issue leased credentials'],
    ['x/sts/y', 'x', 'aws-sts', 'GET', 'does not issue leased credentials'],
    ['p/issue/web', 'p', 'pki', 'POST', 'does not issue leased credentials'],
  ])('%s (%s, %s, %s)', (path, mount, type, method, want) => {
    const got = dynamicEngineRefusal(path, mount, type, method);
    if (want === undefined) expect(got).toBeUndefined();
    else {
      expect(got).toContain(want);
      expect(got).toContain('rule: ');
    }
  });
  it('lists no engine without a credential endpoint, and no KV type', () => {
    for (const [type, e] of Object.entries(DYNAMIC_ENGINES)) {
      expect(e.paths.length, type).toBeGreaterThan(0);
      expect(['kv', 'generic', 'cubbyhole', 'token', 'system', 'identity']).not.toContain(type);
    }
  });
});

describe('reserved engines (every mirror, source and destination)', () => {
  const mirror = (kind: 'SecretMirror' | 'ClusterSecretMirror', path: string): AnyMirror =>
    ({
      kind,
      metadata: { name: 'm', ...(kind === 'SecretMirror' ? { namespace: 'team-x' } : {}) },
      spec: {
        source: {
          kind: 'Vault',
          vault: { connectionRef: { kind: 'ClusterVaultConnection', name: 'shared' }, path },
        },
        destination: {
          vault: { connectionRef: { kind: 'ClusterVaultConnection', name: 'shared' }, path },
        },
      },
    }) as never;
  it.each([
    'auth/token/lookup-self',
    'auth/token/revoke-self',
    'sys/mounts/x',
    'identity/entity/id',
    'cubbyhole/x',
    'AUTH/token/lookup-self',
    '/auth//token/lookup-self',
  ])('%s is refused, naming the rule', (path) => {
    for (const kind of ['SecretMirror', 'ClusterSecretMirror'] as const) {
      const src = resolveSource(mirror(kind, path));
      expect(src.ok).toBe(false);
      if (!src.ok) expect(src.error).toContain('rule: no mirror reads or writes');
    }
    const dst = resolveVaultDestination(mirror('ClusterSecretMirror', path));
    expect(dst?.ok).toBe(false);
  });
  it('a KV path whose inner segment is named like one is fine', () => {
    expect(resolveSource(mirror('SecretMirror', 'secret/auth/db')).ok).toBe(true);
  });
});
