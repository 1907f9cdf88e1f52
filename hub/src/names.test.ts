import type { MirrorIdentity } from '@mirrorhub/shared';
import { describe, expect, it } from 'vitest';
import { mirrorKey, parseMirrorKey, validateClusterName } from './names.js';

describe('mirror keys', () => {
  it.each<[MirrorIdentity, string]>([
    [{ kind: 'SecretMirror', namespace: 'team-a', name: 'tls' }, 'SecretMirror/team-a/tls'],
    [{ kind: 'ClusterSecretMirror', name: 'wildcard' }, 'ClusterSecretMirror//wildcard'],
  ])('%j <-> %s', (id, key) => {
    expect(mirrorKey(id)).toBe(key);
    expect(parseMirrorKey(key)).toEqual(id);
  });

  it.each([
    '',
    'SecretMirror',
    'SecretMirror//x',
    'ClusterSecretMirror/ns/x',
    'Other/ns/x',
    'SecretMirror/ns/',
  ])('refuses %j', (key) => {
    expect(parseMirrorKey(key)).toBeUndefined();
  });
});

describe('validateClusterName', () => {
  it.each([
    ['hub', true],
    ['prod-eu-1', true],
    ['Hub', false],
    ['-x', false],
    ['a'.repeat(64), false],
  ])('%s', (name, ok) => {
    expect(validateClusterName(name) === undefined).toBe(ok);
  });
});
