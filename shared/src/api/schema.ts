// The single source of truth for mirrorhub's API (group mirrorhub.io, version v1alpha1).
//
// `pnpm gen` turns these definitions into shared/src/api/types.gen.ts (TypeScript) and the CRD
// YAML under charts/*/crds/. generate.test.ts fails when either drifts from this file.
//
// Sub-schemas (label selectors, namespace selection, template, conditions, ...) are built once
// and shared by every kind that uses them, so SecretMirror and ClusterSecretMirror cannot drift.
// What a schema can say is refused at apply time (enums, bounds, patterns, CEL); what only code
// can judge (does a regex compile?) is reported in status by the controllers.

import { RESERVED_PREFIX } from './contract.js';
import type { Schema, ValidationRule } from './openapi.js';

export const GROUP = 'mirrorhub.io';
export const VERSION = 'v1alpha1';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description: string;
  /** 0 (default) shows in `kubectl get`; 1 only in `kubectl get -o wide`. */
  priority?: number;
}

export interface KindDefinition {
  kind: string;
  listKind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  categories: string[];
  scope: 'Namespaced' | 'Cluster';
  description: string;
  spec: Schema;
  status: Schema;
  printerColumns: PrinterColumn[];
  /** Charts whose crds/ directory carries this CRD (`charts/<chart>/crds/`). */
  charts: string[];
}

// ---------------------------------------------------------------------------------------------
// Small builders. They only fill in `type`; every field still states its own description.

const string = (description: string, extra: Partial<Schema> = {}): Schema => ({
  type: 'string',
  description,
  ...extra,
});
const integer = (description: string, extra: Partial<Schema> = {}): Schema => ({
  type: 'integer',
  description,
  ...extra,
});
const boolean = (description: string, extra: Partial<Schema> = {}): Schema => ({
  type: 'boolean',
  description,
  ...extra,
});
const dateTime = (description: string): Schema => ({
  type: 'string',
  format: 'date-time',
  description,
});
const array = (description: string, items: Schema, extra: Partial<Schema> = {}): Schema => ({
  type: 'array',
  description,
  items,
  ...extra,
});
const object = (
  tsType: string,
  description: string,
  properties: Record<string, Schema>,
  extra: Partial<Schema> = {},
): Schema => ({ type: 'object', tsType, description, properties, ...extra });
const stringMap = (description: string, extra: Partial<Schema> = {}): Schema => ({
  type: 'object',
  description,
  additionalProperties: { type: 'string' },
  ...extra,
});
const stringEnum = (
  tsType: string,
  description: string,
  values: string[],
  extra: Partial<Schema> = {},
): Schema => ({
  type: 'string',
  tsType,
  description,
  enum: values,
  ...extra,
});

// ---------------------------------------------------------------------------------------------
// Patterns (Go RE2 syntax, as the API server evaluates them; always anchored).

/** RFC 1123 subdomain: object names of Secrets and ConfigMaps. */
export const DNS1123_SUBDOMAIN =
  '^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
/** RFC 1123 label: namespace names. */
export const DNS1123_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** Keys of Secret.data / ConfigMap.data. */
export const DATA_KEY = '^[-._a-zA-Z0-9]+$';
/** Label and annotation keys: optional DNS prefix and slash, then a name of at most 63 chars. */
export const QUALIFIED_NAME =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';
/** Label values: empty, or at most 63 alphanumerics with -_. inside. */
export const LABEL_VALUE = '^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$';
/** IAM role ARN in any partition (aws, aws-cn, aws-us-gov, ...). */
export const ROLE_ARN = '^arn:aws(-[a-z]+)*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$';

// ---------------------------------------------------------------------------------------------
// Shared sub-schemas.

const labelSelectorRequirement = object(
  'LabelSelectorRequirement',
  'A selector requirement: a key, an operator and (for In and NotIn) a set of values.',
  {
    key: string('The label key the requirement applies to.', { minLength: 1, maxLength: 317 }),
    operator: stringEnum(
      'LabelSelectorOperator',
      "How the key relates to the values: In and NotIn compare the label's value with values; " +
        'Exists and DoesNotExist only look at whether the key is present.',
      ['In', 'NotIn', 'Exists', 'DoesNotExist'],
    ),
    values: array(
      'Values to compare with. Must be non-empty for In and NotIn, and empty for Exists and DoesNotExist.',
      string('A label value.', { maxLength: 63 }),
      { maxItems: 64 },
    ),
  },
  {
    required: ['key', 'operator'],
    'x-kubernetes-validations': [
      {
        rule:
          "self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) " +
          ': (!has(self.values) || size(self.values) == 0)',
        message: 'values must be non-empty for In and NotIn, and empty for Exists and DoesNotExist',
      },
    ],
  },
);

const labelSelector = (description: string): Schema =>
  object(
    'LabelSelector',
    description +
      ' Kubernetes label selector semantics: matchLabels and every matchExpressions entry must all ' +
      'hold; an empty selector ({}) matches everything.',
    {
      matchLabels: stringMap(
        'Labels that must be present with exactly these values (each entry is an In requirement with one value).',
        { maxProperties: 64 },
      ),
      matchExpressions: array('Requirements that must all hold.', labelSelectorRequirement, {
        maxItems: 32,
      }),
    },
    {
      tsDescription:
        'A Kubernetes label selector: matchLabels and every matchExpressions entry must all hold; ' +
        'an empty selector ({}) matches everything.',
      'x-kubernetes-map-type': 'atomic',
    },
  );

const namespacePatterns = (description: string): Schema =>
  array(
    description,
    string(
      'A regular expression (RE2 syntax) matched against the whole namespace name: "project-a-.+" ' +
        'behaves like ^(?:project-a-.+)$. A pattern that does not compile puts the mirror in phase Error.',
      { minLength: 1, maxLength: 253 },
    ),
    { maxItems: 64 },
  );

const NAMESPACE_SELECTION_RULE: ValidationRule = {
  rule: '(has(self.namespaces) && size(self.namespaces) > 0) || has(self.namespaceSelector)',
  message: 'set namespaces or namespaceSelector (or both)',
};

/**
 * Which namespaces get a copy. Shared by the mirrors' destination and MirrorDelivery.spec.
 * Semantics: a namespace is selected when it matches any pattern in `namespaces` OR the
 * `namespaceSelector`, and no pattern in `excludeNamespaces`.
 */
const namespaceSelectionProperties = (): Record<string, Schema> => ({
  namespaces: namespacePatterns(
    'Namespaces that get a copy, as anchored regular expressions. A namespace is selected when it ' +
      'matches any of these patterns OR the namespaceSelector (the union of both), and none of ' +
      'excludeNamespaces.',
  ),
  namespaceSelector: labelSelector(
    'Selects namespaces by their labels, in addition to (union with) the namespaces patterns.',
  ),
  excludeNamespaces: namespacePatterns(
    'Namespaces that never get a copy, as anchored regular expressions. Exclusions win over ' +
      'namespaces and namespaceSelector.',
  ),
});

const secretType = (description: string): Schema =>
  string(description, { minLength: 1, maxLength: 253 });

const labelsMap = (description: string): Schema =>
  stringMap(description, {
    additionalProperties: { type: 'string', maxLength: 63 },
    maxProperties: 64,
    'x-kubernetes-validations': [
      {
        rule: `self.all(k, !k.startsWith('${RESERVED_PREFIX}'))`,
        message: `keys under ${RESERVED_PREFIX} are reserved for mirrorhub's own marks`,
      },
      {
        rule: `self.all(k, k.matches('${QUALIFIED_NAME}'))`,
        message:
          'label keys must be qualified names: an optional DNS prefix and "/", then at most 63 characters',
      },
      {
        rule: `self.all(k, self[k].matches('${LABEL_VALUE}'))`,
        message:
          'label values must be at most 63 characters: alphanumerics, with -, _ and . inside',
      },
    ],
  });

const annotationsMap = (description: string): Schema =>
  stringMap(description, {
    maxProperties: 64,
    'x-kubernetes-validations': [
      {
        rule: `self.all(k, !k.startsWith('${RESERVED_PREFIX}'))`,
        message: `keys under ${RESERVED_PREFIX} are reserved for mirrorhub's own marks`,
      },
      {
        rule: `self.all(k, k.matches('${QUALIFIED_NAME}'))`,
        message:
          'annotation keys must be qualified names: an optional DNS prefix and "/", then at most 63 characters',
      },
    ],
  });

const keyMapping = object(
  'KeyMapping',
  'One key to copy from the source, optionally under another name.',
  {
    from: string('Key in the source data (data or binaryData for a ConfigMap).', {
      minLength: 1,
      maxLength: 253,
      pattern: DATA_KEY,
    }),
    to: string('Key in the copy. Default: the same as from.', {
      minLength: 1,
      maxLength: 253,
      pattern: DATA_KEY,
    }),
  },
  { required: ['from'] },
);

const mirrorTemplate = object(
  'MirrorTemplate',
  'Shapes the copy: Secret type, labels, annotations and which keys are carried. Source labels and ' +
    'annotations are copied except kubectl.kubernetes.io/last-applied-configuration and anything ' +
    'under mirrorhub.io/.',
  {
    type: secretType(
      'Overrides the Secret type of the copy (e.g. kubernetes.io/tls, Opaque). Ignored for ConfigMaps. ' +
        'Kubernetes does not allow changing the type of an existing Secret, so a copy whose type ' +
        'changes is replaced.',
    ),
    labels: labelsMap('Labels added to the copy, overriding source labels with the same key.'),
    annotations: annotationsMap(
      'Annotations added to the copy, overriding source annotations with the same key.',
    ),
    removeLabels: array(
      'Source labels not to copy: exact keys, or a prefix ending in "*" (e.g. "example.com/*").',
      string('A label key, or a key prefix followed by "*".', { minLength: 1, maxLength: 317 }),
      { maxItems: 64 },
    ),
    removeAnnotations: array(
      'Source annotations not to copy: exact keys, or a prefix ending in "*" (e.g. "cert-manager.io/*").',
      string('An annotation key, or a key prefix followed by "*".', {
        minLength: 1,
        maxLength: 317,
      }),
      { maxItems: 64 },
    ),
    keys: array(
      'If set, only these keys are copied (and renamed where "to" is set). A key missing from the ' +
        'source is reported as a warning in status; the others are still copied.',
      keyMapping,
      {
        minItems: 1,
        maxItems: 64,
        'x-kubernetes-validations': [
          {
            rule: 'self.all(k, self.exists_one(j, j.from == k.from))',
            message: 'each key may be listed once in from',
          },
          {
            rule: 'self.all(k, self.exists_one(j, (has(j.to) ? j.to : j.from) == (has(k.to) ? k.to : k.from)))',
            message: 'two keys would be written under the same name in the copy',
          },
        ],
      },
    ),
  },
);

const deliveryTemplate = object(
  'DeliveryTemplate',
  'Final metadata of every copy, computed by the hub (source metadata with the mirror template ' +
    'applied). Keys are already selected and renamed in the payload Secret.',
  {
    type: secretType('Secret type of the copy. Ignored when target.kind is ConfigMap.'),
    labels: stringMap('Labels of the copy, besides the mirrorhub.io/ marks the agent adds.', {
      maxProperties: 256,
    }),
    annotations: stringMap(
      'Annotations of the copy, besides the mirrorhub.io/ marks the agent adds.',
      { maxProperties: 256 },
    ),
  },
);

const deletePolicy = stringEnum(
  'DeletePolicy',
  'What happens to the copies when the mirror is deleted or a namespace or cluster stops being ' +
    'selected: Delete removes the copies mirrorhub owns; Retain leaves them in place (unmarked ' +
    'objects are never touched either way).',
  ['Delete', 'Retain'],
  { default: 'Delete' },
);

const conflictPolicy = stringEnum(
  'ConflictPolicy',
  'What happens when the target name is already taken by an object mirrorhub does not own: Skip ' +
    'leaves it alone and reports a Conflict; Adopt takes it over (overwrites it and manages it).',
  ['Skip', 'Adopt'],
  { default: 'Skip' },
);

const suspend = boolean(
  'Pauses syncing: nothing is written or deleted while true. Status keeps its last values.',
  { default: false },
);

const targetKind = stringEnum('SourceKind', 'Kind of the source object (and of every copy).', [
  'Secret',
  'ConfigMap',
]);

const conditions = array(
  'Latest observations of the object, in the standard metav1.Condition form.',
  object(
    'Condition',
    'One aspect of the current state (metav1.Condition).',
    {
      type: string('Condition type in CamelCase, e.g. Ready.', {
        maxLength: 316,
        pattern:
          '^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
      }),
      status: stringEnum('ConditionStatus', 'True, False or Unknown.', [
        'True',
        'False',
        'Unknown',
      ]),
      observedGeneration: integer('metadata.generation the condition was set for.', {
        format: 'int64',
        minimum: 0,
      }),
      lastTransitionTime: dateTime('When status last changed.'),
      reason: string('Machine-readable CamelCase reason for the last transition.', {
        minLength: 1,
        maxLength: 1024,
        pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
      }),
      message: string('Human-readable details. May be empty.', { maxLength: 32768 }),
    },
    { required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'] },
  ),
  { maxItems: 16, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] },
);

/**
 * A kind's conditions, described with the ones it writes: Ready, Reconciling and Stalled as
 * kstatus, Flux and `kubectl wait` read them (docs/gitops.md, "Conditions"), then `others`.
 */
const conditionsOf = (others: string): Schema => ({
  ...conditions,
  description:
    'Latest observations of the object (metav1.Condition), each with observedGeneration. ' +
    'Ready: True when the current generation is fully applied and healthy; False with a reason ' +
    'otherwise. Reconciling: True while a change is rolled out or a retry is expected to succeed ' +
    '(reason: what it waits for). Stalled: True when no retry can succeed without a change to ' +
    'the spec, a policy or permissions (reason: the terminal reason, listed in docs/gitops.md). ' +
    'Reconciling and Stalled are absent otherwise and never both True.' +
    (others ? ` ${others}` : ''),
});

const phase = (description: string): Schema =>
  stringEnum('MirrorPhase', description, ['Pending', 'Active', 'Degraded', 'Error'], {
    tsDescription: 'Phase of a mirror, of a mirror in one cluster, or of a delivery.',
  });

const observedGeneration = integer('metadata.generation of the spec this status describes.', {
  format: 'int64',
  minimum: 0,
});

const count = (description: string): Schema =>
  integer(description, { format: 'int32', minimum: 0 });

// ---------------------------------------------------------------------------------------------
// SecretMirror / ClusterSecretMirror

const mirrorSourceKind = stringEnum(
  'MirrorSourceKind',
  'Kind of the source: a Secret or ConfigMap in the hub cluster, or a secret in Vault / OpenBao ' +
    '(KV v1 or v2, through a VaultConnection or ClusterVaultConnection). A Vault source is always ' +
    'copied as a Secret.',
  ['Secret', 'ConfigMap', 'Vault'],
);

const vaultConnectionRef = object(
  'VaultConnectionReference',
  "Which connection reads the Vault source: a VaultConnection in the mirror's own namespace, or a " +
    "ClusterVaultConnection (for a SecretMirror only if it lists the mirror's namespace in " +
    'spec.allowedNamespaces and grants the path in spec.tenantPaths).',
  {
    kind: stringEnum('VaultConnectionKind', 'VaultConnection or ClusterVaultConnection.', [
      'VaultConnection',
      'ClusterVaultConnection',
    ]),
    name: string('Name of the connection.', {
      minLength: 1,
      maxLength: 253,
      pattern: DNS1123_SUBDOMAIN,
    }),
  },
  { required: ['kind', 'name'] },
);

/** Where a Vault secret is: shared by a mirror's Vault source and its Vault destination. */
const vaultPathProperties = (what: string): Record<string, Schema> => ({
  path: string(
    `Logical path of the ${what} as <mount>/<secret path>, e.g. secret/team-a/db (no data/ ` +
      'segment for KV v2).',
    { minLength: 1, maxLength: 512, pattern: '^[^/].*[^/]$|^[^/]$' },
  ),
  kvVersion: integer(
    "KV version of the mount (1 or 2). Default: detected from the mount's options.",
    { format: 'int32', minimum: 1, maximum: 2 },
  ),
});

/**
 * How a Kubernetes Secret's values are stored in a Vault KV secret: mirrorhub's plain text, or
 * KTS mirrors' encoding, so a fleet that still runs KTS on some clusters reads and writes the same
 * secrets during a cluster-by-cluster migration.
 */
const vaultEncoding = (description: string): Schema =>
  stringEnum('VaultValueEncoding', description, ['Plain', 'Base64']);

const vaultDynamic = object(
  'VaultDynamicSource',
  "The path issues leased credentials (the database secrets engine's <mount>/creds/<role>, or any " +
    'engine whose response carries a lease): the hub reads it once, then at every poll renews ' +
    'the lease instead of asking for new credentials, so the copies stay the same. When renewal ' +
    'cannot keep the lease beyond revokeGraceSeconds + two poll periods (max TTL reached, or a ' +
    'lease that is not renewable), it reads new credentials, delivers them everywhere and ' +
    'revokes the old lease revokeGraceSeconds later. Deleting the mirror with deletePolicy ' +
    "Delete revokes its lease. The lease id is kept in the hub's own Secret mirrorhub-leases, " +
    'never in a custom resource.',
  {
    method: stringEnum(
      'VaultDynamicMethod',
      'HTTP method of the read that issues credentials (most engines: GET).',
      ['GET', 'POST'],
      { default: 'GET' },
    ),
    renewIncrementSeconds: integer(
      'Lease extension asked at each renewal (Vault may grant less, up to the max TTL).',
      { format: 'int32', minimum: 60, maximum: 31536000, default: 3600 },
    ),
    revokeGraceSeconds: integer(
      'After a rotation, how long the old credentials stay valid before they are revoked, so ' +
        'workloads can pick up the new ones.',
      { format: 'int32', minimum: 0, maximum: 86400, default: 300 },
    ),
  },
);

const vaultSource = object(
  'VaultSource',
  'A secret in Vault / OpenBao, polled every pollPeriodSeconds (jittered). KV v2: each poll ' +
    'reads only the metadata (current version), the data only when the version changed. ' +
    'dynamic: leased credentials, renewed at each poll.',
  {
    connectionRef: vaultConnectionRef,
    ...vaultPathProperties('source'),
    encoding: vaultEncoding(
      'How the values are stored in Vault. Plain (default): each value is the text of the ' +
        "copy's value. Base64: each value is the base64 of the copy's bytes, as KTS mirrors " +
        'writes a Secret to Vault; each is decoded into the copy, and a value that is not valid ' +
        'base64 puts the mirror in Error, with the copies kept as they are. For a fleet that ' +
        'still has clusters running KTS mirrors. KV only: not for a dynamic source.',
    ),
    dynamic: vaultDynamic,
  },
  {
    required: ['connectionRef', 'path'],
    'x-kubernetes-validations': [
      {
        rule: '!has(self.dynamic) || !has(self.kvVersion)',
        message: 'kvVersion is for KV secrets; a dynamic source has none',
      },
      {
        rule: '!has(self.dynamic) || !has(self.encoding)',
        message:
          'encoding is for KV secrets (how KTS mirrors stores values); a dynamic source returns its credentials as they are',
      },
    ],
  },
);

const vaultDestination = object(
  'VaultDestination',
  'Writes the source (a Secret, a ConfigMap or another Vault secret) into a Vault / OpenBao KV ' +
    'secret instead of namespaces: on every change of the source, a new version (KV v2) or a ' +
    "rewrite (KV v1) only when the content differs. The secret is marked as the mirror's " +
    '(KV v2: custom_metadata mirrorhub.io/owner; KV v1: the data key _mirrorhub_owner); an ' +
    'existing unmarked secret is never overwritten unless conflictPolicy is Adopt. deletePolicy ' +
    'Delete removes it (KV v2: every version and the metadata) when the mirror is deleted. A ' +
    'SecretMirror may write only through a VaultConnection of its own namespace.',
  {
    connectionRef: {
      ...vaultConnectionRef,
      description:
        "Which connection writes: a VaultConnection in the mirror's own namespace, or a " +
        'ClusterVaultConnection (ClusterSecretMirror only).',
    },
    ...vaultPathProperties('destination'),
    encoding: vaultEncoding(
      'How the values are written to Vault. Plain (default): each value as text (a value that ' +
        'is not UTF-8 puts the mirror in Error). Base64: each value as the base64 of the ' +
        "source's bytes, exactly as KTS mirrors writes a Secret to Vault, so clusters still " +
        'running KTS read it (binary values included). For a fleet that still has clusters ' +
        'running KTS mirrors. The owner mark stays plain text.',
    ),
  },
  { required: ['connectionRef', 'path'] },
);

const mirrorSource = object(
  'MirrorSource',
  'The Secret or ConfigMap to copy, or a Vault secret (kind Vault).',
  {
    // Optional, Secret by default: a mirror that names only its Secret (as kubernetes-reflector
    // and KTS mirror users write it) is accepted.
    kind: { ...mirrorSourceKind, default: 'Secret' },
    name: string('Name of the source object (Secret and ConfigMap; not used for Vault).', {
      minLength: 1,
      maxLength: 253,
      pattern: DNS1123_SUBDOMAIN,
    }),
    namespace: string(
      'Namespace of the source object. Required for ClusterSecretMirror. For SecretMirror it may ' +
        "only name the mirror's own namespace (otherwise the mirror goes to phase Error): a " +
        "namespaced mirror never reads another namespace's objects. Not used for Vault.",
      { minLength: 1, maxLength: 63, pattern: DNS1123_LABEL },
    ),
    vault: vaultSource,
  },
  {
    'x-kubernetes-validations': [
      {
        rule: "(has(self.kind) && self.kind == 'Vault') == has(self.vault)",
        message: 'source.vault is required when kind is Vault, and only then',
      },
      {
        rule: "(has(self.kind) && self.kind == 'Vault') || has(self.name)",
        message: 'source.name is required for a Secret or ConfigMap source',
      },
      {
        rule: "!(has(self.kind) && self.kind == 'Vault') || (!has(self.name) && !has(self.namespace))",
        message: 'a Vault source has no name or namespace: give source.vault.path',
      },
    ],
  },
);

const clusterSelection = object(
  'ClusterSelection',
  "Which clusters get copies: MirrorClusters named in names OR matching selector. Absent: only the hub's own cluster.",
  {
    names: array(
      'MirrorCluster names.',
      string('A MirrorCluster name.', { minLength: 1, maxLength: 253 }),
      { maxItems: 256 },
    ),
    selector: labelSelector('Selects MirrorClusters by their labels (e.g. env=prod, region=eu).'),
  },
);

const mirrorDestination = object(
  'MirrorDestination',
  'Where copies go: clusters, then namespaces in each cluster. A namespace matching any pattern in ' +
    'namespaces OR the namespaceSelector gets a copy, unless it matches excludeNamespaces. The ' +
    'source object itself is never overwritten.',
  {
    clusters: clusterSelection,
    ...namespaceSelectionProperties(),
    name: string('Name of every copy. Default: the source name.', {
      minLength: 1,
      maxLength: 253,
      pattern: DNS1123_SUBDOMAIN,
    }),
    vault: vaultDestination,
  },
  {
    'x-kubernetes-validations': [
      {
        rule: `has(self.vault) || (${NAMESPACE_SELECTION_RULE.rule})`,
        message: `${NAMESPACE_SELECTION_RULE.message}, or vault`,
      },
      {
        rule:
          '!has(self.vault) || (!has(self.clusters) && !has(self.namespaces) && ' +
          '!has(self.namespaceSelector) && !has(self.excludeNamespaces) && !has(self.name))',
        message:
          'destination.vault writes to Vault only: it takes no clusters, namespaces, ' +
          'namespaceSelector, excludeNamespaces or name (use a second mirror to fan out)',
      },
    ],
  },
);

const mirrorSpec = (tsType: string, kindDescription: string, rules: ValidationRule[]): Schema =>
  object(
    tsType,
    kindDescription,
    {
      source: mirrorSource,
      destination: mirrorDestination,
      template: mirrorTemplate,
      deletePolicy,
      conflictPolicy,
      pollPeriodSeconds: integer(
        'Seconds between fresh looks at the source and every copy. Changes are picked up from ' +
          'watches at once; this is the safety net: the caches this mirror depends on re-list ' +
          '(comparing resourceVersions before reading data) at least this often, so whatever a ' +
          'watch missed is repaired within one period. A Vault source (no watch) is polled at ' +
          'this period, jittered.',
        { format: 'int32', default: 300, minimum: 10, maximum: 86400 },
      ),
      suspend,
    },
    {
      required: ['source', 'destination'],
      'x-kubernetes-validations': [
        {
          rule: "!(has(self.source.kind) && self.source.kind == 'Vault') || has(self.destination.name) || has(self.destination.vault)",
          message: 'a Vault source needs destination.name: the name of every copy',
          fieldPath: '.destination.name',
          reason: 'FieldValueRequired',
        },
        ...rules,
      ],
    },
  );

/** The tools whose copies a mirror takes over (agent: controllers/delivery/takeover.ts). */
const predecessor = stringEnum(
  'Predecessor',
  'The tool that made a copy mirrorhub took over: reflector (emberstack kubernetes-reflector), ' +
    'kubed (config-syncer), ClusterSecret or kts-mirrors.',
  ['reflector', 'kubed', 'ClusterSecret', 'kts-mirrors'],
);

/**
 * The state of a mirror in one cluster: a mirror's status.clusters entry, and what a hub replica
 * that owns the cluster reports of it to the leader (MirrorCluster status.deliveries).
 */
const clusterSync = {
  phase: phase('Phase of the mirror in this cluster.'),
  namespaces: count('Selected namespaces in this cluster.'),
  synced: count('Namespaces with an up-to-date copy.'),
  failed: count('Namespaces where writing the copy failed.'),
  conflicts: count('Namespaces where the target name is taken.'),
  denied: count("Namespaces refused by the cluster's policy."),
  lastSyncTime: dateTime('When the copies in this cluster were last brought up to date.'),
};

const mirrorProblem = object(
  'MirrorProblem',
  'One namespace whose copy is not in sync.',
  {
    cluster: string('MirrorCluster name.', { maxLength: 253 }),
    namespace: string('Namespace name.', { maxLength: 63 }),
    state: stringEnum(
      'ProblemState',
      "Failed: writing failed. Conflict: the name is taken. PolicyDenied: the cluster's policy refuses it.",
      ['Failed', 'Conflict', 'PolicyDenied'],
    ),
    message: string('What went wrong.', { maxLength: 1024 }),
  },
  { required: ['cluster', 'namespace', 'state'] },
);

const mirrorStatus = (tsType: string): Schema =>
  object(tsType, 'Observed state of the mirror, written by the hub.', {
    phase: phase(
      'Pending: not synced yet. Active: every selected namespace in every selected cluster has an ' +
        'up-to-date copy. Degraded: some copies failed or conflict. Error: the mirror cannot be ' +
        'synced at all (source missing, invalid pattern, ...); see message.',
    ),
    message: string('Human-readable summary of the phase.', { maxLength: 4096 }),
    observedGeneration,
    lastSyncTime: dateTime(
      'When the copies were last brought up to date. Resyncs that change nothing do not move it, ' +
        'so a steady object gets no status writes.',
    ),
    destination: string('Summary of the destination for kubectl, e.g. "/project-a-.+/, team=a".', {
      maxLength: 256,
    }),
    source: string(
      'The source for kubectl: the name of a Secret or ConfigMap, the path of a Vault secret.',
      { maxLength: 1024 },
    ),
    synced: string('Synced copies out of selected namespaces, e.g. "12/12".', { maxLength: 32 }),
    lease: object(
      'LeaseStatus',
      'A dynamic Vault source: the lease behind the delivered credentials (never its id).',
      {
        expiresAt: dateTime('When the lease expires unless renewed again.'),
        renewable: boolean('Whether Vault lets the lease be renewed.'),
        lastRenewed: dateTime('When the lease was last renewed.'),
        issuedAt: dateTime('When the delivered credentials were issued.'),
        nextRotation: dateTime(
          'When new credentials will be read, if the lease cannot be renewed far enough by then.',
        ),
        retiring: count('Old leases waiting for their revocation (grace period, or retrying).'),
      },
    ),
    vault: object(
      'VaultWritten',
      'The Vault secret this mirror has written (destination.vault): what deletePolicy Delete ' +
        'removes when the mirror is deleted or destination.vault moves, if it still carries the ' +
        "mirror's owner mark.",
      {
        connectionRef: vaultConnectionRef,
        path: string('Logical path written, <mount>/<secret path>.', { maxLength: 512 }),
        kvVersion: integer('KV version of the mount, if stated in the spec.', {
          format: 'int32',
          minimum: 1,
          maximum: 2,
        }),
        version: integer('KV v2: the version mirrorhub wrote or last saw it holding.', {
          format: 'int64',
          minimum: 0,
        }),
      },
      { required: ['connectionRef', 'path'] },
    ),
    counts: object('MirrorCounts', 'Totals over every selected cluster.', {
      clusters: count('Selected clusters.'),
      namespaces: count('Selected namespaces, over all clusters.'),
      synced: count('Namespaces with an up-to-date copy.'),
      failed: count('Namespaces where writing the copy failed.'),
      conflicts: count(
        'Namespaces where the target name is taken by an object mirrorhub does not own.',
      ),
      denied: count("Namespaces the cluster's policy does not let mirrorhub write (PolicyDenied)."),
    }),
    clusters: array(
      'Per-cluster state.',
      object(
        'ClusterSyncStatus',
        'State of the mirror in one cluster.',
        {
          name: string('MirrorCluster name.', { maxLength: 253 }),
          ...clusterSync,
          message: string('Why the cluster is not Active, if it is not.', { maxLength: 4096 }),
        },
        { required: ['name'] },
      ),
      // Atomic, not a list-map, for the reason MirrorDelivery's status.namespaces is: the hub is
      // its only writer and writes it whole, and a list-map's per-entry field tracking grows
      // managedFields with every cluster and makes each status write cost the API server more
      // (docs/BENCHMARKS.md, Status writes).
      { maxItems: 1024, 'x-kubernetes-list-type': 'atomic' },
    ),
    problems: array(
      'Namespaces that failed, conflict or are refused by policy, at most 50 (see counts for the totals).',
      mirrorProblem,
      { maxItems: 50 },
    ),
    takenOver: array(
      "Copies taken over from the tool that made them from this mirror's source (their marks " +
        'prove it), per tool, over every cluster: the number of copies that tool made which ' +
        'mirrorhub now serves in place. Absent when there are none.',
      object(
        'TakenOverCount',
        'Copies taken over from one tool.',
        {
          from: predecessor,
          copies: count('Copies taken over from this tool.'),
        },
        { required: ['from', 'copies'] },
      ),
      { maxItems: 4, 'x-kubernetes-list-type': 'atomic' },
    ),
    conditions: conditionsOf(
      'SourceFound: whether the source exists (Unknown while it cannot be read).',
    ),
  });

const MIRROR_COLUMNS: PrinterColumn[] = [
  {
    name: 'Source Type',
    type: 'string',
    jsonPath: '.spec.source.kind',
    description: 'Kind of the source object.',
  },
  {
    name: 'Source Name',
    type: 'string',
    jsonPath: '.status.source',
    description: 'Name of the source object; path of a Vault secret.',
  },
  {
    name: 'Destination',
    type: 'string',
    jsonPath: '.status.destination',
    description: 'Where copies go.',
  },
  {
    name: 'Delete Policy',
    type: 'string',
    jsonPath: '.spec.deletePolicy',
    description: 'Delete or Retain.',
  },
  {
    name: 'Poll Period',
    type: 'integer',
    jsonPath: '.spec.pollPeriodSeconds',
    description: 'Seconds between full resyncs.',
  },
  {
    name: 'Status',
    type: 'string',
    jsonPath: '.status.phase',
    description: 'Phase of the mirror.',
  },
  {
    name: 'Synced',
    type: 'string',
    jsonPath: '.status.synced',
    description: 'Synced copies / selected namespaces.',
  },
  {
    name: 'Last Sync',
    type: 'date',
    jsonPath: '.status.lastSyncTime',
    description: 'When the copies were last brought up to date.',
  },
  {
    name: 'Age',
    type: 'date',
    jsonPath: '.metadata.creationTimestamp',
    description: 'Age of the object.',
  },
];

export const secretMirror: KindDefinition = {
  kind: 'SecretMirror',
  listKind: 'SecretMirrorList',
  plural: 'secretmirrors',
  singular: 'secretmirror',
  shortNames: ['smir'],
  categories: ['mirrorhub'],
  scope: 'Namespaced',
  description:
    "Copies a Secret or ConfigMap from the mirror's own namespace into other namespaces, in this " +
    'cluster and in MirrorClusters.',
  spec: mirrorSpec('SecretMirrorSpec', 'What to copy, where to, and how.', [
    {
      // A namespace's owner may only take over objects through a ClusterSecretMirror (admins):
      // Adopt from a SecretMirror would let a tenant overwrite another team's Secret.
      rule: "!has(self.conflictPolicy) || self.conflictPolicy != 'Adopt'",
      message:
        'conflictPolicy Adopt is for ClusterSecretMirrors only: a SecretMirror never takes over an object it does not own',
      fieldPath: '.conflictPolicy',
      reason: 'FieldValueForbidden',
    },
  ]),
  status: mirrorStatus('SecretMirrorStatus'),
  printerColumns: MIRROR_COLUMNS,
  charts: ['mirrorhub-hub'],
};

export const clusterSecretMirror: KindDefinition = {
  kind: 'ClusterSecretMirror',
  listKind: 'ClusterSecretMirrorList',
  plural: 'clustersecretmirrors',
  singular: 'clustersecretmirror',
  shortNames: ['csmir'],
  categories: ['mirrorhub'],
  scope: 'Cluster',
  description:
    'Copies a Secret or ConfigMap from any namespace (source.namespace) into other namespaces, in ' +
    'this cluster and in MirrorClusters. Cluster-scoped: for administrators.',
  spec: mirrorSpec('ClusterSecretMirrorSpec', 'What to copy, where to, and how.', [
    {
      rule: "(has(self.source.kind) && self.source.kind == 'Vault') || has(self.source.namespace)",
      message: 'a ClusterSecretMirror needs source.namespace',
      fieldPath: '.source.namespace',
      reason: 'FieldValueRequired',
    },
  ]),
  status: mirrorStatus('ClusterSecretMirrorStatus'),
  printerColumns: MIRROR_COLUMNS,
  charts: ['mirrorhub-hub'],
};

// ---------------------------------------------------------------------------------------------
// MirrorCluster

export const mirrorCluster: KindDefinition = {
  kind: 'MirrorCluster',
  listKind: 'MirrorClusterList',
  plural: 'mirrorclusters',
  singular: 'mirrorcluster',
  shortNames: ['mcl'],
  categories: ['mirrorhub'],
  scope: 'Cluster',
  description:
    'A cluster the hub delivers to. Its labels are what destination.clusters.selector matches.',
  spec: object(
    'MirrorClusterSpec',
    'How the hub reaches the cluster: exactly one of eks, kubeconfigSecretRef or inCluster.',
    {
      eks: object(
        'EksAccess',
        'An EKS cluster, reached by assuming roleArn and minting an EKS token.',
        {
          name: string('EKS cluster name.', {
            minLength: 1,
            maxLength: 100,
            pattern: '^[0-9A-Za-z][A-Za-z0-9_-]*$',
          }),
          region: string('AWS region of the cluster, e.g. eu-west-1.', {
            minLength: 1,
            maxLength: 32,
            pattern: '^[a-z]{2}(-[a-z]+)+-[0-9]+$',
          }),
          roleArn: string(
            'IAM role the hub assumes for this cluster (arn:aws:iam::<account>:role/<name>).',
            { maxLength: 2048, pattern: ROLE_ARN },
          ),
          externalId: string(
            'ExternalId passed to sts:AssumeRole; required (the follower role trusts the hub role ' +
              "only with it, so a role ARN alone cannot be used as someone else's confused deputy).",
            {
              minLength: 2,
              maxLength: 1224,
              pattern: '^[A-Za-z0-9+=,.@:/_-]+$',
            },
          ),
        },
        {
          required: ['name', 'region', 'roleArn'],
          'x-kubernetes-validations': [
            {
              rule: 'has(self.externalId)',
              message:
                "eks.externalId is required: the ExternalId of the follower role's trust policy (the terraform follower module's external_id)",
              fieldPath: '.externalId',
              reason: 'FieldValueRequired',
            },
          ],
        },
      ),
      kubeconfigSecretRef: object(
        'KubeconfigSecretRef',
        'A kubeconfig stored in a Secret in the hub cluster (for non-EKS clusters).',
        {
          namespace: string('Namespace of the Secret.', {
            minLength: 1,
            maxLength: 63,
            pattern: DNS1123_LABEL,
          }),
          name: string('Name of the Secret.', {
            minLength: 1,
            maxLength: 253,
            pattern: DNS1123_SUBDOMAIN,
          }),
          key: string('Key of the kubeconfig in the Secret.', {
            default: 'kubeconfig',
            minLength: 1,
            maxLength: 253,
            pattern: DATA_KEY,
          }),
        },
        { required: ['namespace', 'name'] },
      ),
      inCluster: boolean("The hub's own cluster, reached with the hub's service account."),
      agentNamespace: string(
        'Namespace the agent runs in; the only namespace the hub writes to in this cluster.',
        { default: 'mirrorhub-system', minLength: 1, maxLength: 63, pattern: DNS1123_LABEL },
      ),
    },
    {
      'x-kubernetes-validations': [
        {
          rule:
            '(has(self.eks) ? 1 : 0) + (has(self.kubeconfigSecretRef) ? 1 : 0) + ' +
            '(has(self.inCluster) && self.inCluster ? 1 : 0) == 1',
          message: 'set exactly one of eks, kubeconfigSecretRef or inCluster: true',
        },
      ],
    },
  ),
  status: object('MirrorClusterStatus', 'Observed health of the cluster, written by the hub.', {
    type: stringEnum('ClusterAccessType', 'How the hub reaches the cluster (from spec).', [
      'EKS',
      'Kubeconfig',
      'InCluster',
    ]),
    observedGeneration,
    reachable: boolean("Whether the cluster's API server answered the last probe."),
    authenticated: boolean('Whether the last request was authenticated and authorized.'),
    agent: object('AgentStatus', 'The mirrorhub agent in the cluster.', {
      present: boolean("Whether the agent's heartbeat Lease exists and is fresh."),
      version: string('Agent version from its heartbeat.', { maxLength: 64 }),
      lastHeartbeat: dateTime('Renew time of the heartbeat Lease.'),
    }),
    kubernetesVersion: string('Kubernetes version of the cluster (gitVersion).', { maxLength: 64 }),
    credentialsExpireAt: dateTime('When the current credentials (assumed role, token) expire.'),
    identity: string(
      'EKS: the assumed-role ARN the hub acts as in this cluster (what its access entry must name).',
      { maxLength: 2048 },
    ),
    server: string('API server URL the hub uses (EKS: from DescribeCluster).', { maxLength: 2048 }),
    lastError: string('Last error reaching the cluster; empty when healthy.', { maxLength: 4096 }),
    pendingCleanup: array(
      'Deliveries of deleted mirrors still in this cluster: the hub removes them (and the agent ' +
        'their copies, per deletePolicy) as soon as it reaches the cluster again.',
      object(
        'PendingCleanup',
        'One delivery left behind by a deleted mirror.',
        {
          delivery: string('MirrorDelivery (and payload Secret) name in the agent namespace.', {
            maxLength: 63,
          }),
          mirror: string('The deleted mirror, Kind/namespace/name.', { maxLength: 512 }),
        },
        { required: ['delivery', 'mirror'] },
      ),
      {
        maxItems: 500,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['delivery'],
      },
    ),
    deliveries: object(
      'DeliveryReports',
      'With several hub replicas: what the replica that owns this cluster holds there, per ' +
        "mirror, for the replica that writes the mirrors' status. Absent with one replica.",
      {
        replica: string('The hub replica (its identity) that owns the cluster and reports.', {
          maxLength: 253,
        }),
        items: array(
          'One per delivery the owner holds in the cluster, of a mirror that exists or is being deleted.',
          object(
            'DeliveryReport',
            'The state of one mirror in this cluster, as the owning replica sees it.',
            {
              delivery: string('MirrorDelivery (and payload Secret) name in the agent namespace.', {
                maxLength: 63,
              }),
              mirror: string('The mirror, Kind/namespace/name.', { maxLength: 512 }),
              generation: integer(
                'metadata.generation of the mirror this report was planned from.',
                { format: 'int64', minimum: 0 },
              ),
              contentHash: string(
                'The content hash (a keyed HMAC) the owner delivers; absent while there is no source.',
                { maxLength: 128 },
              ),
              present: boolean(
                'Whether the cluster still holds the delivery or its payload Secret (false: removed).',
              ),
              ...clusterSync,
              message: string('Why the mirror is not Active in this cluster, if it is not.', {
                maxLength: 1024,
              }),
              problems: array(
                'Namespaces not in sync in this cluster, at most 10.',
                mirrorProblem,
                {
                  maxItems: 10,
                },
              ),
            },
            { required: ['delivery', 'mirror', 'present'] },
          ),
          // Written whole by the one owner, like a mirror's status.clusters.
          { maxItems: 5000, 'x-kubernetes-list-type': 'atomic' },
        ),
      },
      { required: ['replica'] },
    ),
    conditions: conditionsOf(
      'Reachable, Authenticated, AgentHealthy (and CleanupPending while deliveries of deleted mirrors are left) detail Ready.',
    ),
  }),
  printerColumns: [
    {
      name: 'Type',
      type: 'string',
      jsonPath: '.status.type',
      description: 'EKS, Kubeconfig or InCluster.',
    },
    {
      name: 'Reachable',
      type: 'boolean',
      jsonPath: '.status.reachable',
      description: 'API server reachable.',
    },
    {
      name: 'Agent',
      type: 'string',
      jsonPath: '.status.agent.version',
      description: 'Agent version.',
    },
    {
      name: 'Last Heartbeat',
      type: 'date',
      jsonPath: '.status.agent.lastHeartbeat',
      description: 'Last agent heartbeat.',
    },
    {
      name: 'Age',
      type: 'date',
      jsonPath: '.metadata.creationTimestamp',
      description: 'Age of the object.',
    },
  ],
  charts: ['mirrorhub-hub'],
};

// ---------------------------------------------------------------------------------------------
// MirrorDelivery

export const mirrorDelivery: KindDefinition = {
  kind: 'MirrorDelivery',
  listKind: 'MirrorDeliveryList',
  plural: 'mirrordeliveries',
  singular: 'mirrordelivery',
  shortNames: ['mdel'],
  categories: ['mirrorhub'],
  scope: 'Namespaced',
  description:
    'What the hub asks the agent of one cluster to do for one mirror. Lives in the agent namespace; ' +
    'written by the hub, status written by the agent. Payload data is in the payload Secret, never here.',
  spec: object(
    'MirrorDeliverySpec',
    'The delivery, fully resolved by the hub.',
    {
      mirror: object(
        'MirrorReference',
        'The mirror this delivery belongs to.',
        {
          kind: stringEnum('MirrorKind', 'Kind of the mirror.', [
            'SecretMirror',
            'ClusterSecretMirror',
          ]),
          namespace: string('Namespace of a SecretMirror; empty for a ClusterSecretMirror.', {
            maxLength: 63,
          }),
          name: string('Name of the mirror.', { minLength: 1, maxLength: 253 }),
          uid: string('UID of the mirror.', { minLength: 1, maxLength: 64 }),
        },
        { required: ['kind', 'name', 'uid'] },
      ),
      originCluster: string('Name of the cluster the source lives in (the hub cluster).', {
        minLength: 1,
        maxLength: 253,
      }),
      origin: string(
        "The source as <cluster>/<namespace>/<name>: every copy's mirrorhub.io/origin annotation. " +
          'Absent from deliveries of older hubs (then derived from the rest of the spec).',
        { maxLength: 600 },
      ),
      payloadSecretName: string(
        'Secret in this namespace (labelled mirrorhub.io/payload=true) holding the shaped data.',
        { minLength: 1, maxLength: 253, pattern: DNS1123_SUBDOMAIN },
      ),
      target: object(
        'DeliveryTarget',
        'What every copy is.',
        {
          kind: targetKind,
          name: string('Name of every copy.', {
            minLength: 1,
            maxLength: 253,
            pattern: DNS1123_SUBDOMAIN,
          }),
        },
        { required: ['kind', 'name'] },
      ),
      ...namespaceSelectionProperties(),
      sourceNamespace: string(
        "Namespace of the source object, set only on the delivery to the source's own cluster when " +
          'target.name equals the source name. The agent never writes into it, so the source ' +
          'itself is never overwritten.',
        { maxLength: 63 },
      ),
      acceptLabel: string(
        'Set when the hub requires destination namespaces to accept the source namespace: only ' +
          'namespaces carrying this label with the value "true" are selected ' +
          '(accept.mirrorhub.io/<source namespace>).',
        { maxLength: 317 },
      ),
      template: deliveryTemplate,
      deletePolicy,
      conflictPolicy,
      suspend,
      pollPeriodSeconds: integer(
        "The mirror's pollPeriodSeconds: the agent's caches take a fresh look at the cluster at " +
          'least this often, so a copy change a watch missed is repaired within it. Absent from ' +
          "deliveries of older hubs (then the agent's own resync period).",
        { format: 'int32', minimum: 10, maximum: 86400 },
      ),
      contentHash: string(
        'Keyed hash of payload data + type + labels + annotations + target kind. The agent skips ' +
          'every copy whose mirrorhub.io/content-hash annotation already equals it.',
        { minLength: 1, maxLength: 128 },
      ),
      sequence: integer(
        'Signed with the rest of the spec, and higher on every change the hub writes (the same ' +
          'while the spec is unchanged): the agent refuses a delivery older than one it applied ' +
          'under this name (a replay), also after the delivery was deleted. Absent from ' +
          'deliveries of older hubs (then 0, accepted only while nothing newer was applied).',
        { format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      ),
    },
    {
      required: ['mirror', 'originCluster', 'payloadSecretName', 'target', 'contentHash'],
      'x-kubernetes-validations': [NAMESPACE_SELECTION_RULE],
    },
  ),
  status: object('MirrorDeliveryStatus', "The agent's report.", {
    observedGeneration,
    observedHash: string('contentHash the copies were last synced to.', { maxLength: 128 }),
    phase: phase(
      'Pending: not processed yet. Active: every selected namespace has an up-to-date copy. ' +
        'Degraded: some failed or conflict. Error: nothing could be synced (payload missing, ' +
        'invalid pattern, ...); see message.',
    ),
    message: string('Human-readable summary of the phase.', { maxLength: 4096 }),
    lastSyncTime: dateTime(
      'When the copies were last brought up to date. Resyncs that change nothing do not move it, ' +
        'so a steady object gets no status writes.',
    ),
    agentVersion: string('Version of the agent that wrote this status.', { maxLength: 64 }),
    counts: object('DeliveryCounts', 'Totals in this cluster.', {
      namespaces: count('Selected namespaces.'),
      synced: count('Namespaces with an up-to-date copy.'),
      failed: count('Namespaces where writing the copy failed.'),
      conflicts: count(
        'Namespaces where the target name is taken by an object mirrorhub does not own.',
      ),
      denied: count("Namespaces this cluster's policy does not let mirrorhub write."),
    }),
    namespaces: array(
      'Namespaces where the copy has a problem (Failed, Conflict, PolicyDenied), with what went ' +
        'wrong. Those with an up-to-date copy are in syncedNamespaces (earlier agents listed ' +
        'them here too, as Synced). With syncedNamespaces at most 500 names, problems first ' +
        '(truncated says when more exist).',
      object(
        'DeliveryNamespaceStatus',
        'State of the copy in one namespace.',
        {
          name: string('Namespace name.', { maxLength: 63 }),
          state: stringEnum(
            'NamespaceState',
            "Synced, Failed, Conflict, or PolicyDenied (the cluster's policy refuses it).",
            ['Synced', 'Failed', 'Conflict', 'PolicyDenied'],
          ),
          message: string('What went wrong, for Failed, Conflict and PolicyDenied.', {
            maxLength: 1024,
          }),
        },
        { required: ['name', 'state'] },
      ),
      // Atomic, not a list-map: the agent is its only writer and writes it whole, and the API
      // server tracks a list-map's managedFields entry by entry, which grows every delivery and
      // makes each status write cost it more (docs/BENCHMARKS.md, Status writes).
      { maxItems: 500, 'x-kubernetes-list-type': 'atomic' },
    ),
    // Names, not objects: every new namespace makes each delivery selecting it write its status
    // again, and an object per namespace makes that patch cost the API server more the more
    // namespaces there are (docs/BENCHMARKS.md, Status writes).
    syncedNamespaces: array(
      'Namespaces holding an up-to-date copy, by name, after the problems in namespaces (500 ' +
        'names in all at most; truncated says when more exist).',
      string('Namespace name.', { maxLength: 63 }),
      { maxItems: 500, 'x-kubernetes-list-type': 'atomic' },
    ),
    truncated: boolean(
      'True when namespaces and syncedNamespaces list only the first 500 namespaces of more.',
    ),
    takenOver: array(
      'Namespaces whose copy was an earlier copy another tool made from this source (its marks ' +
        'prove it) and which the agent took over in place, keeping the object, with the tool it ' +
        'came from; listed while the copy is there (500 at most).',
      object(
        'TakenOverCopy',
        'A copy taken over from another tool.',
        {
          namespace: string('Namespace name.', { maxLength: 63 }),
          from: predecessor,
        },
        { required: ['namespace', 'from'] },
      ),
      { maxItems: 500, 'x-kubernetes-list-type': 'atomic' },
    ),
    newestSequence: integer(
      'Set while the agent refuses this delivery as a replay (phase Error, message ' +
        '"Replayed: ..."): the newest sequence it applied under this name. The hub writes its ' +
        'next delivery with a higher one.',
      { format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    ),
    conditions: conditionsOf(''),
  }),
  printerColumns: [
    {
      name: 'Mirror',
      type: 'string',
      jsonPath: '.spec.mirror.name',
      description: 'Name of the mirror.',
    },
    {
      name: 'Phase',
      type: 'string',
      jsonPath: '.status.phase',
      description: 'Phase reported by the agent.',
    },
    {
      name: 'Synced',
      type: 'integer',
      jsonPath: '.status.counts.synced',
      description: 'Namespaces with an up-to-date copy.',
    },
    {
      name: 'Age',
      type: 'date',
      jsonPath: '.metadata.creationTimestamp',
      description: 'Age of the object.',
    },
  ],
  // The hub cluster runs an agent too, so the hub chart carries this CRD as well.
  charts: ['mirrorhub-agent', 'mirrorhub-hub'],
};

// ---------------------------------------------------------------------------------------------
// VaultConnection / ClusterVaultConnection

const K8S_NAME = { minLength: 1, maxLength: 253, pattern: DNS1123_SUBDOMAIN };

/** A key of a Secret; `cluster`: the Secret's namespace is named (ClusterVaultConnection). */
const secretKeyRef = (cluster: boolean, description: string): Schema =>
  object(
    cluster ? 'ClusterVaultSecretKeyRef' : 'VaultSecretKeyRef',
    description +
      (cluster
        ? ' The Secret is in the namespace named here.'
        : " The Secret is in the connection's own namespace."),
    {
      ...(cluster
        ? {
            namespace: string('Namespace of the Secret.', {
              minLength: 1,
              maxLength: 63,
              pattern: DNS1123_LABEL,
            }),
          }
        : {}),
      name: string('Name of the Secret.', K8S_NAME),
      key: string('Key in the Secret.', { minLength: 1, maxLength: 253, pattern: DATA_KEY }),
    },
    { required: cluster ? ['namespace', 'name', 'key'] : ['name', 'key'] },
  );

const vaultAuth = (cluster: boolean): Schema => {
  const p = cluster ? 'ClusterVault' : 'Vault';
  return object(
    `${p}Auth`,
    'How the hub logs in to Vault: exactly one of token, appRole or kubernetes. Credentials live ' +
      'only in Kubernetes Secrets (or, for kubernetes, in a ServiceAccount token the hub requests).',
    {
      token: object(
        `${p}TokenAuth`,
        'A static Vault token (looked up for its TTL, renewed while renewable).',
        { secretRef: secretKeyRef(cluster, 'The Secret key holding the token.') },
        { required: ['secretRef'] },
      ),
      appRole: object(
        `${p}AppRoleAuth`,
        'AppRole login: role_id (inline or from a Secret) and secret_id (from a Secret).',
        {
          mountPath: string('Mount path of the AppRole auth method.', {
            default: 'approle',
            minLength: 1,
            maxLength: 256,
          }),
          roleId: string('The role_id (not a secret by itself).', {
            minLength: 1,
            maxLength: 256,
          }),
          roleIdSecretRef: secretKeyRef(cluster, 'The Secret key holding the role_id.'),
          secretIdSecretRef: secretKeyRef(cluster, 'The Secret key holding the secret_id.'),
        },
        {
          required: ['secretIdSecretRef'],
          'x-kubernetes-validations': [
            {
              rule: 'has(self.roleId) != has(self.roleIdSecretRef)',
              message: 'set exactly one of roleId or roleIdSecretRef',
            },
          ],
        },
      ),
      kubernetes: object(
        `${p}KubernetesAuth`,
        cluster
          ? "Kubernetes login with a TokenRequest token of the hub's own ServiceAccount (or of " +
              'serviceAccountRef), for audience.'
          : 'Kubernetes login with a TokenRequest token of serviceAccountRef (a ServiceAccount in ' +
              "the connection's namespace), for audience. Never the hub's own ServiceAccount.",
        {
          mountPath: string('Mount path of the Kubernetes auth method.', {
            default: 'kubernetes',
            minLength: 1,
            maxLength: 256,
          }),
          role: string('The Vault role to log in as.', { minLength: 1, maxLength: 256 }),
          audience: string('Audience of the requested ServiceAccount token.', {
            default: 'vault',
            minLength: 1,
            maxLength: 256,
          }),
          serviceAccountRef: object(
            `${p}ServiceAccountRef`,
            cluster
              ? "A ServiceAccount whose token is used instead of the hub's own."
              : "A ServiceAccount in the connection's namespace whose token is used.",
            {
              ...(cluster
                ? {
                    namespace: string('Namespace of the ServiceAccount.', {
                      minLength: 1,
                      maxLength: 63,
                      pattern: DNS1123_LABEL,
                    }),
                  }
                : {}),
              name: string('Name of the ServiceAccount.', K8S_NAME),
            },
            { required: cluster ? ['namespace', 'name'] : ['name'] },
          ),
        },
        {
          required: cluster ? ['role'] : ['role', 'serviceAccountRef'],
        },
      ),
    },
    {
      'x-kubernetes-validations': [
        {
          rule: '(has(self.token) ? 1 : 0) + (has(self.appRole) ? 1 : 0) + (has(self.kubernetes) ? 1 : 0) == 1',
          message: 'set exactly one of token, appRole or kubernetes',
        },
      ],
    },
  );
};

/**
 * One path grant of a ClusterVaultConnection (spec.tenantPaths): Vault policy glob syntax on the
 * logical path, so an admin reads it as they read their Vault policies. Reserved engines are
 * refused here too, so a grant can never name what the hub refuses anyway.
 */
const vaultPathGrant = string(
  'A logical Vault path as source.vault.path gives it (<mount>/<path>, no data/ segment for KV ' +
    'v2), in Vault policy glob syntax: + is exactly one path segment, a trailing * any rest (a ' +
    "prefix); {namespace} stands for the SecretMirror's namespace. E.g. secret/teams/{namespace}/*, " +
    'database/creds/{namespace}-ro. Never under sys/, auth/, identity/ or cubbyhole/.',
  {
    minLength: 1,
    maxLength: 512,
    pattern: '^[^/]+(/[^/]+)*$',
    'x-kubernetes-validations': [
      {
        rule: "!self.matches('^(sys|auth|identity|cubbyhole)(/|$)')",
        message: 'sys/, auth/, identity/ and cubbyhole/ paths are never granted to SecretMirrors',
      },
      {
        rule: "!self.matches('[*].')",
        message: '* may only end a path grant (a prefix); use + for one segment',
      },
      {
        rule: "!self.replace('{namespace}', '').matches('[{}]')",
        message: '{namespace} is the only placeholder',
      },
      {
        rule: "!self.matches('(^|/)[.][.]?(/|$)')",
        message: 'a path grant has no . or .. segment',
      },
    ],
  },
);

const vaultConnectionSpec = (cluster: boolean): Schema =>
  object(
    cluster ? 'ClusterVaultConnectionSpec' : 'VaultConnectionSpec',
    'Where Vault is and how the hub logs in.',
    {
      address: string(
        'Vault address, e.g. https://vault.example.com:8200. http:// only for a loopback address ' +
          '(127.0.0.0/8, ::1, localhost): a token must not cross a network in clear text.',
        { minLength: 1, maxLength: 2048 },
      ),
      namespace: string('Vault Enterprise / OpenBao namespace (X-Vault-Namespace).', {
        minLength: 1,
        maxLength: 512,
      }),
      caBundle: string(
        "PEM CA bundle that issued Vault's certificate; replaces the system roots when set.",
        { maxLength: 262144 },
      ),
      auth: vaultAuth(cluster),
      ...(cluster
        ? {
            allowedNamespaces: object(
              'VaultAllowedNamespaces',
              'Namespaces whose SecretMirrors may use this connection: listed by name or matching ' +
                'the selector. Default: none (only ClusterSecretMirrors may use it).',
              {
                names: array(
                  'Namespace names.',
                  string('A namespace name.', {
                    minLength: 1,
                    maxLength: 63,
                    pattern: DNS1123_LABEL,
                  }),
                  { maxItems: 256 },
                ),
                namespaceSelector: labelSelector('Selects namespaces by their labels.'),
              },
            ),
            tenantPaths: object(
              'VaultTenantPaths',
              'Which Vault paths SecretMirrors of the namespaces in allowedNamespaces may read ' +
                'through this connection, whose Vault identity is not theirs. Default: none, so ' +
                'admitting a namespace grants nothing until a path is listed here. Writing (' +
                'destination.vault) through a ClusterVaultConnection is for ClusterSecretMirrors ' +
                'only. Does not restrict ClusterSecretMirrors.',
              {
                read: array(
                  'KV secrets a SecretMirror may use as its source (source.vault without ' +
                    "dynamic). The path's mount must be a KV mount, whatever kvVersion says.",
                  vaultPathGrant,
                  { maxItems: 64 },
                ),
                dynamic: array(
                  'Paths a SecretMirror may read as a dynamic source (source.vault.dynamic). The ' +
                    "path's mount must be of a credential-issuing engine, and the path one of " +
                    "that engine's credential endpoints (docs/vault.md lists them; POST only where " +
                    'the engine issues on POST).',
                  vaultPathGrant,
                  { maxItems: 64 },
                ),
              },
            ),
          }
        : {}),
    },
    {
      required: ['address', 'auth'],
      'x-kubernetes-validations': [
        {
          rule: "self.address.startsWith('https://') || self.address.matches('^http://(localhost|127[.][0-9]+[.][0-9]+[.][0-9]+|\\\\[::1\\\\])(:[0-9]+)?(/.*)?$')",
          message: 'address must be https://, or http:// to a loopback address only',
          fieldPath: '.address',
        },
      ],
    },
  );

const vaultConnectionStatus = (tsType: string): Schema =>
  object(tsType, 'Observed state of the connection, written by the hub.', {
    observedGeneration,
    authMethod: string('token, approle or kubernetes (from spec).', { maxLength: 32 }),
    ready: boolean('Whether the hub could log in with this connection.'),
    message: string('Why the connection is not ready, if it is not.', { maxLength: 4096 }),
    lastCheckTime: dateTime('When the hub last logged in (or tried to).'),
    conditions: conditionsOf(''),
  });

const VAULT_CONNECTION_COLUMNS: PrinterColumn[] = [
  {
    name: 'Address',
    type: 'string',
    jsonPath: '.spec.address',
    description: 'Vault address.',
  },
  {
    name: 'Auth',
    type: 'string',
    jsonPath: '.status.authMethod',
    description: 'token, approle or kubernetes.',
  },
  {
    name: 'Ready',
    type: 'boolean',
    jsonPath: '.status.ready',
    description: 'Whether the hub could log in.',
  },
  {
    name: 'Age',
    type: 'date',
    jsonPath: '.metadata.creationTimestamp',
    description: 'Age of the object.',
  },
];

export const vaultConnection: KindDefinition = {
  kind: 'VaultConnection',
  listKind: 'VaultConnectionList',
  plural: 'vaultconnections',
  singular: 'vaultconnection',
  shortNames: ['vconn'],
  categories: ['mirrorhub'],
  scope: 'Namespaced',
  description:
    "A Vault / OpenBao server and how to log in, usable only by SecretMirrors in this object's " +
    'namespace. Every Secret and ServiceAccount it names is in its own namespace.',
  spec: vaultConnectionSpec(false),
  status: vaultConnectionStatus('VaultConnectionStatus'),
  printerColumns: VAULT_CONNECTION_COLUMNS,
  charts: ['mirrorhub-hub'],
};

export const clusterVaultConnection: KindDefinition = {
  kind: 'ClusterVaultConnection',
  listKind: 'ClusterVaultConnectionList',
  plural: 'clustervaultconnections',
  singular: 'clustervaultconnection',
  shortNames: ['cvconn'],
  categories: ['mirrorhub'],
  scope: 'Cluster',
  description:
    'A Vault / OpenBao server and how to log in, for ClusterSecretMirrors and for SecretMirrors in ' +
    'spec.allowedNamespaces (the paths spec.tenantPaths grants). Cluster-scoped: for administrators.',
  spec: vaultConnectionSpec(true),
  status: vaultConnectionStatus('ClusterVaultConnectionStatus'),
  printerColumns: VAULT_CONNECTION_COLUMNS,
  charts: ['mirrorhub-hub'],
};

/** Every kind, in the order types.gen.ts lists them. */
export const KINDS: readonly KindDefinition[] = [
  secretMirror,
  clusterSecretMirror,
  mirrorCluster,
  mirrorDelivery,
  vaultConnection,
  clusterVaultConnection,
];
