// How a process reaches its API server, without loading @kubernetes/client-node.
//
// Why: importing client-node loads its whole generated API (every group, every model) into
// resident memory before anything has been done, most of what the agent's and the hub's memory
// targets allow (docs/BENCHMARKS.md, Start-up memory). The REST client (rest.ts), Events
// (events.ts), the list/watch transport (listwatch.ts) and leader election (controller/leader.ts)
// need just two things from a kubeconfig: the server URL and the TLS and auth options of one
// request. `KubeAccess` is that subset. client-node's KubeConfig already satisfies it, so code
// that has one passes it as is.
//
// Three ways to get one, none of which loads client-node in the common case:
// - `inClusterAccess()`: the pod's service account (token re-read as it rotates, CA).
// - a kubeconfig file, parsed here (`parseKubeconfig`): server, CA, client certificate/key,
//   token/tokenFile, basic auth, insecure-skip-tls-verify, tls-server-name, each as inline data
//   or as a file relative to the kubeconfig's directory, like kubectl.
// - what this parser does not do — `exec` plugins, `auth-provider`, `proxy-url`, several files
//   in KUBECONFIG to merge — goes to client-node's KubeConfig, imported on demand.

import { fs } from '../runtime/builtins.js';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import type https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

const { readFileSync, statSync } = fs;

/** The part of client-node's KubeConfig that talking to one API server needs. */
export interface KubeAccess {
  getCurrentCluster(): { server: string } | null;
  /** Sets TLS options and auth headers (may refresh a token) on one request's options. */
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Re-read a token file this often at most (kubelet rotates projected tokens well before expiry). */
const TOKEN_RELOAD_MS = 60_000;

/**
 * A bearer token read from `file`: at once (so a missing file fails at start-up), then again
 * when it is older than a minute and the file changed.
 */
function fileToken(file: string): () => string {
  let token = '';
  let readAt = 0;
  let mtime = 0;
  const current = (): string => {
    const now = Date.now();
    if (token && now - readAt < TOKEN_RELOAD_MS) return token;
    const m = statSync(file).mtimeMs;
    if (!token || m !== mtime) {
      token = readFileSync(file, 'utf8').trim();
      mtime = m;
    }
    readAt = now;
    return token;
  };
  current();
  return current;
}

/** The pod's own service account: KUBERNETES_SERVICE_HOST/PORT, token and CA from `dir`. */
export function inClusterAccess(
  env: Record<string, string | undefined> = process.env,
  dir: string = SERVICE_ACCOUNT_DIR,
): KubeAccess {
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'];
  if (!host || !port) {
    throw new Error('not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set');
  }
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const ca = readFileSync(join(dir, 'ca.crt'));
  const token = fileToken(join(dir, 'token'));
  return {
    getCurrentCluster: () => ({ server }),
    applyToHTTPSOptions(opts) {
      opts.ca = ca;
      opts.headers = { ...(opts.headers ?? {}), Authorization: `Bearer ${token()}` };
      return Promise.resolve();
    },
  };
}

// ---- kubeconfig files ---------------------------------------------------------------------------

/** Inline bytes (`*-data`, already decoded) or a file (absolute: resolved against the kubeconfig). */
export type KubeconfigBytes = { data: Buffer } | { path: string };

/** What one context of a kubeconfig says, for the cases handled without client-node. */
export interface KubeconfigContext {
  /** The kubeconfig file, for messages. */
  file: string;
  context: string;
  server: string;
  namespace?: string;
  ca?: KubeconfigBytes;
  cert?: KubeconfigBytes;
  key?: KubeconfigBytes;
  insecureSkipTlsVerify: boolean;
  tlsServerName?: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
}

/** The context needs client-node (exec plugin, auth provider, proxy). */
export interface NeedsClientNode {
  clientNode: string;
}

type Entry = Record<string, unknown>;

function isRecord(v: unknown): v is Entry {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function named(doc: Entry, list: string, field: string, name: string): Entry | undefined {
  const items = doc[list];
  if (!Array.isArray(items)) return undefined;
  const item = items.find((i): i is Entry => isRecord(i) && i['name'] === name);
  return item && isRecord(item[field]) ? item[field] : item ? {} : undefined;
}

function str(e: Entry, key: string): string | undefined {
  const v = e[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * The context `context` (default: current-context) of a parsed kubeconfig `doc` read from
 * `file`. File references are resolved against the kubeconfig's directory; nothing is read.
 * Throws with the file and context named when the kubeconfig does not say enough.
 */
export function parseKubeconfig(
  doc: unknown,
  file: string,
  context?: string,
): KubeconfigContext | NeedsClientNode {
  const fail = (why: string) => new Error(`kubeconfig ${file}: ${why}`);
  if (!isRecord(doc)) throw fail('not a kubeconfig (expected a mapping)');
  const name = context ?? str(doc, 'current-context');
  if (!name) throw fail('no current-context set and no context given');
  const ctx = named(doc, 'contexts', 'context', name);
  if (!ctx) throw fail(`context "${name}" not found`);
  const clusterName = str(ctx, 'cluster');
  if (!clusterName) throw fail(`context "${name}" names no cluster`);
  const cluster = named(doc, 'clusters', 'cluster', clusterName);
  if (!cluster) throw fail(`cluster "${clusterName}" (of context "${name}") not found`);
  const server = str(cluster, 'server');
  if (!server) throw fail(`cluster "${clusterName}" (of context "${name}") has no server`);
  const userName = str(ctx, 'user');
  const user = userName ? named(doc, 'users', 'user', userName) : {};
  if (!user) throw fail(`user "${userName}" (of context "${name}") not found`);

  for (const [entry, key] of [
    [user, 'exec'],
    [user, 'auth-provider'],
    [cluster, 'proxy-url'],
  ] as const) {
    if (entry[key] !== undefined) return { clientNode: `${key} in context "${name}"` };
  }

  const dir = dirname(resolve(file));
  const bytes = (e: Entry, dataKey: string, pathKey: string): KubeconfigBytes | undefined => {
    const data = str(e, dataKey);
    if (data) return { data: Buffer.from(data, 'base64') };
    const path = str(e, pathKey);
    return path ? { path: isAbsolute(path) ? path : join(dir, path) } : undefined;
  };
  const out: KubeconfigContext = {
    file,
    context: name,
    server,
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
  };
  const set = <K extends keyof KubeconfigContext>(k: K, v: KubeconfigContext[K] | undefined) => {
    if (v !== undefined) out[k] = v;
  };
  set('namespace', str(ctx, 'namespace'));
  set('ca', bytes(cluster, 'certificate-authority-data', 'certificate-authority'));
  set('tlsServerName', str(cluster, 'tls-server-name'));
  set('cert', bytes(user, 'client-certificate-data', 'client-certificate'));
  set('key', bytes(user, 'client-key-data', 'client-key'));
  set('token', str(user, 'token'));
  const tokenFile = str(user, 'tokenFile');
  set('tokenFile', tokenFile && (isAbsolute(tokenFile) ? tokenFile : join(dir, tokenFile)));
  set('username', str(user, 'username'));
  set('password', str(user, 'password'));
  return out;
}

/**
 * A KubeAccess for one parsed context. Certificate and key files are read now (kubectl does the
 * same); a tokenFile is read now and re-read as it changes, like a projected token.
 */
export function kubeconfigContextAccess(c: KubeconfigContext): KubeAccess {
  const read = (b: KubeconfigBytes | undefined, what: string): Buffer | undefined => {
    if (!b) return undefined;
    if ('data' in b) return b.data;
    try {
      return readFileSync(b.path);
    } catch (err) {
      throw new Error(
        `kubeconfig ${c.file}: reading ${what} ${b.path}: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  };
  const ca = read(c.ca, 'certificate-authority');
  const cert = read(c.cert, 'client-certificate');
  const key = read(c.key, 'client-key');
  // client-go: the last value read from tokenFile takes precedence over token.
  const token = c.tokenFile ? fileToken(c.tokenFile) : c.token ? () => c.token! : undefined;
  const basic = !token && c.username ? `${c.username}:${c.password ?? ''}` : undefined;
  const server = c.server;
  return {
    getCurrentCluster: () => ({ server }),
    applyToHTTPSOptions(opts) {
      if (ca) opts.ca = ca;
      if (cert) opts.cert = cert;
      if (key) opts.key = key;
      if (c.insecureSkipTlsVerify) opts.rejectUnauthorized = false;
      if (c.tlsServerName) opts.servername = c.tlsServerName;
      if (token) {
        opts.headers = { ...(opts.headers ?? {}), Authorization: `Bearer ${token()}` };
      } else if (basic) {
        opts.auth = basic;
      }
      return Promise.resolve();
    },
  };
}

/** client-node's KubeConfig from a file, or from its default chain when `path` is undefined. */
export async function clientNodeKubeConfig(path: string | undefined): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

/**
 * The kubeconfig file at `path`: parsed here, or through client-node when the context needs it
 * (exec plugins, auth providers, a proxy).
 */
export async function kubeconfigFileAccess(path: string, context?: string): Promise<KubeAccess> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`kubeconfig ${path}: ${(err as Error).message}`, { cause: err });
  }
  // Loaded only here: a pod using its service account never needs a YAML parser.
  const { parse } = await import('yaml');
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new Error(`kubeconfig ${path}: not valid YAML: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const parsed = parseKubeconfig(doc, path, context);
  if ('clientNode' in parsed) {
    const kc = await clientNodeKubeConfig(path);
    if (context) kc.setCurrentContext(context);
    return kc;
  }
  return kubeconfigContextAccess(parsed);
}

/**
 * Where a process finds its API server: `path` (a flag), else KUBECONFIG, else — in a pod — the
 * service account (token and CA from `serviceAccountDir`, the kubelet's mount unless a caller
 * such as a test passes another), else ~/.kube/config. Several files in KUBECONFIG are merged by
 * client-node.
 */
export async function loadKubeAccess(
  path: string | undefined,
  env: Record<string, string | undefined> = process.env,
  serviceAccountDir: string = SERVICE_ACCOUNT_DIR,
): Promise<KubeAccess> {
  if (path) return kubeconfigFileAccess(path);
  const fromEnv = (env['KUBECONFIG'] ?? '').split(delimiter).filter(Boolean);
  if (fromEnv.length > 1) return clientNodeKubeConfig(undefined);
  if (fromEnv.length === 1) return kubeconfigFileAccess(fromEnv[0]!);
  if (env['KUBERNETES_SERVICE_HOST']) return inClusterAccess(env, serviceAccountDir);
  const home = env['HOME'] || homedir();
  return kubeconfigFileAccess(join(home, '.kube', 'config'));
}
