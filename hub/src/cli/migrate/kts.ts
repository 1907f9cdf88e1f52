// KTS mirrors (ktsstudio/mirrors): mirrors.kts.studio SecretMirror, namespaced.
//   v1alpha2: source {type: secret|vault, name, vault}, destination {type: namespaces|vault,
//             namespaces: [Go regexps], vault}, deletePolicy delete|retain, pollPeriodSeconds
//   v1alpha1: source {name}, destination {namespaceRegex}; KTS converts it to v1alpha2 with
//             namespaces [namespaceRegex] (api/v1alpha1/secretmirror_conversion.go)
// Namespaces match as Go regexp MatchString (unanchored, pkg/nskeeper). Copies are named as
// source.name and carry mirrors.kts.studio/owned-by: <mirror namespace>/<mirror name>; a copy
// never overwrites an object without that mark (so never the source). Vault paths are raw
// logical KV v2 paths (<mount>/data/<path>); values are written base64-encoded ({"data":
// secret.Data}) and decoded on read. Vault auth: token or approle, from a Secret
// (api/v1alpha2/vault.go). A Vault destination is always Retain: deleting the mirror leaves the
// Vault secret (the webhook forces it; dest_vault.go Cleanup does nothing).
import type {
  MirrorDestination,
  VaultAuth,
  VaultConnectionSpec,
} from '@mirrorhub/shared/api/index';
import {
  API_VERSION,
  buildRule,
  predecessorMark,
  compact,
  ref,
  type Inventory,
  type KtsMirror,
  type KtsVault,
  type Options,
  type Translation,
} from './model.js';
import { oldToolSelects, rewritePattern } from './patterns.js';

export const KTS = {
  ownedBy: 'mirrors.kts.studio/owned-by',
} as const;

/** Converts a v1alpha1 object as KTS's conversion does; v1alpha2 passes unchanged. */
export function normalizeKts(m: KtsMirror): KtsMirror {
  if (!m.apiVersion?.endsWith('/v1alpha1')) return m;
  const d = m.spec?.destination ?? {};
  return {
    ...m,
    spec: {
      ...m.spec,
      source: { type: 'secret', name: m.spec?.source?.name ?? '' },
      destination: {
        type: 'namespaces',
        // As KTS's conversion: always one pattern, "" (every namespace) when unset; a v1alpha1
        // destination.namespace is not carried over by it either.
        namespaces: [d.namespaceRegex ?? ''],
      },
    },
  };
}

type Conn =
  { ok: true; ref: { kind: 'VaultConnection'; name: string } } | { ok: false; reason: string };

/**
 * A KTS Vault path (a raw logical path) as mirrorhub's `<mount>/<path>` and KV version:
 * `<mount>/data/<path>` is KV v2; any other path is read and written by KTS as a KV v1 secret
 * holding its values under one key `data`, which `encoding: Base64` reads, and whose flat
 * layout mirrorhub writes KTS reads as well.
 */
function kvPath(
  raw: string | undefined,
  field: string,
): { ok: true; path: string; kvVersion: 1 | 2 } | { ok: false; reason: string } {
  const p = (raw ?? '').replace(/^\/+/, '').replace(/\/+$/, '');
  if (!/^[^/]+\/.+/.test(p)) {
    return {
      ok: false,
      reason: `${field}.path ${JSON.stringify(raw ?? '')} names no secret under a mount`,
    };
  }
  const m = /^([^/]+)\/data\/(.+)$/.exec(p);
  return m
    ? { ok: true, path: `${m[1]}/${m[2]}`, kvVersion: 2 }
    : { ok: true, path: p, kvVersion: 1 };
}

export function translateKts(inv: Inventory, opts: Options, out: Translation): void {
  const connections = new Map<string, string>(); // namespace + spec JSON -> name
  for (const raw of inv.ktsMirrors) {
    const m = normalizeKts(raw);
    const ns = m.metadata.namespace ?? '';
    const name = m.metadata.name;
    const object = ref('KTS SecretMirror', m.metadata);
    const addedKeys: string[] = [];
    const refuse = (reason: string) => {
      // A connection made for a refused mirror is not emitted: forget it.
      for (const k of addedKeys) connections.delete(k);
      out.refusals.push({ tool: 'KTS', object, reason });
    };
    const spec = m.spec ?? {};
    const srcType = (spec.source?.type || 'secret').toLowerCase();
    const dstType = (spec.destination?.type || 'namespaces').toLowerCase();
    const copyName = spec.source?.name ?? '';
    const pending: Record<string, unknown>[] = [];
    const kvOneNote = (field: string, path: string) =>
      out.notes.push(
        `${object}: ${field}.path ${path} has no data/ segment, so it is translated as a KV v1 secret (kvVersion: 1); if its mount is not KV v1 (a dynamic engine such as database/creds), do not apply this mirror: KTS's base64 decoding of leased credentials has no mirrorhub equivalent`,
      );

    const connection = (v: KtsVault | undefined, field: string, role: string): Conn => {
      if (!v?.addr) return { ok: false, reason: `${field}.addr is empty` };
      let url: URL;
      try {
        url = new URL(v.addr);
      } catch {
        return { ok: false, reason: `${field}.addr ${JSON.stringify(v.addr)} is not a URL` };
      }
      const loopback =
        ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) ||
        url.hostname.startsWith('127.');
      if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
        return {
          ok: false,
          reason: `${field}.addr ${v.addr}: mirrorhub sends Vault credentials only over https:// (http:// only to a loopback address); serve Vault over TLS, then migrate`,
        };
      }
      let auth: VaultAuth;
      const approle = v.auth?.approle;
      const token = v.auth?.token;
      const foreign = (secretNs: string | undefined) =>
        secretNs && secretNs !== ns
          ? `${field}.auth reads its Secret from namespace ${secretNs}; a mirrorhub VaultConnection reads Secrets of its own namespace (${ns}) only: copy the Secret into ${ns} first`
          : undefined;
      if (approle?.secretRef?.name) {
        const bad = foreign(approle.secretRef.namespace);
        if (bad) return { ok: false, reason: bad };
        auth = {
          appRole: {
            mountPath: approle.appRolePath || 'approle',
            roleIdSecretRef: { name: approle.secretRef.name, key: approle.roleIDKey || 'role-id' },
            secretIdSecretRef: {
              name: approle.secretRef.name,
              key: approle.secretIDKey || 'secret-id',
            },
          },
        };
      } else if (token?.secretRef?.name) {
        const bad = foreign(token.secretRef.namespace);
        if (bad) return { ok: false, reason: bad };
        auth = {
          token: { secretRef: { name: token.secretRef.name, key: token.tokenKey || 'token' } },
        };
      } else {
        return {
          ok: false,
          reason: `${field}.auth has neither approle.secretRef.name nor token.secretRef.name; mirrorhub logs in with token, appRole or kubernetes only`,
        };
      }
      const connSpec: VaultConnectionSpec = { address: v.addr, auth };
      const key = `${ns}\n${JSON.stringify(connSpec)}`;
      let connName = connections.get(key);
      if (!connName) {
        connName = `${name}-${role}`;
        connections.set(key, connName);
        addedKeys.push(key);
        pending.push({
          apiVersion: API_VERSION,
          kind: 'VaultConnection',
          metadata: { name: connName, namespace: ns },
          spec: connSpec,
        });
      }
      return { ok: true, ref: { kind: 'VaultConnection', name: connName } };
    };

    let source: Record<string, unknown>;
    if (srcType === 'secret') {
      if (!copyName) return refuse('source.name is empty');
      source = { kind: 'Secret', name: copyName };
    } else if (srcType === 'vault') {
      const path = kvPath(spec.source?.vault?.path, 'source.vault');
      if (!path.ok) return refuse(path.reason);
      const c = connection(spec.source?.vault, 'source.vault', 'vault');
      if (!c.ok) return refuse(c.reason);
      // KTS stores values base64-encoded: read them as KTS wrote them.
      source = {
        kind: 'Vault',
        vault: {
          connectionRef: c.ref,
          path: path.path,
          kvVersion: path.kvVersion,
          encoding: 'Base64',
        },
      };
      if (path.kvVersion === 1) kvOneNote('source.vault', path.path);
    } else {
      return refuse(`source.type ${JSON.stringify(spec.source?.type)} is neither secret nor vault`);
    }

    const mirror: Record<string, unknown> = {
      apiVersion: API_VERSION,
      kind: 'SecretMirror',
      metadata: { name, namespace: ns },
    };
    const pollPeriodSeconds =
      spec.pollPeriodSeconds !== undefined ? Math.max(10, spec.pollPeriodSeconds) : undefined;

    if (dstType === 'vault') {
      const path = kvPath(spec.destination?.vault?.path, 'destination.vault');
      if (!path.ok) return refuse(path.reason);
      if (path.kvVersion === 1) kvOneNote('destination.vault', path.path);
      const c = connection(
        spec.destination?.vault,
        'destination.vault',
        srcType === 'vault' ? 'vault-destination' : 'vault',
      );
      if (!c.ok) return refuse(c.reason);
      mirror['spec'] = compact({
        source,
        destination: {
          vault: {
            connectionRef: c.ref,
            path: path.path,
            kvVersion: path.kvVersion,
            encoding: 'Base64',
          },
        },
        // KTS never deletes what it wrote to Vault.
        deletePolicy: 'Retain',
        pollPeriodSeconds,
      });
      out.rules.push({
        tool: 'KTS',
        object,
        mirror: `SecretMirror ${ns}/${name}`,
        kind: 'Secret',
        source: { namespace: ns, name: copyName },
        targetName: copyName,
        before: [],
        after: [],
        dropped: [],
        elsewhere: `Vault ${path.path}`,
        mark: () => ({ ours: false, why: 'a Vault destination has no copies in namespaces' }),
      });
      out.notes.push(
        `${object}: writes ${path.path} in KTS's encoding (encoding: Base64) so KTS clusters still read it; deletePolicy Retain keeps it when the mirror is deleted, as KTS did`,
      );
      out.objects.push(...pending, mirror);
      continue;
    }
    if (dstType !== 'namespaces') {
      return refuse(
        `destination.type ${JSON.stringify(spec.destination?.type)} is neither namespaces nor vault`,
      );
    }
    if (!copyName) return refuse('source.name is empty: KTS names the copies after it');
    const patterns = spec.destination?.namespaces ?? [];
    if (patterns.length === 0)
      return refuse('destination.namespaces is empty: it selects no namespace');
    const rewritten: string[] = [];
    for (const p of patterns) {
      const r = rewritePattern(p, 'substring');
      if (!r.ok) return refuse(`destination.namespaces: ${r.reason}`);
      rewritten.push(r.pattern);
    }
    const dest: MirrorDestination = { namespaces: rewritten };
    if (srcType === 'vault') dest.name = copyName;
    const owner = `${ns}/${name}`;
    const mark = predecessorMark({
      targetKind: 'Secret',
      source: srcType === 'secret' ? { namespace: ns, name: copyName } : undefined,
      mirror: { kind: 'SecretMirror', name },
    });
    const sourceNs = srcType === 'secret' ? ns : '';
    const before = inv.namespaces
      .filter((n) => n.name !== sourceNs)
      .filter((n) => patterns.some((p) => oldToolSelects(p, 'substring', n.name)))
      .map((n) => n.name);
    const rule = buildRule(
      {
        tool: 'KTS',
        object,
        mirror: `SecretMirror ${owner}`,
        kind: 'Secret',
        source: { namespace: sourceNs, name: copyName },
        targetName: copyName,
        destination: dest,
        before,
        mark,
      },
      inv,
      opts,
      out,
    );
    if (!rule) continue;
    const retain = (spec.deletePolicy ?? '').toLowerCase() === 'retain';
    mirror['spec'] = compact({
      source,
      destination: dest,
      deletePolicy: retain ? 'Retain' : 'Delete',
      pollPeriodSeconds,
    });
    if (spec.pollPeriodSeconds !== undefined && spec.pollPeriodSeconds < 10) {
      out.notes.push(
        `${object}: pollPeriodSeconds ${spec.pollPeriodSeconds} raised to mirrorhub's minimum 10`,
      );
    }
    out.objects.push(...pending, mirror);
  }
}
