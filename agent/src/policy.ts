// What a cluster lets mirrorhub write there: the follower owner's policy, held by the agent.
//
// The agent is the only mirrorhub component that writes outside its own namespace, so it is the
// trust boundary. The policy comes from the agent's own configuration (the agent chart's
// `policy` values, MIRRORHUB_POLICY), never from the hub: a MirrorDelivery asks, the policy
// decides. The agent chart renders the same values into ValidatingAdmissionPolicies, so the API
// server refuses what this module refuses even if the agent were compromised.
//
// Pure: parse once at start-up (`parsePolicy`, errors say which field is wrong), then
// `checkDelivery` (rules about the whole delivery: Secret type, metadata keys) and
// `checkNamespace` (rules about one namespace) give a Denial naming the rule, or undefined.
// Other controllers' ownership marks (foreign-ownership.ts) are refused before deniedDomains,
// whatever allowedKeys says.

import {
  ALWAYS_DENIED_NAMESPACES,
  compilePattern,
  type Labels,
} from '@mirrorhub/shared/mirror/namespaces';
import { findKeyPattern } from '@mirrorhub/shared/mirror/shape';
import {
  FOREIGN_OWNERSHIP_PATTERNS,
  foreignOwnershipReason,
  foreignPatternProblem,
} from '@mirrorhub/shared/mirror/foreign-ownership';
import { RESERVED_PREFIX } from '@mirrorhub/shared/api/contract';

/** The policy as configured (the agent chart's `policy` values, as JSON). */
export interface PolicySpec {
  namespaces?: {
    allow?: string[] | undefined;
    deny?: string[] | undefined;
    /** "key=value", or "key" for any value. */
    requireLabel?: string | undefined;
  };
  allowAdopt?: boolean | undefined;
  /**
   * Take over, in place, a copy another tool (reflector, kubed, ClusterSecret, KTS mirrors) made
   * from the same source, as its marks prove (controllers/delivery/takeover.ts). Default true.
   */
  takeOver?: boolean | undefined;
  secretTypes?: string[] | undefined;
  metadata?: {
    deniedDomains?: string[] | undefined;
    allowedKeys?: string[] | undefined;
    /** Other controllers' ownership keys ("key" or "prefix*"); default: foreign-ownership.ts. */
    foreignOwnership?: string[] | undefined;
  };
}

/** Secret types that grant identities; refused even when listed. */
export const NEVER_ALLOWED_TYPES: readonly string[] = [
  'kubernetes.io/service-account-token',
  'bootstrap.kubernetes.io/token',
];

export const DEFAULT_SECRET_TYPES: readonly string[] = [
  'Opaque',
  'kubernetes.io/tls',
  'kubernetes.io/dockerconfigjson',
  'kubernetes.io/dockercfg',
  'kubernetes.io/basic-auth',
  'kubernetes.io/ssh-auth',
];

export const DEFAULT_DENIED_DOMAINS: readonly string[] = ['kubernetes.io', 'k8s.io'];

export const DEFAULT_ALLOWED_KEYS: readonly string[] = [
  'app.kubernetes.io/name',
  'app.kubernetes.io/instance',
  'app.kubernetes.io/version',
  'app.kubernetes.io/component',
  'app.kubernetes.io/part-of',
  'app.kubernetes.io/managed-by',
];

/** Which rule refused, in the words status, Events and logs use. */
export type PolicyRule =
  | 'namespaces.always-denied'
  | 'namespaces.deny'
  | 'namespaces.allow'
  | 'namespaces.requireLabel'
  | 'allowAdopt'
  | 'secretTypes'
  | 'metadata.foreignOwnership'
  | 'metadata.deniedDomains';

export interface Denial {
  rule: PolicyRule;
  /** "PolicyDenied (policy.<rule>): <why>" */
  message: string;
}

export interface Policy {
  readonly allowAdopt: boolean;
  /** Predecessor copies (another tool's copy of the same source) are taken over. */
  readonly takeOver: boolean;
  /** Other controllers' ownership keys (metadata.foreignOwnership): a takeover removes them. */
  readonly foreignOwnership: readonly string[];
  /** Rules about the whole delivery: the copy's Secret type and metadata keys. */
  checkDelivery(copy: {
    kind: 'Secret' | 'ConfigMap';
    type?: string | undefined;
    labels?: Labels | undefined;
    annotations?: Labels | undefined;
  }): Denial | undefined;
  /** Rules about one namespace. */
  checkNamespace(ns: { name: string; labels?: Labels | undefined }): Denial | undefined;
  /** A conflict that only Adopt would resolve, when the policy forbids Adopt. */
  adoptDenied(): Denial;
  /**
   * Why a predecessor copy (`what` names it) stays a Conflict: policy.takeOver is false. Not a
   * PolicyDenied: the namespace is a Conflict exactly as before takeover existed.
   */
  takeOverOff(what: string): string;
  /** The effective policy, for the start-up log line (no secrets in it). */
  readonly summary: Record<string, unknown>;
}

function deny(rule: PolicyRule, why: string): Denial {
  return { rule, message: `PolicyDenied (policy.${rule}): ${why}` };
}

function stringList(value: unknown, path: string, errors: string[]): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) {
    errors.push(`${path} must be a list of non-empty strings`);
    return undefined;
  }
  return value as string[];
}

/**
 * The agent's policy. `agentNamespace` is always denied. Throws one Error listing every
 * problem, each naming its field (`policy.namespaces.deny[1]: invalid regular expression ...`).
 */
export function parsePolicy(spec: unknown, agentNamespace: string): Policy {
  const errors: string[] = [];
  const s = (spec ?? {}) as Record<string, unknown>;
  if (typeof s !== 'object' || Array.isArray(s)) throw new Error('policy must be an object');
  const known = new Set(['namespaces', 'allowAdopt', 'takeOver', 'secretTypes', 'metadata']);
  for (const k of Object.keys(s)) if (!known.has(k)) errors.push(`policy.${k} is not a field`);
  const ns = (s['namespaces'] ?? {}) as Record<string, unknown>;
  const md = (s['metadata'] ?? {}) as Record<string, unknown>;

  const patterns = (field: 'allow' | 'deny') =>
    (stringList(ns[field], `policy.namespaces.${field}`, errors) ?? []).flatMap((p, i) => {
      const m = compilePattern(p, `policy.namespaces.${field}[${i}]`);
      if (!m.ok) {
        errors.push(m.error);
        return [];
      }
      return [{ pattern: p, matches: m.matches }];
    });
  const allow = patterns('allow');
  const denyList = patterns('deny');

  let requireLabel: { key: string; value?: string } | undefined;
  const rl = ns['requireLabel'];
  if (rl !== undefined && rl !== null && rl !== '') {
    if (typeof rl !== 'string') errors.push('policy.namespaces.requireLabel must be a string');
    else {
      const eq = rl.indexOf('=');
      requireLabel = eq < 0 ? { key: rl } : { key: rl.slice(0, eq), value: rl.slice(eq + 1) };
      if (!requireLabel.key) errors.push(`policy.namespaces.requireLabel "${rl}" has no key`);
    }
  }

  const allowAdopt = s['allowAdopt'] ?? false;
  if (typeof allowAdopt !== 'boolean') errors.push('policy.allowAdopt must be true or false');
  const takeOver = s['takeOver'] ?? true;
  if (typeof takeOver !== 'boolean') errors.push('policy.takeOver must be true or false');

  const secretTypes = new Set(
    (stringList(s['secretTypes'], 'policy.secretTypes', errors) ?? DEFAULT_SECRET_TYPES).filter(
      (t) => !NEVER_ALLOWED_TYPES.includes(t),
    ),
  );
  const deniedDomains =
    stringList(md['deniedDomains'], 'policy.metadata.deniedDomains', errors) ??
    DEFAULT_DENIED_DOMAINS;
  const allowedKeys = new Set(
    stringList(md['allowedKeys'], 'policy.metadata.allowedKeys', errors) ?? DEFAULT_ALLOWED_KEYS,
  );
  const foreignOwnership =
    stringList(md['foreignOwnership'], 'policy.metadata.foreignOwnership', errors) ??
    FOREIGN_OWNERSHIP_PATTERNS;
  foreignOwnership.forEach((p, i) => {
    const problem = foreignPatternProblem(p);
    if (problem) errors.push(`policy.metadata.foreignOwnership[${i}]: ${problem}`);
  });
  if (errors.length > 0) {
    throw new Error(`invalid policy (MIRRORHUB_POLICY): ${errors.join('; ')}`);
  }

  const always = new Set([...ALWAYS_DENIED_NAMESPACES, agentNamespace]);
  /** A key under a denied domain (or a subdomain of one), not explicitly allowed. */
  const keyDenied = (key: string): string | undefined => {
    if (key.startsWith(RESERVED_PREFIX) || allowedKeys.has(key)) return undefined;
    const slash = key.indexOf('/');
    if (slash < 0) return undefined;
    const prefix = key.slice(0, slash).toLowerCase();
    return deniedDomains.find((d) => prefix === d || prefix.endsWith(`.${d}`));
  };

  /** The ownership pattern of another controller that `key` matches; it wins over allowedKeys. */
  const keyForeign = (key: string): string | undefined =>
    key.startsWith(RESERVED_PREFIX) ? undefined : findKeyPattern(key, foreignOwnership);

  return {
    allowAdopt: allowAdopt as boolean,
    takeOver: takeOver as boolean,
    foreignOwnership,
    checkDelivery(copy) {
      if (copy.kind === 'Secret') {
        const type = copy.type ?? 'Opaque';
        if (!secretTypes.has(type)) {
          return deny(
            'secretTypes',
            NEVER_ALLOWED_TYPES.includes(type)
              ? `Secret type ${type} is never written (it would mint credentials)`
              : `Secret type ${type} is not in this cluster's allowed types (${[...secretTypes].join(', ')})`,
          );
        }
      }
      const maps = [
        ['label', 'Labels', copy.labels],
        ['annotation', 'Annotations', copy.annotations],
      ] as const;
      // Ownership marks first: they win over allowedKeys, and the admission policy checks them
      // first too.
      for (const [what, field, map] of maps) {
        for (const key of Object.keys(map ?? {})) {
          const foreign = keyForeign(key);
          if (!foreign) continue;
          // The hub drops source keys on the default list, so this one comes from the mirror's
          // template (or from the source, for a key the owner added to the list).
          const reason = foreignOwnershipReason(foreign) ?? `it matches "${foreign}"`;
          return deny(
            'metadata.foreignOwnership',
            `${what} ${key} is another controller's ownership or tracking mark (${reason}), which copies never carry here (drop it: template.${field.toLowerCase()} adds it, template.remove${field} drops a source's; or ask the cluster owner to take "${foreign}" out of policy.metadata.foreignOwnership)`,
          );
        }
      }
      for (const [what, field, map] of maps) {
        for (const key of Object.keys(map ?? {})) {
          const domain = keyDenied(key);
          if (domain) {
            return deny(
              'metadata.deniedDomains',
              `${what} ${key} is under ${domain}, which copies may not carry here (drop it with template.remove${field}, or ask the cluster owner to add it to policy.metadata.allowedKeys)`,
            );
          }
        }
      }
      return undefined;
    },
    checkNamespace({ name, labels }) {
      if (always.has(name)) {
        return deny(
          'namespaces.always-denied',
          `namespace ${name} is never written by mirrorhub (system or agent namespace)`,
        );
      }
      const denied = denyList.find((p) => p.matches(name));
      if (denied) {
        return deny(
          'namespaces.deny',
          `namespace ${name} matches denied pattern "${denied.pattern}"`,
        );
      }
      if (allow.length > 0 && !allow.some((p) => p.matches(name))) {
        return deny(
          'namespaces.allow',
          `namespace ${name} matches none of the allowed patterns (${allow.map((p) => `"${p.pattern}"`).join(', ')})`,
        );
      }
      if (requireLabel) {
        const v =
          labels && Object.hasOwn(labels, requireLabel.key) ? labels[requireLabel.key] : undefined;
        if (v === undefined || (requireLabel.value !== undefined && v !== requireLabel.value)) {
          const want =
            requireLabel.value === undefined
              ? requireLabel.key
              : `${requireLabel.key}=${requireLabel.value}`;
          return deny(
            'namespaces.requireLabel',
            `namespace ${name} does not carry the label ${want}`,
          );
        }
      }
      return undefined;
    },
    adoptDenied() {
      return deny(
        'allowAdopt',
        "the target name is taken by an object mirrorhub does not own, and this cluster's policy does not allow Adopt",
      );
    },
    takeOverOff(what) {
      return `${what}; this cluster's policy turned takeover off (policy.takeOver: false), so it is left as it is`;
    },
    summary: {
      alwaysDenied: [...always],
      allow: allow.map((p) => p.pattern),
      deny: denyList.map((p) => p.pattern),
      requireLabel: rl || undefined,
      allowAdopt,
      takeOver,
      secretTypes: [...secretTypes],
      deniedDomains,
      allowedKeys: [...allowedKeys],
      foreignOwnership,
    },
  };
}
