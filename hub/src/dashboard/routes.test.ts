import { describe, expect, it } from 'vitest';
import { checkTarget, mirrorKeyOfPath } from './routes.js';

describe('checkTarget', () => {
  it.each([
    ['/api/v1/snapshot', 'snapshot', '/api/v1/snapshot', ''],
    ['/api/v1/snapshot?groupBy=env', 'snapshot', '/api/v1/snapshot', '?groupBy=env'],
    ['/api/v1/where?name=app-config', 'where', '/api/v1/where', '?name=app-config'],
    ['/api/v1/watch', 'watch', '/api/v1/watch', ''],
    ['/api/v1/mirrors/SecretMirror/src/app', 'mirror', '/api/v1/mirrors/SecretMirror/src/app', ''],
    [
      '/api/v1/mirrors/ClusterSecretMirror/_/x',
      'mirror',
      '/api/v1/mirrors/ClusterSecretMirror/_/x',
      '',
    ],
  ])('accepts %s', (target, route, pathname, search) => {
    expect(checkTarget(target)).toMatchObject({ ok: true, route, pathname, search });
  });

  it.each([
    // Absolute and scheme-relative forms, and what a URL parser reads as one.
    ['http://127.0.0.1:9/api/v1/snapshot', 400],
    ['https://10.0.0.10:9090/api/v1/watch', 400],
    ['//127.0.0.1:9/api/v1/snapshot', 400],
    ['/\\127.0.0.1:9/api/v1/snapshot', 400],
    ['\\\\127.0.0.1/api/v1/snapshot', 400],
    ['127.0.0.1:9', 400],
    ['*', 400],
    ['', 400],
    ['/api/v1/snapshot#x', 400],
    // What normalisation would change: served would not be what was asked for.
    ['/api/v1/mirrors/../../metrics', 400],
    ['/api/v1/mirrors/SecretMirror/%2e%2e/x', 400],
    ['/api/v1/./snapshot', 400],
    // Unknown paths and query parameters.
    ['/metrics', 404],
    ['/api/v1/snapshotx', 404],
    ['/api/v2/snapshot', 404],
    ['/api/v1/snapshot?groupBy=a&groupBy=b', 400],
    ['/api/v1/snapshot?x=1', 400],
    ['/api/v1/watch?groupBy=env', 400],
    ['/api/v1/mirrors/SecretMirror/src', 400],
    ['/api/v1/mirrors/SecretMirror/src/app/x', 400],
    ['/api/v1/mirrors/SecretMirror/a%2Fb/c', 400],
    ['/api/v1/mirrors/Secret/src/app', 400],
    ['/api/v1/mirrors/SecretMirror/src/%zz', 400],
  ])('refuses %s with %i', (target, status) => {
    expect(checkTarget(target)).toMatchObject({ ok: false, status });
  });
});

describe('mirrorKeyOfPath', () => {
  it.each([
    ['/api/v1/mirrors/SecretMirror/src/app', 'SecretMirror/src/app'],
    ['/api/v1/mirrors/ClusterSecretMirror/_/wide', 'ClusterSecretMirror//wide'],
    ['/api/v1/mirrors/SecretMirror/_/app', undefined],
    ['/api/v1/mirrors/SecretMirror//app', undefined],
    ['/api/v1/mirrors/ClusterSecretMirror/ns/wide', undefined],
  ])('%s -> %s', (path, key) => {
    expect(mirrorKeyOfPath(path)).toBe(key);
  });
});
