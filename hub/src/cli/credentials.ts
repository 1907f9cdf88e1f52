// The user's own credentials for a long-running command (`kubectl mirrorhub dashboard`): TLS and
// Authorization for each request to the API server, and the bearer token the hub's dashboard
// checks. A one-shot command can take whatever token the kubeconfig gives once; a dashboard left
// open for an afternoon outlives an exec plugin's token (EKS's `aws eks get-token` ones last 15
// minutes), so exec plugins are run here the way client-go runs them:
// - the ExecCredential is kept until shortly before its status.expirationTimestamp (one without
//   an expiry is kept until the API server refuses it), then the plugin runs again;
// - a 401 for the token in use forgets it, so the next request runs the plugin again;
// - concurrent requests share one run.
// client-node's own exec support keeps a credential until its expiry too, but runs the plugin for
// every request when there is no expiry and never forgets a refused one; it is bypassed for the
// exec user (its KubeConfig still gives the cluster's TLS settings).
//
// The token is never logged or printed: the plugin's stdout is parsed and dropped, its stderr
// (prompts, warnings) goes to the user's terminal as kubectl lets it.
import { dirname, isAbsolute, join, sep } from 'node:path';
import type https from 'node:https';
import type { KubeConfig, User } from '@kubernetes/client-node';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { errorMessage } from '@mirrorhub/shared/kit/runtime/errors';
import { CliError } from './gather.js';

// As shared/kit/runtime/builtins.ts does: the built-in without its ES module namespace.
const { spawn } = process.getBuiltinModule('node:child_process');

/** users[].user.exec of a kubeconfig (client.authentication.k8s.io ExecConfig). */
export interface ExecConfig {
  command: string;
  args?: string[];
  env?: { name: string; value: string }[] | null;
  apiVersion?: string;
  interactiveMode?: string;
  provideClusterInfo?: boolean;
}

interface ExecCredential {
  apiVersion?: string;
  kind?: string;
  status?: {
    token?: string;
    expirationTimestamp?: string;
    clientCertificateData?: string;
    clientKeyData?: string;
  };
}

interface Held {
  token?: string;
  cert?: string;
  key?: string;
  /** Milliseconds since the epoch; undefined: until refused. */
  refreshAt?: number;
}

/** A credential is renewed this share of its lifetime before it expires, at most this early. */
const RENEW_SHARE = 0.2;
const RENEW_MAX_MS = 60_000;

export interface ExecOptions {
  /** The kubeconfig file's directory: a relative command with a `/` is resolved against it. */
  dir?: string | undefined;
  /** For KUBERNETES_EXEC_INFO when the plugin asks for it (provideClusterInfo). */
  cluster?: { server: string; caData?: string | undefined } | undefined;
  env?: Record<string, string | undefined>;
  now?: () => number;
  /** Where the plugin's stderr goes (default: inherited). */
  stderr?: 'inherit' | 'ignore';
  /** Whether this terminal can answer a plugin's prompt (default: stdin is a TTY). */
  interactive?: boolean;
}

/** Runs a kubeconfig user's exec plugin and holds its credential (see the file's comment). */
export class ExecPlugin {
  /** How many times the plugin ran (for the CLI's messages and its tests). */
  runs = 0;
  private held: Held | undefined;
  private running: Promise<Held> | undefined;
  private readonly now: () => number;

  constructor(
    readonly exec: ExecConfig,
    private readonly opts: ExecOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
  }

  /** The credential to send now: the held one, or a fresh one from the plugin. */
  async credential(): Promise<Held> {
    const h = this.held;
    if (h && (h.refreshAt === undefined || this.now() < h.refreshAt)) return h;
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * The API server refused a request sent with `token`: forget that credential (not a newer one
   * another request already fetched). Always worth one more try, with whatever is held next.
   */
  refused(token: string | undefined): boolean {
    if (this.held && this.held.token === token) this.held = undefined;
    return true;
  }

  private command(): string {
    const c = this.exec.command;
    // client-go: a relative path with a separator is relative to the kubeconfig; a bare name
    // is looked up on PATH.
    return this.opts.dir && !isAbsolute(c) && c.includes(sep) ? join(this.opts.dir, c) : c;
  }

  private async run(): Promise<Held> {
    const command = this.command();
    const apiVersion = this.exec.apiVersion ?? 'client.authentication.k8s.io/v1';
    const interactive =
      this.exec.interactiveMode !== 'Never' && (this.opts.interactive ?? process.stdin.isTTY);
    const info: Record<string, unknown> = {
      apiVersion,
      kind: 'ExecCredential',
      spec: {
        interactive: !!interactive,
        ...(this.exec.provideClusterInfo && this.opts.cluster
          ? {
              cluster: {
                server: this.opts.cluster.server,
                ...(this.opts.cluster.caData
                  ? { 'certificate-authority-data': this.opts.cluster.caData }
                  : {}),
              },
            }
          : {}),
      },
    };
    const env: Record<string, string | undefined> = {
      ...(this.opts.env ?? process.env),
      KUBERNETES_EXEC_INFO: JSON.stringify(info),
    };
    for (const e of this.exec.env ?? []) env[e.name] = e.value;
    const what = `the kubeconfig user's exec plugin "${this.exec.command}"`;
    this.runs++;
    const started = this.now();
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(command, this.exec.args ?? [], {
        env,
        stdio: [interactive ? 'inherit' : 'ignore', 'pipe', this.opts.stderr ?? 'inherit'],
      });
      const chunks: Buffer[] = [];
      child.stdout!.on('data', (c: Buffer) => chunks.push(c));
      child.on('error', (err: NodeJS.ErrnoException) => {
        reject(
          new CliError(
            err.code === 'ENOENT'
              ? `${what} was not found: install it, or fix users[].user.exec.command in the kubeconfig`
              : `${what} could not run: ${errorMessage(err)}`,
          ),
        );
      });
      child.on('close', (code, signal) => {
        if (code === 0) return resolve(Buffer.concat(chunks).toString('utf8'));
        reject(
          new CliError(
            `${what} failed (${signal ? `signal ${signal}` : `exit code ${code}`}; its messages, if any, are above): log in again, e.g. \`aws sso login\`, and retry`,
          ),
        );
      });
    });
    let cred: ExecCredential;
    try {
      cred = JSON.parse(out) as ExecCredential;
    } catch {
      throw new CliError(`${what} printed something that is not an ExecCredential (not JSON)`);
    }
    if (cred.kind !== 'ExecCredential' || cred.apiVersion !== apiVersion) {
      throw new CliError(
        `${what} printed ${cred.kind ?? 'no kind'} ${cred.apiVersion ?? ''}; the kubeconfig asks for an ExecCredential of ${apiVersion}`,
      );
    }
    const s = cred.status ?? {};
    if (!s.token && !(s.clientCertificateData && s.clientKeyData)) {
      throw new CliError(`${what} returned neither a token nor a client certificate`);
    }
    const held: Held = {};
    if (s.token) held.token = s.token;
    if (s.clientCertificateData && s.clientKeyData) {
      held.cert = s.clientCertificateData;
      held.key = s.clientKeyData;
    }
    if (s.expirationTimestamp) {
      const exp = Date.parse(s.expirationTimestamp);
      if (Number.isNaN(exp)) {
        throw new CliError(
          `${what} returned an expirationTimestamp that is not a time: ${s.expirationTimestamp}`,
        );
      }
      const early = Math.min(RENEW_MAX_MS, Math.max(0, exp - started) * RENEW_SHARE);
      held.refreshAt = exp - early;
    }
    this.held = held;
    return held;
  }
}

/** The user's credentials, request by request. */
export interface Credentials {
  /**
   * Sets TLS and Authorization on one request's options; resolves to the bearer token sent, if
   * the user has one (a client-certificate user has none).
   */
  apply(opts: https.RequestOptions): Promise<string | undefined>;
  /** The API server answered 401 to a request sent with `token`: whether to try once more. */
  refused(token: string | undefined): boolean;
  /** The exec plugin, when the user has one. */
  readonly plugin?: ExecPlugin;
}

function tokenOf(opts: https.RequestOptions): string | undefined {
  const auth = (opts.headers as Record<string, unknown> | undefined)?.['Authorization'];
  const m = typeof auth === 'string' ? /^Bearer\s+(\S+)$/.exec(auth) : null;
  return m?.[1];
}

/**
 * Credentials for `access` (what loadKube gave). An exec user (client-node's KubeConfig) gets
 * an ExecPlugin; anything else is applied as the kubeconfig says (a tokenFile re-read as it
 * changes, an OIDC auth-provider refreshed by client-node).
 */
export async function userCredentials(
  access: KubeAccess,
  opts: { kubeconfigFile?: string | undefined; env?: Record<string, string | undefined> } = {},
): Promise<Credentials> {
  const kc = access as Partial<KubeConfig>;
  const user: User | null | undefined =
    typeof kc.getCurrentUser === 'function' ? kc.getCurrentUser() : undefined;
  if (!user?.exec) {
    return {
      async apply(o) {
        await access.applyToHTTPSOptions(o);
        return tokenOf(o);
      },
      refused: () => false,
    };
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const full = kc as KubeConfig;
  // The same kubeconfig with the exec plugin taken off the current user: its TLS settings only.
  const tls = new KubeConfig();
  tls.loadFromOptions({
    clusters: full.clusters,
    contexts: full.contexts,
    currentContext: full.getCurrentContext(),
    users: full.users.map((u) => (u.name === user.name ? { ...u, exec: undefined } : u)),
  });
  const cluster = full.getCurrentCluster();
  const plugin = new ExecPlugin(user.exec as ExecConfig, {
    dir: opts.kubeconfigFile ? dirname(opts.kubeconfigFile) : undefined,
    cluster: cluster ? { server: cluster.server, caData: cluster.caData } : undefined,
    ...(opts.env ? { env: opts.env } : {}),
  });
  return {
    plugin,
    async apply(o) {
      await tls.applyToHTTPSOptions(o);
      const held = await plugin.credential();
      if (held.cert && held.key) {
        o.cert = held.cert;
        o.key = held.key;
      }
      if (held.token) o.headers = { ...(o.headers ?? {}), Authorization: `Bearer ${held.token}` };
      return held.token;
    },
    refused: (token) => plugin.refused(token),
  };
}
