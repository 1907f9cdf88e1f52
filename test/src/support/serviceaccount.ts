// Acting as the identities the charts create: a chart's ServiceAccount (through TokenRequest)
// or the hub's group in a follower (through impersonation), plus what a process needs to run as
// the chart's Deployment would run it (env, Secret volumes, kubeconfig file).
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import {
  AuthorizationV1Api,
  CoreV1Api,
  KubeConfig,
  type V1Deployment,
  type V1ResourceAttributes,
} from '@kubernetes/client-node';

export interface ServiceAccountRef {
  namespace: string;
  name: string;
  /** Token lifetime; the API server's minimum is 600 (default 3600). */
  expirationSeconds?: number;
}

/**
 * A KubeConfig that authenticates as `sa` with a fresh bound token from TokenRequest, against
 * the same API server (and CA) as `admin`. The ServiceAccount must exist (the chart makes it).
 */
export async function serviceAccountKubeConfig(
  admin: KubeConfig,
  sa: ServiceAccountRef,
): Promise<KubeConfig> {
  const cluster = admin.getCurrentCluster();
  if (!cluster)
    throw new Error('serviceAccountKubeConfig: the admin KubeConfig has no current cluster');
  const tr = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    namespace: sa.namespace,
    name: sa.name,
    body: { spec: { audiences: [], expirationSeconds: sa.expirationSeconds ?? 3600 } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`TokenRequest for ${sa.namespace}/${sa.name} returned no token`);
  const user = `system:serviceaccount:${sa.namespace}:${sa.name}`;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: cluster.name }],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: cluster.name, user }],
    currentContext: user,
  });
  return kc;
}

/** What to impersonate: a username and (at most one) group, as an EKS access entry maps to. */
export interface Impersonation {
  user: string;
  group?: string;
}

/**
 * A KubeConfig that sends every request as `admin` with Impersonate-User / Impersonate-Group
 * headers, so the API server authorizes it as that user and group (plus system:authenticated).
 * client-node only knows Impersonate-User from a kubeconfig; the group header is added here.
 */
export function impersonatingKubeConfig(admin: KubeConfig, as: Impersonation): KubeConfig {
  const kc = new ImpersonatingKubeConfig(as);
  kc.loadFromString(admin.exportConfig());
  return kc;
}

class ImpersonatingKubeConfig extends KubeConfig {
  constructor(private readonly as: Impersonation) {
    super();
  }

  private headers(): Record<string, string> {
    return {
      'Impersonate-User': this.as.user,
      ...(this.as.group ? { 'Impersonate-Group': this.as.group } : {}),
    };
  }

  // Used by makeApiClient() clients.
  override async applySecurityAuthentication(
    context: Parameters<KubeConfig['applySecurityAuthentication']>[0],
  ): Promise<void> {
    await super.applySecurityAuthentication(context);
    for (const [k, v] of Object.entries(this.headers())) context.setHeaderParam(k, v);
  }

  // Used by Watch and the other raw-request helpers.
  override async applyToHTTPSOptions(
    opts: Parameters<KubeConfig['applyToHTTPSOptions']>[0],
  ): Promise<void> {
    await super.applyToHTTPSOptions(opts);
    opts.headers = { ...(opts.headers ?? {}), ...this.headers() };
  }
}

/** A SelfSubjectAccessReview as the identity of `kc`: may it do this? */
export async function canI(kc: KubeConfig, attrs: V1ResourceAttributes): Promise<boolean> {
  const review = await kc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
    body: { spec: { resourceAttributes: attrs } },
  });
  return review.status?.allowed === true;
}

/** Writes `kc` as a kubeconfig file (mode 0600) for a process started with KUBECONFIG=path. */
export async function writeKubeConfig(kc: KubeConfig, path: string): Promise<string> {
  await writeFile(path, kc.exportConfig(), { mode: 0o600 });
  await chmod(path, 0o600);
  return path;
}

/**
 * The environment the chart's Deployment gives its first container, resolved as the kubelet
 * would for a pod named `podName`: plain values as they are, downward-API fieldRefs for
 * metadata.name and metadata.namespace filled in. Anything else (secretKeyRef, ...) throws, so a
 * test never runs a process with an env the pod would not have.
 */
export function deploymentEnv(deployment: V1Deployment, podName: string): Record<string, string> {
  const container = deployment.spec?.template.spec?.containers[0];
  if (!container) throw new Error('deploymentEnv: the Deployment has no container');
  const namespace = deployment.metadata?.namespace ?? 'default';
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    if (e.value !== undefined) {
      env[e.name] = e.value;
      continue;
    }
    const field = e.valueFrom?.fieldRef?.fieldPath;
    if (field === 'metadata.name') env[e.name] = podName;
    else if (field === 'metadata.namespace') env[e.name] = namespace;
    else
      throw new Error(
        `deploymentEnv: ${e.name} comes from ${JSON.stringify(e.valueFrom)}, which a test cannot resolve`,
      );
  }
  return env;
}

/** The container's args (the entry point inside the image, e.g. /app/hub/dist/main.js). */
export function deploymentArgs(deployment: V1Deployment): string[] {
  return deployment.spec?.template.spec?.containers[0]?.args ?? [];
}

/**
 * The container's Secret volumes, as the kubelet mounts them: each Secret's keys (or the listed
 * items) written under `root` + mountPath. Returns mountPath -> the directory that stands in
 * for it, for `relocateEnv`.
 */
export async function mountSecretVolumes(
  admin: KubeConfig,
  deployment: V1Deployment,
  root: string,
): Promise<Map<string, string>> {
  const pod = deployment.spec?.template.spec;
  const namespace = deployment.metadata?.namespace ?? 'default';
  const mounts = new Map<string, string>();
  for (const m of pod?.containers[0]?.volumeMounts ?? []) {
    const volume = pod?.volumes?.find((v) => v.name === m.name);
    if (!volume?.secret?.secretName) continue;
    const secret = await admin
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ namespace, name: volume.secret.secretName });
    const dir = join(root, m.mountPath);
    await mkdir(dir, { recursive: true });
    const items =
      volume.secret.items ?? Object.keys(secret.data ?? {}).map((key) => ({ key, path: key }));
    for (const { key, path } of items) {
      const b64 = secret.data?.[key];
      if (b64 === undefined)
        throw new Error(`Secret ${volume.secret.secretName} has no key ${key}`);
      await writeFile(join(dir, path), Buffer.from(b64, 'base64'), { mode: 0o400 });
    }
    mounts.set(m.mountPath, dir);
  }
  return mounts;
}

/** Env values that name a path under a mounted volume, pointed at where it was mounted here. */
export function relocateEnv(
  env: Record<string, string>,
  mounts: ReadonlyMap<string, string>,
): Record<string, string> {
  const out = { ...env };
  for (const [k, v] of Object.entries(out)) {
    for (const [mountPath, dir] of mounts) {
      if (v === mountPath || v.startsWith(`${mountPath}/`))
        out[k] = dir + v.slice(mountPath.length);
    }
  }
  return out;
}
