import { describe, expect, it } from 'vitest';
import { parseYaml } from '@mirrorhub/shared/kit/k8s/yaml';
import { fileName, toYaml, toYamlStream } from './render.js';

describe('toYaml', () => {
  // Whatever the converter emits reads back as exactly that object.
  it.each<[string, Record<string, unknown>]>([
    [
      'scalars a YAML reader would retype',
      { a: 'true', b: 'no', c: '1', d: '1e3', e: 'null', f: '~', g: '' },
    ],
    [
      'YAML syntax in strings',
      { a: 'a: b', b: '#x', c: '- x', d: '*x', e: '&x', f: '{x}', g: "it's", h: 'x\ny' },
    ],
    [
      'regular expressions',
      { namespaces: ['team-.*', '.*(?:team).*', '(?:a|b).*', '^x$', 'kube\\-system'] },
    ],
    ['base64 and dotted keys', { data: { '.dockerconfigjson': 'e30=', 'tls.crt': 'YQ==' } }],
    [
      'nesting',
      {
        spec: { keys: [{ from: 'a', to: 'b' }, { from: 'c' }], empty: {}, none: [], n: 2, t: true },
      },
    ],
    ['label keys', { labels: { 'app.kubernetes.io/name': 'x', 'example.com/a': 'b' } }],
  ])('%s', (_, obj) => {
    expect(parseYaml(toYaml(obj))).toEqual(obj);
  });

  it('writes a stream of documents and names files by kind, namespace and name', () => {
    const a = { kind: 'SecretMirror', metadata: { name: 'x', namespace: 'ns' } };
    const b = { kind: 'ClusterSecretMirror', metadata: { name: 'y' } };
    expect(toYamlStream([a, b]).split('---\n')).toHaveLength(3);
    expect([fileName(a), fileName(b)]).toEqual([
      'secretmirror-ns-x.yaml',
      'clustersecretmirror-y.yaml',
    ]);
  });
});
