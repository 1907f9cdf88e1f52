// Shaping: from a source object and a mirror's template to what every copy is.
//
// The work is split as docs/architecture.md describes:
// - the hub (shapeSource) selects and renames keys into the payload data, and computes the final
//   type, labels and annotations that go into MirrorDelivery.spec.template;
// - the agent (readPayload + renderCopy) turns payload data + delivery template + marks into the
//   Secret or ConfigMap it writes in each namespace.
//
// Payload data is always base64 (it travels in a Secret, even for ConfigMap sources); ConfigMap
// `data` values are UTF-8 text, `binaryData` keys are listed in mirrorhub.io/binary-keys.

import type { DeliveryTemplate, KeyMapping, MirrorTemplate, SourceKind } from '../api/types.gen.js';
import { LAST_APPLIED_ANNOTATION, type CopyMarks } from './names.js';
import { FOREIGN_OWNERSHIP_PATTERNS } from './foreign-ownership.js';
import {
  ANNOTATION_BINARY_KEYS,
  LABEL_DELIVERY,
  LABEL_PAYLOAD,
  RESERVED_PREFIX,
} from '../api/contract.js';

type StringMap = Record<string, string>;

/** The parts of a Secret or ConfigMap that shaping reads (raw API JSON or client-node objects). */
export interface SourceObject {
  metadata?: { labels?: StringMap | undefined; annotations?: StringMap | undefined } | undefined;
  /** Secret only. */
  type?: string | undefined;
  /** Secret: base64 values. ConfigMap: UTF-8 text. */
  data?: StringMap | undefined;
  /** ConfigMap only: base64 values. */
  binaryData?: StringMap | undefined;
}

export interface ShapedSource {
  /** Payload Secret data: base64 values under the copy's key names. */
  data: StringMap;
  /** Keys of data that were ConfigMap binaryData, sorted. */
  binaryKeys: string[];
  /** Final metadata of every copy, for MirrorDelivery.spec.template. */
  template: DeliveryTemplate;
  /** Problems that do not stop the sync (e.g. a listed key the source lacks), for status. */
  warnings: string[];
}

/** Hub side: applies a mirror's template to its source object. Never throws. */
export function shapeSource(
  kind: SourceKind,
  source: SourceObject,
  template: MirrorTemplate | undefined,
): ShapedSource {
  const available: StringMap = {};
  const binary = new Set<string>();
  if (kind === 'Secret') {
    Object.assign(available, source.data ?? {});
  } else {
    for (const [key, text] of Object.entries(source.data ?? {})) {
      available[key] = Buffer.from(text, 'utf8').toString('base64');
    }
    for (const [key, b64] of Object.entries(source.binaryData ?? {})) {
      available[key] = b64;
      binary.add(key);
    }
  }

  const selected = selectKeys(available, template?.keys);
  const binaryKeys = selected.mapping
    .filter(({ from }) => binary.has(from))
    .map(({ to }) => to)
    .sort();

  const result: DeliveryTemplate = {
    labels: shapeMetadata(source.metadata?.labels, template?.labels, template?.removeLabels),
    annotations: shapeMetadata(
      source.metadata?.annotations,
      template?.annotations,
      template?.removeAnnotations,
    ),
  };
  if (kind === 'Secret') result.type = template?.type ?? source.type ?? 'Opaque';

  return {
    data: selected.data,
    binaryKeys,
    template: result,
    warnings: [
      ...selected.missing.map(
        (key) => `template.keys: source has no key ${JSON.stringify(key)}; it is not copied`,
      ),
      ...selected.duplicates.map(
        (key) => `template.keys: two keys are copied to ${JSON.stringify(key)}; the first is kept`,
      ),
    ],
  };
}

export interface SelectedKeys {
  data: StringMap;
  /** Which source key went to which copy key, in output order. */
  mapping: { from: string; to: string }[];
  /** Listed keys the source does not have. */
  missing: string[];
  /** Copy keys listed twice (the CRD refuses this; older objects may have it): first one wins. */
  duplicates: string[];
}

/** Picks and renames keys. Without `keys`, every key is copied under its own name. */
export function selectKeys(
  available: StringMap,
  keys: readonly KeyMapping[] | undefined,
): SelectedKeys {
  if (!keys) {
    const mapping = Object.keys(available)
      .sort()
      .map((k) => ({ from: k, to: k }));
    return { data: { ...available }, mapping, missing: [], duplicates: [] };
  }
  const data: StringMap = {};
  const mapping: { from: string; to: string }[] = [];
  const missing: string[] = [];
  const duplicates: string[] = [];
  for (const { from, to } of keys) {
    const target = to ?? from;
    if (Object.hasOwn(data, target)) {
      duplicates.push(target);
      continue;
    }
    if (!Object.hasOwn(available, from)) {
      missing.push(from);
      continue;
    }
    data[target] = available[from]!;
    mapping.push({ from, to: target });
  }
  return { data, mapping, missing, duplicates };
}

/** The first exact key or "prefix*" pattern that matches `key`. */
export function findKeyPattern(
  key: string,
  patterns: readonly string[] | undefined,
): string | undefined {
  return (patterns ?? []).find((p) =>
    p.endsWith('*') ? key.startsWith(p.slice(0, -1)) : key === p,
  );
}

/** True when `key` is matched by an exact key or a "prefix*" pattern. */
export function matchesKeyPattern(key: string, patterns: readonly string[] | undefined): boolean {
  return findKeyPattern(key, patterns) !== undefined;
}

/**
 * Source labels or annotations as the copy carries them: without last-applied-configuration,
 * without anything under mirrorhub.io/, without other controllers' ownership marks
 * (foreign-ownership.ts), without removed keys, then with the template's added. A template may
 * add an ownership mark back; the follower's policy then decides (policy.metadata.foreignOwnership).
 */
export function shapeMetadata(
  source: StringMap | undefined,
  add: StringMap | undefined,
  remove: readonly string[] | undefined,
): StringMap {
  const out: StringMap = {};
  for (const [key, value] of Object.entries(source ?? {})) {
    if (isNeverCopied(key) || matchesKeyPattern(key, remove)) continue;
    out[key] = value;
  }
  for (const [key, value] of Object.entries(add ?? {})) {
    if (key.startsWith(RESERVED_PREFIX)) continue; // the CRD refuses these; belt and braces
    out[key] = value;
  }
  return out;
}

/**
 * Keys that never leave the source: kubectl's last-applied state, mirrorhub's own marks, and other
 * controllers' ownership marks (the default list: the hub does not know a follower's own).
 */
export function isNeverCopied(key: string): boolean {
  return (
    key === LAST_APPLIED_ANNOTATION ||
    key.startsWith(RESERVED_PREFIX) ||
    matchesKeyPattern(key, FOREIGN_OWNERSHIP_PATTERNS)
  );
}

// ---------------------------------------------------------------------------------------------
// The payload Secret (hub writes, agent reads).

export interface PayloadSecret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: {
    name: string;
    namespace: string;
    labels: StringMap;
    annotations?: StringMap;
  };
  type: 'Opaque';
  data: StringMap;
}

export function buildPayloadSecret(input: {
  name: string;
  namespace: string;
  deliveryName: string;
  shaped: Pick<ShapedSource, 'data' | 'binaryKeys'>;
}): PayloadSecret {
  const { binaryKeys, data } = input.shaped;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: { [LABEL_PAYLOAD]: 'true', [LABEL_DELIVERY]: input.deliveryName },
      ...(binaryKeys.length > 0
        ? { annotations: { [ANNOTATION_BINARY_KEYS]: [...binaryKeys].sort().join(',') } }
        : {}),
    },
    type: 'Opaque',
    data: { ...data },
  };
}

export interface Payload {
  data: StringMap;
  binaryKeys: string[];
}

/** Agent side: the payload data and binary keys of a payload Secret. */
export function readPayload(secret: {
  metadata?: { annotations?: StringMap | undefined } | undefined;
  data?: StringMap | undefined;
}): Payload {
  const listed = secret.metadata?.annotations?.[ANNOTATION_BINARY_KEYS] ?? '';
  return {
    data: { ...(secret.data ?? {}) },
    binaryKeys: listed
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k !== '')
      .sort(),
  };
}

// ---------------------------------------------------------------------------------------------
// The copy (agent).

export interface SecretCopy {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: { name: string; namespace: string; labels: StringMap; annotations: StringMap };
  type: string;
  data: StringMap;
}

export interface ConfigMapCopy {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: { name: string; namespace: string; labels: StringMap; annotations: StringMap };
  data?: StringMap;
  binaryData?: StringMap;
}

/** The object the agent writes into one namespace. Marks are applied last and always win. */
export function renderCopy(input: {
  kind: SourceKind;
  name: string;
  namespace: string;
  payload: Payload;
  template: DeliveryTemplate | undefined;
  marks: CopyMarks;
}): SecretCopy | ConfigMapCopy {
  const { kind, name, namespace, payload, template, marks } = input;
  const metadata = {
    name,
    namespace,
    labels: { ...(template?.labels ?? {}), ...marks.labels },
    annotations: { ...(template?.annotations ?? {}), ...marks.annotations },
  };
  if (kind === 'Secret') {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata,
      type: template?.type ?? 'Opaque',
      data: { ...payload.data },
    };
  }
  const binary = new Set(payload.binaryKeys);
  const data: StringMap = {};
  const binaryData: StringMap = {};
  for (const [key, b64] of Object.entries(payload.data)) {
    if (binary.has(key)) binaryData[key] = b64;
    else data[key] = Buffer.from(b64, 'base64').toString('utf8');
  }
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata,
    ...(Object.keys(data).length > 0 ? { data } : {}),
    ...(Object.keys(binaryData).length > 0 ? { binaryData } : {}),
  };
}
