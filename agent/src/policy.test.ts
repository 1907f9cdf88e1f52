import { describe, expect, it } from 'vitest';
import { parsePolicy, type PolicySpec } from './policy.js';

const AGENT_NS = 'mirrorhub-system';
const defaults = parsePolicy({}, AGENT_NS);

describe('parsePolicy: namespaces', () => {
  it.each<[string, PolicySpec, string, Record<string, string> | undefined, string | undefined]>([
    ['an ordinary namespace, default policy', {}, 'team-a', undefined, undefined],
    ['kube-system is always denied', {}, 'kube-system', undefined, 'namespaces.always-denied'],
    ['kube-public is always denied', {}, 'kube-public', undefined, 'namespaces.always-denied'],
    [
      'kube-node-lease is always denied',
      {},
      'kube-node-lease',
      undefined,
      'namespaces.always-denied',
    ],
    [
      "the agent's own namespace is always denied",
      {},
      AGENT_NS,
      undefined,
      'namespaces.always-denied',
    ],
    [
      'always denied even when allow names it',
      { namespaces: { allow: ['kube-.*'] } },
      'kube-system',
      undefined,
      'namespaces.always-denied',
    ],
    [
      'deny: anchored pattern',
      { namespaces: { deny: ['legacy-.*'] } },
      'legacy-1',
      undefined,
      'namespaces.deny',
    ],
    [
      'deny is anchored: a mere substring is not denied',
      { namespaces: { deny: ['legacy'] } },
      'my-legacy-1',
      undefined,
      undefined,
    ],
    [
      'allow: outside the list',
      { namespaces: { allow: ['team-.+'] } },
      'other',
      undefined,
      'namespaces.allow',
    ],
    [
      'allow: inside the list',
      { namespaces: { allow: ['team-.+'] } },
      'team-b',
      undefined,
      undefined,
    ],
    [
      'deny wins over allow',
      { namespaces: { allow: ['team-.+'], deny: ['team-x'] } },
      'team-x',
      undefined,
      'namespaces.deny',
    ],
    [
      'requireLabel key=value: missing',
      { namespaces: { requireLabel: 'mirrorhub.io/accept=true' } },
      'a',
      {},
      'namespaces.requireLabel',
    ],
    [
      'requireLabel key=value: other value',
      { namespaces: { requireLabel: 'mirrorhub.io/accept=true' } },
      'a',
      { 'mirrorhub.io/accept': 'no' },
      'namespaces.requireLabel',
    ],
    [
      'requireLabel key=value: present',
      { namespaces: { requireLabel: 'mirrorhub.io/accept=true' } },
      'a',
      { 'mirrorhub.io/accept': 'true' },
      undefined,
    ],
    [
      'requireLabel key only: any value',
      { namespaces: { requireLabel: 'tls' } },
      'a',
      { tls: '' },
      undefined,
    ],
  ])('%s', (_, spec, name, labels, rule) => {
    const denial = parsePolicy(spec, AGENT_NS).checkNamespace({ name, labels });
    expect(denial?.rule).toBe(rule);
    if (denial)
      expect(denial.message).toMatch(new RegExp(`^PolicyDenied \\(policy\\.${rule}\\): .*${name}`));
  });
});

describe('parsePolicy: the copy', () => {
  it.each<[string, PolicySpec, Parameters<typeof defaults.checkDelivery>[0], string | undefined]>([
    ['an Opaque Secret', {}, { kind: 'Secret', type: 'Opaque' }, undefined],
    ['no type means Opaque', {}, { kind: 'Secret' }, undefined],
    ['a TLS Secret', {}, { kind: 'Secret', type: 'kubernetes.io/tls' }, undefined],
    [
      'a service-account token, never',
      {},
      { kind: 'Secret', type: 'kubernetes.io/service-account-token' },
      'secretTypes',
    ],
    [
      'a service-account token, even when listed',
      { secretTypes: ['Opaque', 'kubernetes.io/service-account-token'] },
      { kind: 'Secret', type: 'kubernetes.io/service-account-token' },
      'secretTypes',
    ],
    [
      'a bootstrap token, never',
      {},
      { kind: 'Secret', type: 'bootstrap.kubernetes.io/token' },
      'secretTypes',
    ],
    [
      'a type not listed',
      { secretTypes: ['Opaque'] },
      { kind: 'Secret', type: 'kubernetes.io/tls' },
      'secretTypes',
    ],
    ['ConfigMaps have no type', { secretTypes: [] }, { kind: 'ConfigMap' }, undefined],
    [
      'a label under kubernetes.io',
      {},
      { kind: 'ConfigMap', labels: { 'kubernetes.io/metadata.name': 'x' } },
      'metadata.deniedDomains',
    ],
    [
      'an annotation under a subdomain of kubernetes.io',
      {},
      { kind: 'Secret', annotations: { 'kubernetes.io/service-account.name': 'default' } },
      'metadata.deniedDomains',
    ],
    [
      'a label under node-role.kubernetes.io',
      {},
      { kind: 'Secret', labels: { 'node-role.kubernetes.io/control-plane': '' } },
      'metadata.deniedDomains',
    ],
    [
      'a label under k8s.io',
      {},
      { kind: 'Secret', labels: { 'k8s.io/x': 'y' } },
      'metadata.deniedDomains',
    ],
    [
      'a safe-listed key',
      {},
      { kind: 'Secret', labels: { 'app.kubernetes.io/name': 'web' } },
      undefined,
    ],
    [
      'a key that merely ends like the domain',
      {},
      { kind: 'Secret', labels: { 'notkubernetes.io/x': 'y' } },
      undefined,
    ],
    [
      "cert-manager's annotations",
      {},
      { kind: 'Secret', annotations: { 'cert-manager.io/issuer-name': 'le' } },
      undefined,
    ],
    [
      'a key the owner allowed',
      { metadata: { allowedKeys: ['kubernetes.io/description'] } },
      { kind: 'Secret', annotations: { 'kubernetes.io/description': 'x' } },
      undefined,
    ],
    [
      "Helm's managed-by: the ownership list wins over allowedKeys",
      {},
      { kind: 'Secret', labels: { 'app.kubernetes.io/managed-by': 'Helm' } },
      'metadata.foreignOwnership',
    ],
    [
      "Helm's release annotation",
      {},
      { kind: 'Secret', annotations: { 'meta.helm.sh/release-name': 'db' } },
      'metadata.foreignOwnership',
    ],
    [
      "Argo CD's tracking label (allowed by allowedKeys alone)",
      {},
      { kind: 'ConfigMap', labels: { 'app.kubernetes.io/instance': 'myapp' } },
      'metadata.foreignOwnership',
    ],
    [
      "Argo CD's tracking annotation",
      {},
      { kind: 'Secret', annotations: { 'argocd.argoproj.io/tracking-id': 'myapp:/Secret:a/b' } },
      'metadata.foreignOwnership',
    ],
    [
      'an ownership key under a denied domain: the ownership rule is named',
      {},
      { kind: 'Secret', labels: { 'applyset.kubernetes.io/part-of': 'applyset-x' } },
      'metadata.foreignOwnership',
    ],
    [
      'ownership annotation before a denied-domain label',
      {},
      {
        kind: 'Secret',
        labels: { 'k8s.io/x': 'y' },
        annotations: { 'kubed.appscode.com/sync': '' },
      },
      'metadata.foreignOwnership',
    ],
    [
      "the owner took Argo CD's label out of the list: allowedKeys lets it through",
      { metadata: { foreignOwnership: ['argocd.argoproj.io/tracking-id'] } },
      { kind: 'Secret', labels: { 'app.kubernetes.io/instance': 'myapp' } },
      undefined,
    ],
    [
      'an owner who empties the list',
      { metadata: { foreignOwnership: [] } },
      { kind: 'Secret', annotations: { 'meta.helm.sh/release-name': 'db' } },
      undefined,
    ],
    [
      "an owner's own ownership key",
      { metadata: { foreignOwnership: ['example.com/owner', 'tool.example.com/*'] } },
      { kind: 'Secret', labels: { 'tool.example.com/app': 'x' } },
      'metadata.foreignOwnership',
    ],
    [
      "mirrorhub's own marks, even if a pattern covers them",
      { metadata: { foreignOwnership: ['mirrorhub.io/*'] } },
      { kind: 'Secret', labels: { 'mirrorhub.io/managed-by': 'mirrorhub' } },
      undefined,
    ],
  ])('%s', (_, spec, copy, rule) => {
    expect(parsePolicy(spec, AGENT_NS).checkDelivery(copy)?.rule).toBe(rule);
  });

  it('says how to get past a denied key', () => {
    expect(defaults.checkDelivery({ kind: 'Secret', labels: { 'k8s.io/x': '' } })?.message).toBe(
      'PolicyDenied (policy.metadata.deniedDomains): label k8s.io/x is under k8s.io, which copies may not carry here (drop it with template.removeLabels, or ask the cluster owner to add it to policy.metadata.allowedKeys)',
    );
  });

  it('says whose mark a refused key is, and how to get past it', () => {
    expect(
      defaults.checkDelivery({ kind: 'Secret', labels: { 'app.kubernetes.io/managed-by': 'Helm' } })
        ?.message,
    ).toBe(
      'PolicyDenied (policy.metadata.foreignOwnership): label app.kubernetes.io/managed-by is another controller\'s ownership or tracking mark (Helm, kustomize, ClusterSecret and others: names the tool that manages the object; Helm adopts an existing object whose value is Helm. A copy is managed by mirrorhub), which copies never carry here (drop it: template.labels adds it, template.removeLabels drops a source\'s; or ask the cluster owner to take "app.kubernetes.io/managed-by" out of policy.metadata.foreignOwnership)',
    );
    expect(
      parsePolicy(
        { metadata: { foreignOwnership: ['tool.example.com/*'] } },
        AGENT_NS,
      ).checkDelivery({ kind: 'Secret', annotations: { 'tool.example.com/app': 'x' } })?.message,
    ).toMatch(
      /^PolicyDenied \(policy.metadata.foreignOwnership\): annotation tool.example.com\/app .*\(it matches "tool.example.com\/\*"\).*template.removeAnnotations/,
    );
  });

  it('refuses Adopt unless the owner allows it', () => {
    expect(defaults.allowAdopt).toBe(false);
    expect(defaults.adoptDenied().rule).toBe('allowAdopt');
    expect(parsePolicy({ allowAdopt: true }, AGENT_NS).allowAdopt).toBe(true);
  });

  it('takes over predecessor copies unless the owner turns it off', () => {
    expect(defaults.takeOver).toBe(true);
    const off = parsePolicy({ takeOver: false }, AGENT_NS);
    expect(off.takeOver).toBe(false);
    expect(off.summary['takeOver']).toBe(false);
    expect(off.takeOverOff('Secret a/b is a copy kubed made')).toMatch(
      /^Secret a\/b is a copy kubed made; .*turned takeover off \(policy\.takeOver: false\)/,
    );
  });
});

describe('parsePolicy: bad configuration', () => {
  it.each<[string, unknown, RegExp]>([
    [
      'a pattern that does not compile',
      { namespaces: { deny: ['ok', 'team-('] } },
      /policy\.namespaces\.deny\[1\]: invalid regular expression "team-\("/,
    ],
    [
      'a list that is not a list',
      { secretTypes: 'Opaque' },
      /policy\.secretTypes must be a list of non-empty strings/,
    ],
    ['allowAdopt not a boolean', { allowAdopt: 'yes' }, /policy\.allowAdopt must be true or false/],
    ['takeOver not a boolean', { takeOver: 'no' }, /policy\.takeOver must be true or false/],
    ['an unknown field', { allowAdpot: true }, /policy\.allowAdpot is not a field/],
    [
      'an ownership pattern with * inside',
      { metadata: { foreignOwnership: ['meta.helm.sh/*', 'a/*/b'] } },
      /policy\.metadata\.foreignOwnership\[1\]: "a\/\*\/b" has a \* before its end/,
    ],
    [
      'an ownership list that is not a list',
      { metadata: { foreignOwnership: 'meta.helm.sh/*' } },
      /policy\.metadata\.foreignOwnership must be a list of non-empty strings/,
    ],
    [
      'requireLabel without a key',
      { namespaces: { requireLabel: '=true' } },
      /requireLabel "=true" has no key/,
    ],
  ])('%s', (_, spec, message) => {
    expect(() => parsePolicy(spec, AGENT_NS)).toThrow(message);
  });
});
