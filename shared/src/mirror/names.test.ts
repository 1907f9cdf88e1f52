import { describe, expect, it } from 'vitest';
import type { MirrorDestination } from '../api/types.gen.js';
import {
  MAX_DELIVERY_NAME,
  copyMarks,
  deliveryName,
  destinationSummary,
  mirrorRef,
  originRef,
  ownershipOf,
  parseMirrorRef,
  payloadSecretName,
  type MirrorIdentity,
} from './names.js';
import { ANNOTATION_CONTENT_HASH, LABEL_DELIVERY, LABEL_MANAGED_BY } from '../api/contract.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const long = (n: number, c = 'a') => c.repeat(n);

describe('deliveryName', () => {
  it.each<[string, MirrorIdentity, RegExp]>([
    [
      'SecretMirror',
      { kind: 'SecretMirror', namespace: 'team-a', name: 'wildcard' },
      /^sm-team-a-wildcard-[0-9a-f]{16}$/,
    ],
    [
      'ClusterSecretMirror',
      { kind: 'ClusterSecretMirror', name: 'wildcard' },
      /^csm-wildcard-[0-9a-f]{16}$/,
    ],
    [
      'dots become dashes',
      { kind: 'SecretMirror', namespace: 'a', name: 'tls.example.com' },
      /^sm-a-tls-example-com-[0-9a-f]{16}$/,
    ],
    [
      'long names are truncated',
      { kind: 'SecretMirror', namespace: long(63, 'n'), name: long(253) },
      /^sm-n+-[0-9a-f]{16}$/,
    ],
    [
      'truncation never leaves a dash before the hash',
      { kind: 'ClusterSecretMirror', name: `${long(41)}-${long(40, 'b')}` },
      /^csm-a{41}-[0-9a-f]{16}$/,
    ],
  ])('%s', (_, mirror, shape) => {
    const name = deliveryName(mirror, 'hub');
    expect(name).toMatch(shape);
    expect(name).toMatch(DNS_LABEL); // valid object name AND label value
    expect(name.length).toBeLessThanOrEqual(MAX_DELIVERY_NAME);
    expect(deliveryName(mirror, 'hub')).toBe(name); // deterministic
  });

  it.each<[string, MirrorIdentity, MirrorIdentity, string, string]>([
    [
      'namespace/name split',
      { kind: 'SecretMirror', namespace: 'a-b', name: 'c' },
      { kind: 'SecretMirror', namespace: 'a', name: 'b-c' },
      'hub',
      'hub',
    ],
    [
      'kind',
      { kind: 'SecretMirror', namespace: '', name: 'x' },
      { kind: 'ClusterSecretMirror', name: 'x' },
      'hub',
      'hub',
    ],
    [
      'origin cluster',
      { kind: 'ClusterSecretMirror', name: 'x' },
      { kind: 'ClusterSecretMirror', name: 'x' },
      'hub-1',
      'hub-2',
    ],
    [
      'truncated alike',
      { kind: 'ClusterSecretMirror', name: `${long(80)}x` },
      { kind: 'ClusterSecretMirror', name: `${long(80)}y` },
      'hub',
      'hub',
    ],
  ])('differs by %s', (_, a, b, originA, originB) => {
    expect(deliveryName(a, originA)).not.toBe(deliveryName(b, originB));
  });

  it('hashes 64 bits, still within 63 characters', () => {
    const name = deliveryName({ kind: 'ClusterSecretMirror', name: long(253) }, 'hub');
    expect(name).toMatch(/^csm-a{42}-[0-9a-f]{16}$/);
    expect(name.length).toBe(MAX_DELIVERY_NAME);
  });

  it('is pinned: deliveries in clusters carry this name, so it must never change', () => {
    const m: MirrorIdentity = { kind: 'SecretMirror', namespace: 'team-a', name: 'wildcard' };
    expect(deliveryName(m, 'hub')).toBe('sm-team-a-wildcard-5a56ab13d5f0b32c');
  });

  it('payload Secret is named after the delivery', () => {
    expect(payloadSecretName('sm-a-b-0123456789abcdef')).toBe('sm-a-b-0123456789abcdef');
  });
});

describe('refs and marks', () => {
  it.each<[MirrorIdentity, string]>([
    [{ kind: 'SecretMirror', namespace: 'team-a', name: 'tls' }, 'SecretMirror/team-a/tls'],
    [{ kind: 'ClusterSecretMirror', name: 'tls' }, 'ClusterSecretMirror//tls'],
  ])('mirrorRef(%j) = %s', (mirror, ref) => {
    expect(mirrorRef(mirror)).toBe(ref);
  });

  it('originRef and copyMarks', () => {
    expect(originRef('hub', 'cert-manager', 'wildcard')).toBe('hub/cert-manager/wildcard');
    expect(copyMarks({ deliveryName: 'd', origin: 'o', mirror: 'm', contentHash: 'h' })).toEqual({
      labels: { 'mirrorhub.io/managed-by': 'mirrorhub', 'mirrorhub.io/delivery': 'd' },
      annotations: {
        'mirrorhub.io/origin': 'o',
        'mirrorhub.io/mirror': 'm',
        'mirrorhub.io/content-hash': 'h',
      },
    });
  });

  it.each([
    ['nothing there', undefined, 'absent'],
    ['no labels', { metadata: {} }, 'foreign'],
    ['unrelated labels', { metadata: { labels: { app: 'x' } } }, 'foreign'],
    [
      'delivery label without managed-by',
      { metadata: { labels: { [LABEL_DELIVERY]: 'd1' } } },
      'foreign',
    ],
    [
      'managed-by without delivery',
      { metadata: { labels: { [LABEL_MANAGED_BY]: 'mirrorhub' } } },
      'foreign',
    ],
    [
      'managed by someone else',
      { metadata: { labels: { [LABEL_MANAGED_BY]: 'helm', [LABEL_DELIVERY]: 'd1' } } },
      'foreign',
    ],
    [
      'ours',
      { metadata: { labels: { [LABEL_MANAGED_BY]: 'mirrorhub', [LABEL_DELIVERY]: 'd1' } } },
      'ours',
    ],
    [
      'another delivery',
      { metadata: { labels: { [LABEL_MANAGED_BY]: 'mirrorhub', [LABEL_DELIVERY]: 'd2' } } },
      'other-delivery',
    ],
    [
      'hash annotation alone proves nothing',
      { metadata: { annotations: { [ANNOTATION_CONTENT_HASH]: 'x' } } },
      'foreign',
    ],
  ])('ownership: %s -> %s', (_, existing, expected) => {
    expect(ownershipOf(existing, 'd1')).toBe(expected);
  });

  it.each<[string, MirrorIdentity | undefined]>([
    ['SecretMirror/team-a/tls', { kind: 'SecretMirror', namespace: 'team-a', name: 'tls' }],
    ['ClusterSecretMirror//tls', { kind: 'ClusterSecretMirror', name: 'tls' }],
    ['SecretMirror//tls', undefined],
    ['ClusterSecretMirror/x/tls', undefined],
    ['SecretMirror/a/', undefined],
    ['Secret/a/b', undefined],
    ['SecretMirror/a/b/c', undefined],
    ['', undefined],
  ])('parseMirrorRef(%j)', (ref, identity) => {
    expect(parseMirrorRef(ref)).toEqual(identity);
    if (identity) expect(mirrorRef(identity)).toBe(ref);
  });
});

describe('destinationSummary', () => {
  it.each<[string, MirrorDestination, string]>([
    [
      'regexes and selector',
      { namespaces: ['project-a-.+'], namespaceSelector: { matchLabels: { team: 'a' } } },
      '/project-a-.+/, team=a',
    ],
    ['empty selector', { namespaceSelector: {} }, '*'],
    [
      'excludes',
      { namespaces: ['.*'], excludeNamespaces: ['kube-.*', 'default'] },
      '/.*/ except /kube-.*/, /default/',
    ],
    [
      'clusters',
      {
        namespaces: ['apps'],
        clusters: { names: ['prod-eu'], selector: { matchLabels: { env: 'prod' } } },
      },
      '/apps/ on prod-eu, env=prod',
    ],
    ['nothing', {}, '-'],
  ])('%s', (_, destination, expected) => {
    expect(destinationSummary({ destination })).toBe(expected);
  });

  it('stays within the CRD bound', () => {
    const summary = destinationSummary({ destination: { namespaces: Array(64).fill(long(40)) } });
    expect(summary.length).toBe(256);
    expect(summary.endsWith('…')).toBe(true);
  });
});
