// Which Vault paths a mirror may use, decided with no I/O (table tests in paths.test.ts). A
// Vault path is authorised, not trusted: the hub's request carries the connection's token, so a
// path a tenant writes is a request made with an identity that is not theirs.
//
// Rules, in the order the hub applies them:
// 1. Reserved engines, for EVERY mirror (SecretMirror or ClusterSecretMirror, any connection,
//    source or destination): never a path under sys/, auth/, identity/ or cubbyhole/. Those are
//    Vault's control plane and the connection's own identity (auth/token/lookup-self prints the
//    token, auth/token/revoke-self kills it, cubbyhole/ is the token's private store); no
//    mirror's source or destination lives there, so refusing them costs nobody anything and
//    keeps an admin's typo or a tenant's own VaultConnection from turning the hub against its
//    token. (resolveVaultRef in @mirrorhub/shared applies it, with `RESERVED_MOUNTS`.)
// 2. KV sources and destinations, for every mirror: the path's mount must really be a KV mount,
//    as Vault says (kv.ts, whatever kvVersion states): the KV code reads, writes and deletes
//    with KV semantics, which on another engine are different requests altogether.
// 3. A SecretMirror through a ClusterVaultConnection, whose identity is the admin's: only the
//    paths the connection grants in spec.tenantPaths (`grantRefusal`), and a dynamic source only
//    at a credential endpoint of a credential-issuing engine (`dynamicEngineRefusal`, against
//    the mount type Vault reports). A namespace's own VaultConnection and a ClusterSecretMirror
//    (an admin's) are not restricted by 3: their identity is their own.
import type { ClusterVaultConnection } from '@mirrorhub/shared/api/index';
import { RESERVED_MOUNTS } from '@mirrorhub/shared/api/index';

export { RESERVED_MOUNTS };

export type TenantPaths = ClusterVaultConnection['spec']['tenantPaths'];
export type GrantUse = 'read' | 'dynamic';

/**
 * Whether `grant` (Vault policy glob syntax: `+` one segment, a trailing `*` any rest;
 * `{namespace}` the mirror's namespace) matches the logical path `path` (normalised, no empty
 * segments).
 */
export function grantMatches(grant: string, namespace: string, path: string): boolean {
  const pattern = grant.split('{namespace}').join(namespace);
  const prefix = pattern.endsWith('*');
  const body = prefix ? pattern.slice(0, -1) : pattern;
  const want = body.split('/');
  const have = path.split('/');
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const h = have[i];
    if (h === undefined) return false;
    const last = i === want.length - 1;
    if (w === '+') {
      if (h === '') return false;
      continue;
    }
    if (last && prefix) {
      // The rest of the path may follow this segment's start (`secret/app*` covers `secret/apple`
      // and `secret/app/x`, as a Vault policy does).
      return h.startsWith(w);
    }
    if (w !== h) return false;
  }
  return want.length === have.length;
}

/**
 * Why a SecretMirror in `namespace` may not `use` `path` through ClusterVaultConnection `name`
 * (undefined: it may): the path must match a grant of spec.tenantPaths for that use.
 */
export function grantRefusal(
  name: string,
  tenantPaths: TenantPaths,
  namespace: string,
  path: string,
  use: GrantUse,
): string | undefined {
  const grants = tenantPaths?.[use] ?? [];
  if (grants.some((g) => grantMatches(g, namespace, path))) return undefined;
  const what = use === 'read' ? 'KV source' : 'dynamic source';
  return `ClusterVaultConnection "${name}" does not grant SecretMirrors in namespace "${namespace}" the ${what} ${path} (rule: a shared connection's paths are authorised in its spec.tenantPaths.${use}${grants.length ? `, which lists ${grants.join(', ')}` : ', which is empty'}): ask its administrator to grant the path, or use a VaultConnection of your own namespace`;
}

// ---- credential-issuing engines -------------------------------------------------------------------

export interface DynamicEngine {
  /** Credential endpoints inside the mount, in grant syntax (`creds/+`). */
  paths: readonly string[];
  /** Methods the endpoints issue on (GET unless the engine issues on a write). */
  methods: readonly ('GET' | 'POST')[];
}

/**
 * The engines whose credential endpoints a SecretMirror may read as a dynamic source through a
 * shared connection, by the mount type Vault reports, and only their credential endpoints: on
 * the same mounts, other paths reconfigure the engine (database/rotate-root/<conn> rotates the
 * root password, <mount>/config/... rewrites the connection), which a tenant must never reach.
 * GET where the engine issues on a read; POST only where issuing is a write (kubernetes and ssh
 * take parameters; AWS STS takes both). Left out on purpose: kv/generic/cubbyhole (no leases,
 * and KV is read as KV), pki (a certificate is leased only with generate_lease and issue needs
 * a common_name the hub does not send), transit/totp (no credentials with a lease), and plugins
 * under other type names (an admin's ClusterSecretMirror can still use them).
 */
export const DYNAMIC_ENGINES: Readonly<Record<string, DynamicEngine>> = {
  database: { paths: ['creds/+'], methods: ['GET'] },
  aws: { paths: ['creds/+'], methods: ['GET'] },
  'aws-sts': { paths: ['sts/+'], methods: ['GET', 'POST'] },
  gcp: {
    paths: [
      'roleset/+/token',
      'roleset/+/key',
      'static-account/+/token',
      'static-account/+/key',
      'impersonated-account/+/token',
    ],
    methods: ['GET'],
  },
  azure: { paths: ['creds/+'], methods: ['GET'] },
  alicloud: { paths: ['creds/+'], methods: ['GET'] },
  mongodbatlas: { paths: ['creds/+'], methods: ['GET'] },
  rabbitmq: { paths: ['creds/+'], methods: ['GET'] },
  consul: { paths: ['creds/+'], methods: ['GET'] },
  nomad: { paths: ['creds/+'], methods: ['GET'] },
  terraform: { paths: ['creds/+'], methods: ['GET'] },
  ldap: { paths: ['creds/+'], methods: ['GET'] },
  openldap: { paths: ['creds/+'], methods: ['GET'] },
  kubernetes: { paths: ['creds/+'], methods: ['POST'] },
  ssh: { paths: ['creds/+'], methods: ['POST'] },
};

/** The AWS engine's entries: one mount type, two endpoint families with different methods. */
function enginesOf(type: string): DynamicEngine[] {
  if (type === 'aws') return [DYNAMIC_ENGINES.aws!, DYNAMIC_ENGINES['aws-sts']!];
  const e = Object.prototype.hasOwnProperty.call(DYNAMIC_ENGINES, type)
    ? DYNAMIC_ENGINES[type]
    : undefined;
  return e && type !== 'aws-sts' ? [e] : [];
}

/**
 * Why a SecretMirror may not read `path` with `method` as a dynamic source through a shared
 * connection, given the mount Vault reports for it (`mount` without slashes, `type` its engine).
 */
export function dynamicEngineRefusal(
  path: string,
  mount: string,
  type: string,
  method: 'GET' | 'POST',
): string | undefined {
  const rule =
    "rule: a SecretMirror's dynamic source through a shared connection is a credential endpoint of a credential-issuing engine";
  const engines = enginesOf(type);
  if (engines.length === 0) {
    return `${path} is in mount ${mount}/ of type "${type}", which does not issue leased credentials (${rule}: ${Object.keys(
      DYNAMIC_ENGINES,
    )
      .filter((t) => t !== 'aws-sts')
      .join(', ')})`;
  }
  const inside = path === mount ? '' : path.slice(mount.length + 1);
  const endpoint = engines.find((e) => e.paths.some((p) => grantMatches(p, '', inside)));
  if (!endpoint) {
    const all = engines.flatMap((e) => e.paths.map((p) => `${mount}/${p}`));
    return `${path} is not a credential endpoint of the ${type} engine at ${mount}/ (${rule}: ${all.join(', ')})`;
  }
  if (!endpoint.methods.includes(method)) {
    return `${path} issues credentials on ${endpoint.methods.join(' or ')}, not ${method} (${rule}, read with the method the engine issues on: set dynamic.method to ${endpoint.methods[0]})`;
  }
  return undefined;
}
