import { describe, expect, it } from 'vitest';
import type { MirrorTemplate } from '../api/types.gen.js';
import { copyMarks } from './names.js';
import {
  buildPayloadSecret,
  readPayload,
  renderCopy,
  selectKeys,
  shapeMetadata,
  shapeSource,
  type SourceObject,
} from './shape.js';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

const tlsSecret: SourceObject = {
  metadata: {
    labels: { app: 'web', 'mirrorhub.io/delivery': 'x', team: 'a' },
    annotations: {
      'kubectl.kubernetes.io/last-applied-configuration': '{}',
      'cert-manager.io/issuer-name': 'letsencrypt',
      'mirrorhub.io/content-hash': 'old',
      'example.com/owner': 'ops',
      'example.com/ticket': '42',
    },
  },
  type: 'kubernetes.io/tls',
  data: { 'tls.crt': b64('CRT'), 'tls.key': b64('KEY'), 'ca.crt': b64('CA') },
};

describe('shapeSource (hub)', () => {
  it.each<[string, MirrorTemplate | undefined, Partial<ReturnType<typeof shapeSource>>]>([
    [
      'no template: every key, source metadata minus what is never copied',
      undefined,
      {
        data: tlsSecret.data!,
        binaryKeys: [],
        template: {
          type: 'kubernetes.io/tls',
          labels: { app: 'web', team: 'a' },
          annotations: {
            'cert-manager.io/issuer-name': 'letsencrypt',
            'example.com/owner': 'ops',
            'example.com/ticket': '42',
          },
        },
        warnings: [],
      },
    ],
    [
      'keys pick and rename; missing keys warn',
      { keys: [{ from: 'tls.crt', to: 'cert.pem' }, { from: 'tls.key' }, { from: 'password' }] },
      {
        data: { 'cert.pem': b64('CRT'), 'tls.key': b64('KEY') },
        warnings: ['template.keys: source has no key "password"; it is not copied'],
      },
    ],
    [
      'type override, labels and annotations added and removed',
      {
        type: 'Opaque',
        labels: { team: 'b', env: 'prod' },
        annotations: { note: 'copied' },
        removeLabels: ['app'],
        removeAnnotations: ['example.com/*'],
      },
      {
        template: {
          type: 'Opaque',
          labels: { team: 'b', env: 'prod' },
          annotations: { 'cert-manager.io/issuer-name': 'letsencrypt', note: 'copied' },
        },
      },
    ],
    [
      'two keys to one name: the first wins, with a warning',
      {
        keys: [
          { from: 'tls.crt', to: 'x' },
          { from: 'tls.key', to: 'x' },
        ],
      },
      {
        data: { x: b64('CRT') },
        warnings: ['template.keys: two keys are copied to "x"; the first is kept'],
      },
    ],
  ])('%s', (_, template, expected) => {
    const shaped = shapeSource('Secret', tlsSecret, template);
    // Field by field, exactly (toMatchObject would let extra keys through).
    for (const [field, value] of Object.entries(expected)) {
      expect(shaped[field as keyof typeof shaped], field).toEqual(value);
    }
  });

  it.each<[string, SourceObject, string]>([
    ['source without type', { data: {} }, 'Opaque'],
    [
      'source type kept',
      { type: 'kubernetes.io/dockerconfigjson' },
      'kubernetes.io/dockerconfigjson',
    ],
  ])('Secret type: %s', (_, source, type) => {
    expect(shapeSource('Secret', source, undefined).template.type).toBe(type);
  });

  it('ConfigMap: text is base64 in the payload, binaryData keys are listed, no type', () => {
    const shaped = shapeSource(
      'ConfigMap',
      { data: { 'app.conf': 'a=1\n', 'ü.txt': 'grüß' }, binaryData: { 'logo.png': 'iVBORw==' } },
      { type: 'Opaque', keys: [{ from: 'logo.png', to: 'icon.png' }, { from: 'app.conf' }] },
    );
    expect(shaped).toEqual({
      data: { 'icon.png': 'iVBORw==', 'app.conf': b64('a=1\n') },
      binaryKeys: ['icon.png'],
      template: { labels: {}, annotations: {} },
      warnings: [],
    });
  });
});

describe('selectKeys and shapeMetadata', () => {
  it.each([
    ['all keys when none listed', undefined, { a: '1', b: '2' }, []],
    ['prototype names are not keys', [{ from: 'constructor' }], {}, ['constructor']],
  ])('%s', (_, keys, data, missing) => {
    const r = selectKeys({ a: '1', b: '2' }, keys);
    expect(r.data).toEqual(data);
    expect(r.missing).toEqual(missing);
  });

  it.each<
    [
      string,
      Record<string, string>,
      Record<string, string> | undefined,
      string[],
      Record<string, string>,
    ]
  >([
    ['exact removal', { a: '1', b: '2' }, undefined, ['a'], { b: '2' }],
    ['prefix removal', { 'x.io/a': '1', 'x.io/b': '2', c: '3' }, undefined, ['x.io/*'], { c: '3' }],
    ['template overrides source', { a: '1' }, { a: '2' }, [], { a: '2' }],
    ['template wins over removal', { a: '1' }, { a: '2' }, ['a'], { a: '2' }],
    [
      'reserved keys never pass, even from the template',
      { 'mirrorhub.io/x': '1' },
      { 'mirrorhub.io/y': '2' },
      [],
      {},
    ],
    [
      'last-applied never passes',
      { 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
      undefined,
      [],
      {},
    ],
    [
      "a Helm release's ownership marks stay on the source",
      {
        'app.kubernetes.io/managed-by': 'Helm',
        'meta.helm.sh/release-name': 'db',
        'meta.helm.sh/release-namespace': 'team-a',
        'helm.sh/chart': 'postgresql-1.0.0',
        'app.kubernetes.io/name': 'postgresql',
      },
      undefined,
      [],
      { 'app.kubernetes.io/name': 'postgresql' },
    ],
    [
      "Argo CD's tracking label and annotation stay on the source",
      {
        'app.kubernetes.io/instance': 'myapp',
        'argocd.argoproj.io/tracking-id': 'myapp:/Secret:src/db',
        team: 'a',
      },
      undefined,
      [],
      { team: 'a' },
    ],
    [
      "other mirroring tools' marks stay on the source",
      {
        'reflector.v1.k8s.emberstack.com/reflection-auto-enabled': 'true',
        'kubed.appscode.com/sync': '',
        'clustersecret.io': 'x',
        'reconcile.external-secrets.io/managed': 'true',
      },
      undefined,
      [],
      {},
    ],
    [
      "a template's ownership mark passes (the follower's policy decides)",
      { 'app.kubernetes.io/managed-by': 'Helm' },
      { 'app.kubernetes.io/managed-by': 'Helm', 'meta.helm.sh/release-name': 'db' },
      [],
      { 'app.kubernetes.io/managed-by': 'Helm', 'meta.helm.sh/release-name': 'db' },
    ],
  ])('%s', (_, source, add, remove, expected) => {
    expect(shapeMetadata(source, add, remove)).toEqual(expected);
  });
});

describe('payload Secret and copies (agent)', () => {
  const marks = copyMarks({
    deliveryName: 'd1',
    origin: 'hub/ns/src',
    mirror: 'SecretMirror/ns/m',
    contentHash: 'h1',
  });

  it('payload round-trips data and binary keys', () => {
    const secret = buildPayloadSecret({
      name: 'd1',
      namespace: 'mirrorhub-system',
      deliveryName: 'd1',
      shaped: { data: { a: b64('x'), bin: 'AAE=' }, binaryKeys: ['bin'] },
    });
    expect(secret.metadata).toEqual({
      name: 'd1',
      namespace: 'mirrorhub-system',
      labels: { 'mirrorhub.io/payload': 'true', 'mirrorhub.io/delivery': 'd1' },
      annotations: { 'mirrorhub.io/binary-keys': 'bin' },
    });
    expect(readPayload(secret)).toEqual({
      data: { a: b64('x'), bin: 'AAE=' },
      binaryKeys: ['bin'],
    });
  });

  it.each([
    ['no annotation', undefined, []],
    ['spaces and empties', ' b, a ,,', ['a', 'b']],
  ])('readPayload binary keys: %s', (_, annotation, keys) => {
    const annotations: Record<string, string> =
      annotation === undefined ? {} : { 'mirrorhub.io/binary-keys': annotation };
    expect(readPayload({ metadata: { annotations }, data: {} }).binaryKeys).toEqual(keys);
  });

  it.each([
    [
      'Secret',
      {
        kind: 'Secret' as const,
        template: {
          type: 'kubernetes.io/tls',
          labels: { team: 'a', 'mirrorhub.io/delivery': 'spoof' },
          annotations: { n: '1' },
        },
        payload: { data: { 'tls.crt': b64('CRT') }, binaryKeys: [] },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: 'tls',
          namespace: 'team-a',
          labels: {
            team: 'a',
            'mirrorhub.io/managed-by': 'mirrorhub',
            'mirrorhub.io/delivery': 'd1',
          },
          annotations: { n: '1', ...marks.annotations },
        },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64('CRT') },
      },
    ],
    [
      'ConfigMap',
      {
        kind: 'ConfigMap' as const,
        template: { labels: {}, annotations: {} },
        payload: {
          data: { 'app.conf': b64('grüß\n'), 'logo.png': 'iVBORw==' },
          binaryKeys: ['logo.png'],
        },
      },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: 'tls',
          namespace: 'team-a',
          labels: marks.labels,
          annotations: marks.annotations,
        },
        data: { 'app.conf': 'grüß\n' },
        binaryData: { 'logo.png': 'iVBORw==' },
      },
    ],
  ])('renderCopy: %s (marks always win)', (_, input, expected) => {
    expect(renderCopy({ ...input, name: 'tls', namespace: 'team-a', marks })).toEqual(expected);
  });

  it('hub shaping and agent rendering agree end to end for a ConfigMap', () => {
    const source: SourceObject = { data: { 'a.txt': 'héllo' }, binaryData: { 'b.bin': 'AP8=' } };
    const shaped = shapeSource('ConfigMap', source, undefined);
    const payload = readPayload(
      buildPayloadSecret({ name: 'd1', namespace: 'ns', deliveryName: 'd1', shaped }),
    );
    const copy = renderCopy({
      kind: 'ConfigMap',
      name: 'c',
      namespace: 'x',
      payload,
      template: shaped.template,
      marks,
    });
    expect(copy).toMatchObject({ data: source.data, binaryData: source.binaryData });
  });
});
