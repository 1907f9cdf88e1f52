// Vault connections as a test writes and reads them (custom objects of the mirrorhub group),
// and OpenBao's kubernetes auth method pointed at a kit cluster; shared by the Vault suites.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import {
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type KubeConfig,
} from '@kubernetes/client-node';

import type { VaultClient, VaultEnvelope } from '@mirrorhub/hub/vault/index';
import type { Postgres } from '@mirrorhub/infra/components/index';
import { GROUP, VERSION } from '@mirrorhub/shared/api/index';

import { serviceAccountKubeConfig } from './serviceaccount.js';

export interface ConnectionView {
  spec?: Record<string, unknown>;
  status?: {
    ready?: boolean;
    message?: string;
    authMethod?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

export async function createObject(
  kc: KubeConfig,
  plural: string,
  body: Record<string, unknown>,
  namespace?: string,
): Promise<void> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const full = { apiVersion: `${GROUP}/${VERSION}`, ...body };
  if (namespace)
    await api.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural,
      body: full,
    });
  else await api.createClusterCustomObject({ group: GROUP, version: VERSION, plural, body: full });
}

export async function getObject(
  kc: KubeConfig,
  plural: string,
  name: string,
  namespace?: string,
): Promise<ConnectionView> {
  const api = kc.makeApiClient(CustomObjectsApi);
  return (
    namespace
      ? await api.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural,
          name,
        })
      : await api.getClusterCustomObject({ group: GROUP, version: VERSION, plural, name })
  ) as ConnectionView;
}

/**
 * Enable OpenBao's kubernetes auth method at `auth/kubernetes`, reviewing tokens against the
 * cluster of `admin` with a `reviewer` ServiceAccount bound to system:auth-delegator (created
 * here, with its namespace). Returns the reviewer's token, a secret the caller should scan for.
 */
export async function enableKubernetesAuth(
  root: VaultClient,
  admin: KubeConfig,
  cluster: { server: string; caPem: string },
  reviewer: { namespace: string; name: string },
): Promise<string> {
  await ensureServiceAccount(admin, reviewer);
  await admin.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
    body: {
      metadata: { name: `${reviewer.name}-tokenreview` },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'system:auth-delegator',
      },
      subjects: [{ kind: 'ServiceAccount', ...reviewer }],
    },
  });
  const jwt = (await serviceAccountKubeConfig(admin, reviewer)).getCurrentUser()?.token;
  if (!jwt) throw new Error(`no token for the reviewer ${reviewer.namespace}/${reviewer.name}`);
  const sys = (path: string, body: unknown) =>
    root.request<VaultEnvelope>({ method: 'POST', path, body });
  await sys('sys/auth/kubernetes', { type: 'kubernetes' });
  await sys('auth/kubernetes/config', {
    kubernetes_host: cluster.server,
    kubernetes_ca_cert: cluster.caPem,
    token_reviewer_jwt: jwt,
  });
  return jwt;
}

/** A ServiceAccount, and its namespace if it is missing. */
export async function ensureServiceAccount(
  admin: KubeConfig,
  sa: { namespace: string; name: string },
): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  await core
    .createNamespace({ body: { metadata: { name: sa.namespace } } })
    .catch((err: unknown) => {
      if ((err as { code?: number }).code !== 409) throw err;
    });
  await core.createNamespacedServiceAccount({
    namespace: sa.namespace,
    body: { metadata: { name: sa.name } },
  });
}

/**
 * OpenBao's database secrets engine at `db/`, pointed at the kit's PostgreSQL (connection `pg`),
 * with role `app` issuing login roles valid for `defaultTtl` and renewable up to `maxTtl`.
 */
export async function enableDatabaseEngine(
  root: VaultClient,
  pg: Postgres,
  ttl: { defaultTtl: string; maxTtl: string },
): Promise<void> {
  const sys = (path: string, body: unknown) =>
    root.request<VaultEnvelope>({ method: 'POST', path, body });
  await sys('sys/mounts/db', { type: 'database' });
  await sys('db/config/pg', {
    plugin_name: 'postgresql-database-plugin',
    connection_url: `postgresql://{{username}}:{{password}}@${pg.host}:${pg.port}/${pg.database}?sslmode=disable`,
    username: pg.user,
    password: pg.password,
    allowed_roles: ['app'],
  });
  await sys('db/roles/app', {
    db_name: 'pg',
    creation_statements: [
      `CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';`,
    ],
    default_ttl: ttl.defaultTtl,
    max_ttl: ttl.maxTtl,
  });
}

/** Does PostgreSQL have a role of that name? (asked as its superuser, with psql) */
export async function pgRoleExists(pg: Postgres, name: string): Promise<boolean> {
  const { stdout } = await promisify(execFile)(pg.bins.psql!, [
    pg.url,
    '-tAc',
    `SELECT count(*) FROM pg_roles WHERE rolname = '${name.replace(/'/g, "''")}'`,
  ]);
  return stdout.trim() === '1';
}
