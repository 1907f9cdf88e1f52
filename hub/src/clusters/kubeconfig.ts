// A follower's kubeconfig from a Secret (MirrorCluster.spec.kubeconfigSecretRef), loaded in
// memory only and checked before use.
//
// Whoever may write that Secret decides what the hub does with it, so a kubeconfig that would
// make the hub run a program (`exec` credential plugins, legacy `auth-provider`s) or read a file
// from the hub's own filesystem (client-certificate, client-key, certificate-authority, tokenFile
// as paths) is refused: only inline credentials (token, client-certificate-data / client-key-data,
// certificate-authority-data, username/password) are accepted. Only the current context is used.
//
// The cluster's `proxy-url` (http:// or https://; SOCKS is refused) is honoured as client-go
// honours it: every connection to the server is a CONNECT tunnel through it, whatever
// HTTPS_PROXY / NO_PROXY say. Without one, the hub's egress proxy applies as to every follower.
import {
  kubeconfigContextAccess,
  type KubeAccess,
  type KubeconfigContext,
} from '@mirrorhub/shared/kit/k8s/access';
import { parseYaml } from '@mirrorhub/shared/kit/k8s/yaml';
import { apiServerAgent, parseProxyUrl, type ProxyEnv } from './egress-proxy.js';

export type KubeconfigResult = { ok: true; kubeConfig: KubeAccess } | { ok: false; error: string };

const FILE_FIELDS_USER = ['client-certificate', 'client-key', 'tokenFile', 'token-file'];
const FILE_FIELDS_CLUSTER = ['certificate-authority'];

/**
 * Parses `text` (from Secret `where`) into a KubeAccess, or says what is wrong with it and how
 * to fix it. No I/O: nothing is read, nothing is run.
 */
export function parseKubeconfig(
  text: string,
  where: string,
  opts: { proxy?: ProxyEnv } = {},
): KubeconfigResult {
  let doc: unknown;
  try {
    doc = parseYaml(text) as unknown;
  } catch (err) {
    return fail(where, `is not YAML (${yamlReason(err)})`);
  }
  if (!isObject(doc)) return fail(where, 'is not a kubeconfig (expected a YAML mapping)');
  const contexts = namedList(doc['contexts'], 'context');
  const clusters = namedList(doc['clusters'], 'cluster');
  const users = namedList(doc['users'], 'user');
  const currentName =
    typeof doc['current-context'] === 'string' && doc['current-context']
      ? doc['current-context']
      : contexts.length === 1
        ? contexts[0]!.name
        : undefined;
  if (!currentName) {
    return fail(where, 'has no current-context (and not exactly one context to default to)');
  }
  const ctx = contexts.find((c) => c.name === currentName)?.value;
  if (!ctx) return fail(where, `names current-context "${currentName}", which it does not define`);
  const clusterName = typeof ctx['cluster'] === 'string' ? ctx['cluster'] : '';
  const userName = typeof ctx['user'] === 'string' ? ctx['user'] : '';
  const cluster = clusters.find((c) => c.name === clusterName)?.value;
  if (!cluster)
    return fail(
      where,
      `context "${currentName}" names cluster "${clusterName}", which it does not define`,
    );
  const server = cluster['server'];
  if (typeof server !== 'string' || !/^https?:\/\/./.test(server)) {
    return fail(where, `cluster "${clusterName}" has no http(s) server URL`);
  }
  for (const f of FILE_FIELDS_CLUSTER) {
    if (cluster[f] !== undefined) {
      return fail(
        where,
        `cluster "${clusterName}" refers to a file (${f}); the hub reads no files for a MirrorCluster: inline it as ${f}-data`,
      );
    }
  }
  let proxyUrl: URL | undefined;
  const rawProxy = cluster['proxy-url'];
  if (rawProxy !== undefined) {
    try {
      if (typeof rawProxy !== 'string' || !rawProxy) throw new Error('is not a URL');
      proxyUrl = parseProxyUrl(rawProxy, 'proxy-url');
    } catch (err) {
      return fail(
        where,
        `cluster "${clusterName}" has a proxy-url the hub cannot use: ${firstLine(err)}`,
      );
    }
  }
  const user = userName ? users.find((u) => u.name === userName)?.value : {};
  if (!user)
    return fail(
      where,
      `context "${currentName}" names user "${userName}", which it does not define`,
    );
  if (user['exec'] !== undefined || user['auth-provider'] !== undefined) {
    return fail(
      where,
      `user "${userName}" uses an ${user['exec'] !== undefined ? 'exec credential plugin' : 'auth-provider'}; the hub runs no programs for a MirrorCluster: use a ServiceAccount token or a client certificate inline (or spec.eks for EKS)`,
    );
  }
  for (const f of FILE_FIELDS_USER) {
    if (user[f] !== undefined) {
      return fail(
        where,
        `user "${userName}" refers to a file (${f}); the hub reads no files for a MirrorCluster: inline the credential (token, client-certificate-data, client-key-data)`,
      );
    }
  }
  const b64 = (v: unknown) =>
    typeof v === 'string' ? { data: Buffer.from(v, 'base64') } : undefined;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const parsed: KubeconfigContext = {
    file: where,
    context: currentName,
    server,
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
  };
  const set = <K extends keyof KubeconfigContext>(k: K, v: KubeconfigContext[K] | undefined) => {
    if (v !== undefined) parsed[k] = v;
  };
  set('namespace', str(ctx['namespace']));
  set('ca', b64(cluster['certificate-authority-data']));
  set('tlsServerName', str(cluster['tls-server-name']));
  set('cert', b64(user['client-certificate-data']));
  set('key', b64(user['client-key-data']));
  set('token', str(user['token']));
  set('username', str(user['username']));
  set('password', str(user['password']));
  let kc: KubeAccess;
  try {
    kc = withAgent(kubeconfigContextAccess(parsed), apiServerAgent(server, opts.proxy, proxyUrl));
  } catch (err) {
    return fail(where, `cannot be loaded (${firstLine(err)})`);
  }
  return { ok: true, kubeConfig: kc };
}

/** `access`, its connections made by `agent` (a proxy tunnel) when there is one. */
function withAgent(access: KubeAccess, agent: ReturnType<typeof apiServerAgent>): KubeAccess {
  if (!agent) return access;
  return {
    getCurrentCluster: () => access.getCurrentCluster(),
    async applyToHTTPSOptions(reqOpts) {
      await access.applyToHTTPSOptions(reqOpts);
      reqOpts.agent = agent;
    },
  };
}

function fail(where: string, what: string): KubeconfigResult {
  return { ok: false, error: `the kubeconfig in ${where} ${what}` };
}

function namedList(v: unknown, field: string): { name: string; value: Record<string, unknown> }[] {
  if (!Array.isArray(v)) return [];
  const out: { name: string; value: Record<string, unknown> }[] = [];
  for (const item of v) {
    if (!isObject(item) || typeof item['name'] !== 'string') continue;
    const value = item[field];
    out.push({ name: item['name'], value: isObject(value) ? value : {} });
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** What the YAML parser objected to and where, never the snippet of content it also carries. */
function yamlReason(err: unknown): string {
  // `yaml`'s message is "<reason> at line L, column C:" followed by the offending line.
  return firstLine(err).replace(/:$/, '');
}

/** The first line of an error message. */
function firstLine(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return (m.split('\n')[0] ?? '').slice(0, 200);
}
