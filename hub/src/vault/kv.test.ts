import { describe, expect, it } from 'vitest';
import { VaultError } from './errors.js';
import { apiPath } from './http.js';
import {
  assertStringMap,
  decodeData,
  desiredCustomMetadata,
  matchMount,
  normalizePath,
  OWNER_METADATA_KEY,
  sameStringMap,
  type KvVersion,
} from './kv.js';

describe('normalizePath', () => {
  it.each([
    ['secret/team-a/db', 'secret/team-a/db'],
    ['/secret//team-a/db/', 'secret/team-a/db'],
    ['secret', 'secret'],
  ])('%s -> %s', (input, want) => {
    expect(normalizePath(input)).toBe(want);
  });

  it.each(['', '/', 'secret/../sys', 'secret/./x'])('refuses %j', (input) => {
    expect(() => normalizePath(input)).toThrow(VaultError);
  });
});

describe('matchMount', () => {
  const mounts = new Map<string, KvVersion>([
    ['secret', 2],
    ['team', 1],
    ['team/nested', 2],
  ]);
  it.each([
    ['secret/a/b', { mount: 'secret', version: 2, key: 'a/b' }],
    ['team/x', { mount: 'team', version: 1, key: 'x' }],
    ['team/nested/x', { mount: 'team/nested', version: 2, key: 'x' }],
    ['secret', { mount: 'secret', version: 2, key: '' }],
    ['secretive/x', undefined],
  ])('%s', (path, want) => {
    expect(matchMount(path, mounts)).toEqual(want);
  });
});

describe('apiPath', () => {
  it('encodes each segment and keeps the slashes', () => {
    expect(apiPath('secret', 'data', 'team a/db?x')).toBe('secret/data/team%20a/db%3Fx');
    expect(apiPath('secret', 'metadata', '')).toBe('secret/metadata');
  });
});

describe('decodeData', () => {
  it('keeps strings and turns every other JSON value into its JSON text, listing its key', () => {
    expect(
      decodeData({ s: 'x', n: 1, b: true, z: null, o: { a: 1 }, l: [1, 'two'], e: '' }),
    ).toEqual({
      data: { s: 'x', n: '1', b: 'true', z: 'null', o: '{"a":1}', l: '[1,"two"]', e: '' },
      jsonKeys: ['n', 'b', 'z', 'o', 'l'],
    });
  });

  it('reads nothing from a body that is not an object', () => {
    expect(decodeData(null)).toEqual({ data: {}, jsonKeys: [] });
    expect(decodeData(['a'])).toEqual({ data: {}, jsonKeys: [] });
  });
});

describe('sameStringMap', () => {
  it.each([
    [{}, {}, true],
    [{ a: '1' }, { a: '1' }, true],
    [{ a: '1', b: '2' }, { b: '2', a: '1' }, true],
    [{ a: '1' }, { a: '2' }, false],
    [{ a: '1' }, { a: '1', b: '' }, false],
    [{ a: '' }, { b: '' }, false],
  ])('%j vs %j: %s', (a, b, want) => {
    expect(sameStringMap(a, b)).toBe(want);
  });
});

describe('assertStringMap', () => {
  it('accepts strings, including empty ones', () => {
    expect(() => assertStringMap('data', { a: '', b: 'x' })).not.toThrow();
  });
  it.each([
    [{ a: 1 }, 'the value of "a" is a number, not a string'],
    [{ a: null }, 'the value of "a" is a null, not a string'],
    [{ '': 'x' }, 'has an empty key'],
    [['x'], 'must be an object of strings'],
  ])('refuses %j', (map, message) => {
    expect(() => assertStringMap('data', map)).toThrow(message);
  });
});

describe('desiredCustomMetadata', () => {
  const current = { team: 'a', [OWNER_METADATA_KEY]: 'hub/x' };
  it.each([
    ['leaves it alone without customMetadata or owner', {}, undefined],
    [
      'replaces the map and keeps the owner',
      { customMetadata: { env: 'prod' } },
      { env: 'prod', [OWNER_METADATA_KEY]: 'hub/x' },
    ],
    [
      'sets a new owner and keeps the rest',
      { owner: 'hub/y' },
      { team: 'a', [OWNER_METADATA_KEY]: 'hub/y' },
    ],
    ['removes the owner with null', { owner: null }, { team: 'a' }],
    [
      'never lets customMetadata forge the owner key',
      { customMetadata: { [OWNER_METADATA_KEY]: 'forged' } },
      { [OWNER_METADATA_KEY]: 'hub/x' },
    ],
  ])('%s', (_, opts, want) => {
    expect(desiredCustomMetadata(current, opts)).toEqual(want);
  });
});
