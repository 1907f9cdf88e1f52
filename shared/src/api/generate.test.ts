import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { generateApi } from './generate.js';
import { CRD_SCHEMA_KEYS, type Schema } from './openapi.js';
import { KINDS } from './schema.js';
import { LIMITS } from './types.gen.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const generated = generateApi();
const crdFiles = generated.filter((f) => f.path.endsWith('.yaml'));

type Node = Record<string, unknown>;

describe('generated API files', () => {
  it.each(generated.map((f) => [f.path, f.content] as const))(
    '%s matches the schema',
    (path, content) => {
      let committed: string | undefined;
      try {
        committed = readFileSync(join(root, path), 'utf8');
      } catch {
        committed = undefined;
      }
      expect(committed, `${path} is missing: run \`pnpm gen\``).toBeDefined();
      expect(committed === content, `${path} differs from schema.ts: run \`pnpm gen\``).toBe(true);
    },
  );

  it('no stale mirrorhub CRD is left in the charts', () => {
    const expected = new Set(crdFiles.map((f) => f.path));
    const charts = readdirSync(join(root, 'charts'));
    const onDisk = charts.flatMap((chart) => {
      let files: string[] = [];
      try {
        files = readdirSync(join(root, 'charts', chart, 'crds'));
      } catch {
        // a chart without crds/
      }
      return files
        .filter((f) => f.startsWith('mirrorhub.io_'))
        .map((f) => `charts/${chart}/crds/${f}`);
    });
    expect(
      onDisk.filter((p) => !expected.has(p)),
      'stale CRDs: run `pnpm gen`',
    ).toEqual([]);
  });
});

/** Problems that make a schema non-structural (or unexplained), with their paths. */
function structuralProblems(node: Node, path: string, inList = false): string[] {
  const problems: string[] = [];
  const preserve = node['x-kubernetes-preserve-unknown-fields'] === true;
  for (const key of Object.keys(node)) {
    if (!(CRD_SCHEMA_KEYS as readonly string[]).includes(key)) {
      problems.push(`${path}: unknown key ${key}`);
    }
  }
  if (typeof node.type !== 'string' && !preserve) problems.push(`${path}: no type`);
  if (node.properties && node.additionalProperties && !preserve) {
    problems.push(`${path}: both properties and additionalProperties`);
  }
  if (node.type === 'array' && !node.items) problems.push(`${path}: array without items`);
  const rootMetadata = path === '.metadata'; // the API server owns its schema
  if (
    node.type === 'object' &&
    !node.properties &&
    !node.additionalProperties &&
    !preserve &&
    !rootMetadata
  ) {
    problems.push(`${path}: object without properties, additionalProperties or preserve`);
  }
  if (!inList && !rootMetadata && typeof node.description !== 'string') {
    problems.push(`${path}: no description (kubectl explain)`);
  }
  if (node['x-kubernetes-list-type'] === 'map') {
    const items = node.items as Node;
    const required = (items.required as string[] | undefined) ?? [];
    for (const key of (node['x-kubernetes-list-map-keys'] as string[] | undefined) ?? []) {
      if (!required.includes(key)) problems.push(`${path}: list map key ${key} is not required`);
    }
  }
  for (const [name, child] of Object.entries((node.properties as Node | undefined) ?? {})) {
    problems.push(...structuralProblems(child as Node, `${path}.${name}`));
  }
  if (node.items) problems.push(...structuralProblems(node.items as Node, `${path}[]`, true));
  if (node.additionalProperties) {
    problems.push(...structuralProblems(node.additionalProperties as Node, `${path}{}`, true));
  }
  return problems;
}

function crdOf(suffix: string): Node {
  return parse(crdFiles.find((f) => f.path.endsWith(suffix))!.content) as Node;
}

function version(crd: Node): Node {
  return ((crd.spec as Node).versions as Node[])[0]!;
}

/** The schema node at a dotted path ("spec.a.b[]" steps into items) in a CRD. */
function schemaAt(plural: string, path: string): Node {
  let node = (version(crdOf(`_${plural}.yaml`)).schema as Node).openAPIV3Schema as Node;
  for (const part of path.split('.')) {
    const items = part.endsWith('[]');
    node = (node.properties as Node)[items ? part.slice(0, -2) : part] as Node;
    if (items) node = node.items as Node;
  }
  return node;
}

describe('CRDs', () => {
  it.each(crdFiles.map((f) => [f.path, f.content] as const))('%s is structural', (_, content) => {
    const crd = parse(content) as Node;
    const v = version(crd);
    const schema = (v.schema as Node).openAPIV3Schema as Node;
    expect(structuralProblems(schema, '')).toEqual([]);
    expect(v.subresources).toEqual({ status: {} });
    expect((crd.spec as Node).names).toMatchObject({ categories: ['mirrorhub'] });
  });

  const MIRROR_COLUMNS = [
    ['SOURCE TYPE', 'string', '.spec.source.kind'],
    ['SOURCE NAME', 'string', '.status.source'],
    ['DESTINATION', 'string', '.status.destination'],
    ['DELETE POLICY', 'string', '.spec.deletePolicy'],
    ['POLL PERIOD', 'integer', '.spec.pollPeriodSeconds'],
    ['STATUS', 'string', '.status.phase'],
    ['SYNCED', 'string', '.status.synced'],
    ['LAST SYNC', 'date', '.status.lastSyncTime'],
    ['AGE', 'date', '.metadata.creationTimestamp'],
  ];
  it.each([
    ['secretmirrors', ['smir'], MIRROR_COLUMNS],
    ['clustersecretmirrors', ['csmir'], MIRROR_COLUMNS],
    [
      'mirrorclusters',
      ['mcl'],
      [
        ['TYPE', 'string', '.status.type'],
        ['REACHABLE', 'boolean', '.status.reachable'],
        ['AGENT', 'string', '.status.agent.version'],
        ['LAST HEARTBEAT', 'date', '.status.agent.lastHeartbeat'],
        ['AGE', 'date', '.metadata.creationTimestamp'],
      ],
    ],
    [
      'mirrordeliveries',
      ['mdel'],
      [
        ['MIRROR', 'string', '.spec.mirror.name'],
        ['PHASE', 'string', '.status.phase'],
        ['SYNCED', 'integer', '.status.counts.synced'],
        ['AGE', 'date', '.metadata.creationTimestamp'],
      ],
    ],
  ])('%s: short names and printer columns', (plural, shortNames, columns) => {
    const crd = crdOf(`_${plural}.yaml`);
    expect((crd.spec as Node).names).toMatchObject({ plural, shortNames });
    const actual = (version(crd).additionalPrinterColumns as Node[]).map((c) => [
      String(c.name).toUpperCase(),
      c.type,
      c.jsonPath,
    ]);
    expect(actual).toEqual(columns);
    // Every column points at a field the schema declares.
    const schema = (version(crd).schema as Node).openAPIV3Schema as Node;
    for (const [, , jsonPath] of columns as string[][]) {
      if (jsonPath!.startsWith('.metadata.')) continue;
      let node: Node | undefined = schema;
      for (const part of jsonPath!.slice(1).split('.')) {
        node = (node?.properties as Node | undefined)?.[part] as Node | undefined;
      }
      expect(node, `${plural}: ${jsonPath} is not in the schema`).toBeDefined();
    }
  });

  // Behaviour of these rules was checked against a real kube-apiserver; here we only make sure
  // they stay where they belong.
  it.each([
    ['clustersecretmirrors', 'spec', 'has(self.source.namespace)'],
    ['secretmirrors', 'spec.destination', 'has(self.namespaceSelector)'],
    ['mirrordeliveries', 'spec', 'has(self.namespaceSelector)'],
    ['mirrorclusters', 'spec', '(has(self.eks) ? 1 : 0) + (has(self.kubeconfigSecretRef) ? 1 : 0)'],
    ['secretmirrors', 'spec.template.keys', 'self.exists_one(j, j.from == k.from)'],
    ['secretmirrors', 'spec.template.labels', "!k.startsWith('mirrorhub.io/')"],
    [
      'secretmirrors',
      'spec.destination.namespaceSelector.matchExpressions[]',
      "self.operator in ['In', 'NotIn']",
    ],
  ])('%s: %s has the CEL rule %s', (plural, path, rule) => {
    const rules = schemaAt(plural, path)['x-kubernetes-validations'] as { rule: string }[];
    expect(rules.map((r) => r.rule).join('\n')).toContain(rule);
  });

  it.each([
    ['arn:aws:iam::123456789012:role/mirrorhub-agent', true],
    ['arn:aws-cn:iam::123456789012:role/path/to/role', true],
    ['arn:aws-us-gov:iam::123456789012:role/x', true],
    ['arn:aws:iam::123456789012:user/alice', false],
    ['arn:aws:iam::1234:role/x', false],
    ['arn:aws:iam::123456789012:role/', false],
  ])('eks.roleArn pattern: %s -> %s', (arn, ok) => {
    const pattern = schemaAt('mirrorclusters', 'spec.eks.roleArn').pattern as string;
    expect(new RegExp(pattern).test(arn)).toBe(ok);
  });

  it('MirrorDelivery is in both charts, generated from the same schema', () => {
    const deliveries = crdFiles.filter((f) => f.path.endsWith('_mirrordeliveries.yaml'));
    expect(deliveries.map((f) => f.path).sort()).toEqual([
      'charts/mirrorhub-agent/crds/mirrorhub.io_mirrordeliveries.yaml',
      'charts/mirrorhub-hub/crds/mirrorhub.io_mirrordeliveries.yaml',
    ]);
    expect(deliveries[0]!.content).toBe(deliveries[1]!.content);
  });

  it.each([
    ['SecretMirrorSpec', 'deletePolicy', 'Delete'],
    ['SecretMirrorSpec', 'conflictPolicy', 'Skip'],
    ['SecretMirrorSpec', 'pollPeriodSeconds', 300],
    ['SecretMirrorSpec', 'suspend', false],
    ['ClusterSecretMirrorSpec', 'pollPeriodSeconds', 300],
    ['MirrorClusterSpec', 'agentNamespace', 'mirrorhub-system'],
  ])('%s.%s defaults to %s', (tsType, field, value) => {
    const spec = KINDS.find((k) => k.spec.tsType === tsType)!.spec;
    expect(spec.properties?.[field]?.default).toEqual(value);
  });
});

/**
 * Every bounded field of every named type, as the CRD states it (what the API server enforces):
 * `Type.field` -> [CRD path, maxLength of a string, maxItems of a list, maxProperties of a map].
 */
function crdBounds(): Map<string, [string, number]> {
  const bounds = new Map<string, [string, number]>();
  const walk = (node: Schema, crd: Node, path: string): void => {
    for (const [prop, child] of Object.entries(node.properties ?? {})) {
      const crdChild = (crd.properties as Node)[prop] as Node;
      const at = `${path}.${prop}`;
      const bound =
        crdChild.type === 'string'
          ? crdChild.maxLength
          : crdChild.type === 'array'
            ? crdChild.maxItems
            : crdChild.properties
              ? undefined
              : crdChild.maxProperties;
      if (node.tsType && typeof bound === 'number') {
        const key = `${node.tsType}.${prop}`;
        const seen = bounds.get(key);
        if (seen && seen[1] !== bound) throw new Error(`${key}: ${seen[0]} and ${at} differ`);
        if (!seen) bounds.set(key, [at, bound]);
      }
      walk(child, crdChild, at);
    }
    if (node.items) walk(node.items, crd.items as Node, `${path}[]`);
  };
  for (const kind of KINDS) {
    const schema = (version(crdOf(`_${kind.plural}.yaml`)).schema as Node).openAPIV3Schema as Node;
    const props = schema.properties as Node;
    walk(kind.spec, props.spec as Node, `${kind.plural}.spec`);
    walk(kind.status, props.status as Node, `${kind.plural}.status`);
  }
  return bounds;
}

describe('LIMITS', () => {
  const bounds = crdBounds();
  const limits = LIMITS as unknown as Record<string, Record<string, number>>;

  it.each([...bounds].map(([key, [path, bound]]) => [key, path, bound] as const))(
    'LIMITS.%s is the bound of %s (%s)',
    (key, _path, bound) => {
      const [type, field] = key.split('.') as [string, string];
      expect(limits[type]?.[field]).toBe(bound);
    },
  );

  it('holds nothing the CRDs do not bound', () => {
    const listed = Object.entries(limits).flatMap(([type, fields]) =>
      Object.keys(fields).map((field) => `${type}.${field}`),
    );
    expect(listed.filter((key) => !bounds.has(key))).toEqual([]);
  });

  it('SecretMirror and ClusterSecretMirror share status limits (the mirror plan cuts both alike)', () => {
    expect(LIMITS.ClusterSecretMirrorStatus).toEqual(LIMITS.SecretMirrorStatus);
  });
});
