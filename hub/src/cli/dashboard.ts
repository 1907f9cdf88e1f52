// `kubectl mirrorhub dashboard`: the hub's dashboard on a loopback port, signed in as the user.
//
// Transport: the API server's service proxy
// (`/api/v1/namespaces/<ns>/services/http:<service>:<port>/proxy/...`) with the user's own
// kubeconfig credentials, which needs `get` on `services/proxy` in the hub's namespace. Not a
// port-forward: that needs a kubelet in between, and this one is tested against a real API server
// (test/src/dashboard-cli.test.ts) where the proxy is the real thing end to end.
//
// Signing in: the API server authenticates the user by their Authorization header and removes
// it before passing the request on, so every request also carries the user's bearer token in
// X-Mirrorhub-Authorization (hub/src/dashboard/auth.ts), which the dashboard checks with
// TokenReview like a pasted one. Exec-plugin tokens are renewed before they expire and after a
// 401 (credentials.ts). A request the page signs itself (a token pasted into its sign-in form)
// keeps its own token. The token is never printed, logged or put in a URL.
//
// The local side answers only GET and HEAD of paths in normal form, for a Host of the loopback
// address it listens on (a web page cannot reach it under another name by DNS rebinding), and
// sends them nowhere but the hub's Service through the API server.
import { http } from '@mirrorhub/shared/kit/runtime/builtins';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type https from 'node:https';
import { delimiter, join } from 'node:path';
import { homedir } from 'node:os';
import { errorMessage } from '@mirrorhub/shared/kit/runtime/errors';
import { VIEWER_TOKEN_HEADER } from '../dashboard/auth.js';
import { userCredentials, type Credentials } from './credentials.js';
import { CliError, DEFAULT_AGENT_NAMESPACE, loadKube } from './gather.js';

const { request: httpsRequest } = process.getBuiltinModule('node:https');
const { spawn } = process.getBuiltinModule('node:child_process');
const { parseArgs } = process.getBuiltinModule('node:util');

export const DEFAULT_SERVICE = 'mirrorhub-hub';
/** On every answer when the local side signs requests itself (read by hub/web/src/api.ts). */
export const SIGNED_IN_HEADER = 'x-mirrorhub-signed-in';
export const DEFAULT_SERVICE_PORT = 'http';

export const DASHBOARD_USAGE = `Usage: kubectl mirrorhub dashboard [flags]
       mirrorhub dashboard [flags]

Opens the hub's dashboard on a local port, signed in as you: requests go to the hub's Service
through the Kubernetes API server with your kubeconfig's credentials (you need get on
services/proxy in the hub's namespace), and carry your bearer token, renewed as an exec plugin
such as \`aws eks get-token\` issues new ones. Runs until interrupted (Ctrl-C).

Flags:
      --kubeconfig PATH     the hub cluster's kubeconfig (default: $KUBECONFIG, else ~/.kube/config)
      --context NAME        the kubeconfig context to use (default: its current-context)
      --hub-namespace NS    the hub's namespace (default: ${DEFAULT_AGENT_NAMESPACE})
      --service NAME        the hub's Service (default: ${DEFAULT_SERVICE}, the chart's name)
      --service-port PORT   its dashboard port, by name or number (default: ${DEFAULT_SERVICE_PORT})
      --port N              the local port on 127.0.0.1 (default: any free one)
      --no-browser          only print the URL (default: also open it when a browser opener
                            exists: open on macOS, xdg-open with a display elsewhere)
  -h, --help                this help

Examples:
  kubectl mirrorhub dashboard
  kubectl mirrorhub dashboard --context prod-hub --no-browser --port 8080
`;

export interface DashboardArgs {
  kubeconfig?: string;
  context?: string;
  hubNamespace: string;
  service: string;
  servicePort: string;
  port: number;
  browser: boolean;
  help: boolean;
}

export interface DashboardIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
  /** Ends the command (default: SIGINT or SIGTERM). */
  signal?: AbortSignal;
  /** Opens `url` in a browser (default: the platform's opener, if any); false if none. */
  openBrowser?: (url: string) => boolean;
}

class UsageError extends Error {
  override readonly name = 'UsageError';
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function parseDashboardArgs(argv: readonly string[]): DashboardArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        'hub-namespace': { type: 'string' },
        service: { type: 'string' },
        'service-port': { type: 'string' },
        port: { type: 'string' },
        'no-browser': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(errorMessage(err).split('. ')[0]!.replace(/\.$/, ''));
  }
  const { values: v, positionals } = parsed;
  if (positionals.length > 0) {
    throw new UsageError(`dashboard takes no arguments (got "${positionals[0]}")`);
  }
  const args: DashboardArgs = {
    hubNamespace: v['hub-namespace'] ?? DEFAULT_AGENT_NAMESPACE,
    service: v.service ?? DEFAULT_SERVICE,
    servicePort: v['service-port'] ?? DEFAULT_SERVICE_PORT,
    port: 0,
    browser: v['no-browser'] !== true,
    help: v.help === true,
  };
  if (v.kubeconfig !== undefined) {
    if (v.kubeconfig === '') throw new UsageError('--kubeconfig needs a value');
    args.kubeconfig = v.kubeconfig;
  }
  if (v.context !== undefined) {
    if (v.context === '') throw new UsageError('--context needs a value');
    args.context = v.context;
  }
  for (const [flag, value] of [
    ['--hub-namespace', args.hubNamespace],
    ['--service', args.service],
  ] as const) {
    if (!DNS_LABEL.test(value))
      throw new UsageError(`${flag} must be a Kubernetes name (got "${value}")`);
  }
  if (!/^([a-z0-9]([-a-z0-9]*[a-z0-9])?|[1-9][0-9]{0,4})$/.test(args.servicePort)) {
    throw new UsageError(
      `--service-port must be a port name or number (got "${args.servicePort}")`,
    );
  }
  if (v.port !== undefined) {
    const n = Number(v.port);
    if (!/^[0-9]+$/.test(v.port) || n > 65535) {
      throw new UsageError(`--port must be a port number, 0 for any free one (got "${v.port}")`);
    }
    args.port = n;
  }
  return args;
}

/** Runs `dashboard` until `io.signal` (or SIGINT/SIGTERM); resolves to the exit code. */
export async function runDashboard(argv: readonly string[], io: DashboardIo): Promise<number> {
  let args: DashboardArgs;
  try {
    args = parseDashboardArgs(argv);
  } catch (err) {
    io.stderr.write(`error: ${errorMessage(err)}\n\n${DASHBOARD_USAGE}`);
    return 2;
  }
  if (args.help) {
    io.stdout.write(DASHBOARD_USAGE);
    return 0;
  }
  let local: LocalDashboard;
  try {
    local = await startDashboard(args, io);
  } catch (err) {
    io.stderr.write(`error: ${errorMessage(err)}\n`);
    return 1;
  }
  io.stdout.write(
    `Dashboard: ${local.url}\n` +
      `  the Service ${args.hubNamespace}/${args.service} through the API server ${local.server}` +
      `${local.context ? ` (context ${local.context})` : ''}, signed in as you; Ctrl-C to stop\n`,
  );
  if (args.browser) {
    const opened = (io.openBrowser ?? openBrowser)(local.url);
    if (!opened) io.stderr.write(`note: no browser opener found: open ${local.url} yourself\n`);
  }
  await new Promise<void>((resolve) => {
    const signal = io.signal;
    if (signal) {
      if (signal.aborted) return resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
      return;
    }
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await local.close();
  return 0;
}

/** Opens `url` with the platform's opener, when there is one; false when there is none. */
export function openBrowser(
  url: string,
  env: Record<string, string | undefined> = process.env,
): boolean {
  let command: string;
  let args: string[];
  if (process.platform === 'darwin') {
    [command, args] = ['open', [url]];
  } else if (process.platform === 'win32') {
    [command, args] = ['rundll32', ['url.dll,FileProtocolHandler', url]];
  } else {
    // A headless machine (ssh, a container) has no browser to open: say so instead.
    if (!env['DISPLAY'] && !env['WAYLAND_DISPLAY']) return false;
    const onPath = (env['PATH'] ?? '')
      .split(delimiter)
      .some((d) => d && process.getBuiltinModule('node:fs').existsSync(join(d, 'xdg-open')));
    if (!onPath) return false;
    [command, args] = ['xdg-open', [url]];
  }
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
    return true;
  } catch {
    return false;
  }
}

export interface LocalDashboard {
  url: string;
  server: string;
  context?: string | undefined;
  credentials: Credentials;
  close(): Promise<void>;
}

/** A Kubernetes Status answer (the API server's own), or undefined for anything else. */
function statusOf(body: string): { message?: string; reason?: string } | undefined {
  try {
    const s = JSON.parse(body) as { kind?: string; message?: string; reason?: string };
    return s.kind === 'Status' ? s : undefined;
  } catch {
    return undefined;
  }
}

function kubeconfigFile(args: DashboardArgs, env: DashboardIo['env']): string | undefined {
  if (args.kubeconfig) return args.kubeconfig;
  const fromEnv = (env['KUBECONFIG'] ?? '').split(delimiter).filter(Boolean);
  if (fromEnv.length === 1) return fromEnv[0];
  if (fromEnv.length > 1) return undefined;
  return join(env['HOME'] || homedir(), '.kube', 'config');
}

/**
 * Checks that the hub's dashboard answers through the API server (each failure says what to
 * fix), then serves it on 127.0.0.1.
 */
export async function startDashboard(
  args: DashboardArgs,
  io: Pick<DashboardIo, 'stderr' | 'env'>,
): Promise<LocalDashboard> {
  const kube = await loadKube(args, io.env);
  const where = `the API server ${kube.server || '(none)'}${kube.context ? ` (context ${kube.context})` : ''}`;
  if (!kube.server) {
    throw new CliError(
      `the kubeconfig has no cluster for context ${args.context ?? '(current)'}: pass --context NAME with one of \`kubectl config get-contexts\``,
    );
  }
  const credentials = await userCredentials(kube.access, {
    kubeconfigFile: kubeconfigFile(args, io.env),
    env: io.env,
  });
  const base = new URL(kube.server);
  const basePath = base.pathname.replace(/\/$/, '');
  const svcPath = `${basePath}/api/v1/namespaces/${args.hubNamespace}/services/${args.service}`;
  const prefix = `${basePath}/api/v1/namespaces/${args.hubNamespace}/services/http:${args.service}:${args.servicePort}/proxy`;

  /** One GET to the API server, with the user's credentials (and a retry after a 401). */
  async function upstream(
    path: string,
    headers: OutgoingHttpHeaders,
    viewerAuth: string | undefined,
  ): Promise<IncomingMessage> {
    for (let attempt = 0; ; attempt++) {
      const opts: https.RequestOptions = { method: 'GET', headers: { ...headers } };
      const token = await credentials.apply(opts);
      const auth = viewerAuth ?? (token ? `Bearer ${token}` : undefined);
      if (auth) (opts.headers as OutgoingHttpHeaders)[VIEWER_TOKEN_HEADER] = auth;
      const url = new URL(base.origin + path);
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        const send = url.protocol === 'https:' ? httpsRequest : http.request;
        const req = send(url, opts, resolve);
        req.setTimeout(15_000, () => {
          req.destroy(new Error('no answer within 15 s'));
        });
        req.on('response', () => req.setTimeout(0));
        req.on('error', reject);
        req.end();
      });
      // The hub refusing a token the page signed in with itself says nothing about ours.
      const pageRefused =
        viewerAuth !== undefined && /mirrorhub/.test(String(res.headers['www-authenticate'] ?? ''));
      if (res.statusCode === 401 && attempt === 0 && !pageRefused && credentials.refused(token)) {
        res.resume();
        continue;
      }
      return res;
    }
  }

  const read = async (res: IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };

  // 1. The Service: tells a wrong cluster, namespace or name from a hub that is not running.
  let svc: IncomingMessage;
  try {
    svc = await upstream(svcPath, { accept: 'application/json' }, undefined);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`cannot reach ${where}: ${errorMessage(err)}`, { cause: err });
  }
  const svcBody = await read(svc);
  if (svc.statusCode === 401) {
    throw new CliError(
      `${where} refused your kubeconfig's credentials: log in again (e.g. \`aws sso login\`) or pick another --context`,
    );
  }
  if (svc.statusCode === 404) {
    throw new CliError(
      `there is no Service ${args.service} in namespace ${args.hubNamespace} at ${where}: is this the hub cluster (--context), and is the hub chart installed there (--hub-namespace, --service)?`,
    );
  }
  if (svc.statusCode === 200) {
    const ports =
      (JSON.parse(svcBody) as { spec?: { ports?: { name?: string; port?: number }[] } }).spec
        ?.ports ?? [];
    if (!ports.some((p) => p.name === args.servicePort || String(p.port) === args.servicePort)) {
      const names = ports.map((p) => p.name ?? String(p.port)).join(', ') || 'none';
      throw new CliError(
        `the Service ${args.hubNamespace}/${args.service} has no port ${args.servicePort} (its ports: ${names}): pass --service-port`,
      );
    }
  } else if (svc.statusCode !== 403) {
    // 403: the user may proxy without reading Services; the next check says what is wrong.
    throw new CliError(
      `reading the Service ${args.hubNamespace}/${args.service} at ${where}: ${svc.statusCode} ${statusOf(svcBody)?.message ?? ''}`.trim(),
    );
  }

  // 2. The dashboard through the service proxy, signed in as the user.
  const hasToken = (await credentials.apply({ headers: {} })) !== undefined;
  const probe = await upstream(
    `${prefix}/api/v1/snapshot`,
    { accept: 'application/json' },
    undefined,
  );
  const probeBody = await read(probe);
  const status = statusOf(probeBody);
  const code = probe.statusCode ?? 0;
  if (status && code === 403) {
    throw new CliError(
      `${status.message ?? 'forbidden'}: the dashboard is reached through the API server's service proxy, which needs a Role in namespace ${args.hubNamespace} granting get on services/proxy with resourceNames ["http:${args.service}:${args.servicePort}"] (the proxy's name for the Service's port); see docs/cli.md`,
    );
  }
  if (status && (code === 404 || code === 503)) {
    throw new CliError(
      `the Service ${args.hubNamespace}/${args.service} has no running hub behind it (${status.message ?? code}): check \`kubectl -n ${args.hubNamespace} get pods,endpoints\``,
    );
  }
  if (status && code === 401) {
    throw new CliError(`${where} refused your kubeconfig's credentials: log in again and retry`);
  }
  if (code === 401) {
    const why = (() => {
      try {
        return (JSON.parse(probeBody) as { error?: string }).error;
      } catch {
        return undefined;
      }
    })();
    if (hasToken) {
      throw new CliError(`the hub's dashboard refused your token: ${why ?? '401'}`);
    }
    io.stderr.write(
      `note: your kubeconfig user has no bearer token (a client certificate?), so the page asks for one (e.g. \`kubectl create token <serviceaccount> -n <namespace>\`)\n`,
    );
  } else if (code === 503) {
    io.stderr.write(`note: the hub is not ready yet; the page retries until it is\n`);
  } else if (code === 404) {
    throw new CliError(
      `${args.hubNamespace}/${args.service} answers, but serves no dashboard API: is the dashboard enabled (chart value dashboard.enabled)?`,
    );
  } else if (code !== 200 && code !== 403) {
    throw new CliError(`the hub's dashboard answered ${code}: ${probeBody.slice(0, 200)}`);
  }

  // 3. The local side.
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => void serve(req, res));
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new CliError(
          err.code === 'EADDRINUSE'
            ? `port ${args.port} on 127.0.0.1 is in use: pass another --port, or --port 0 for any free one`
            : `cannot listen on 127.0.0.1:${args.port}: ${errorMessage(err)}`,
        ),
      ),
    );
    server.listen(args.port, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as import('node:net').AddressInfo).port;
  const hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
  let warnedRefused = false;

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const plain = (status: number, text: string) => {
      res.writeHead(status, {
        'content-type': 'text/plain; charset=utf-8',
        'cache-control': 'no-store',
      });
      res.end(`${text}\n`);
    };
    if (!hosts.has(req.headers.host ?? '')) {
      return plain(403, `this local dashboard answers only http://127.0.0.1:${port}/`);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return plain(405, 'only GET is served here');
    const path = localPath(req.url ?? '/', prefix);
    if (path === undefined) return plain(400, 'the path is not in normal form');
    const headers: OutgoingHttpHeaders = { 'user-agent': 'mirrorhub-dashboard' };
    for (const h of ['accept', 'if-none-match', 'cache-control']) {
      const v = req.headers[h];
      if (v !== undefined) headers[h] = v;
    }
    // A token the page signed in with itself (the sign-in form) is the page's choice.
    const own = req.headers['authorization'];
    let up: IncomingMessage;
    try {
      up = await upstream(prefix + path, headers, typeof own === 'string' ? own : undefined);
    } catch (err) {
      const message = errorMessage(err);
      io.stderr.write(`error: ${message}\n`);
      res.writeHead(502, {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
      });
      return void res.end(JSON.stringify({ error: `kubectl mirrorhub dashboard: ${message}` }));
    }
    if (up.statusCode === 401 && !warnedRefused && up.headers['content-type']?.includes('json')) {
      warnedRefused = true;
      io.stderr.write(
        'note: a request was refused (401): your credentials expired or were revoked; log in again, the page retries\n',
      );
    }
    // hub/web/src/api.ts: the page then sends no token of its own and shows no sign-in form.
    const out: OutgoingHttpHeaders = hasToken ? { [SIGNED_IN_HEADER]: 'kubeconfig' } : {};
    for (const [k, v] of Object.entries(up.headers)) {
      if (!HOP_BY_HOP.has(k) && v !== undefined) out[k] = v;
    }
    res.writeHead(up.statusCode ?? 502, out);
    if (req.method === 'HEAD') {
      up.resume();
      return void res.end();
    }
    up.pipe(res);
    res.on('close', () => up.destroy());
  }

  return {
    url: `http://127.0.0.1:${port}/`,
    server: kube.server,
    context: kube.context,
    credentials,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'proxy-authenticate',
  'proxy-connection',
  'audit-id',
]);

/**
 * The path (and query) to ask the dashboard for, from a local request target: the API server
 * rewrites the page's links to include its proxy prefix, so a target under the prefix is taken
 * without it. Undefined for anything not in normal form (dot segments, encoded slashes or dots,
 * backslashes, an absolute form), which could otherwise leave the Service's proxy path.
 */
export function localPath(target: string, prefix: string): string | undefined {
  if (!target.startsWith('/') || target.startsWith('//') || /[\\\s]|%2[ef]|%5c/i.test(target)) {
    return undefined;
  }
  const url = new URL(target, 'http://local.invalid');
  const raw = target.split('?')[0]!;
  if (url.origin !== 'http://local.invalid' || url.pathname !== raw) return undefined;
  const rest = raw === prefix ? '/' : raw.startsWith(`${prefix}/`) ? raw.slice(prefix.length) : raw;
  return rest + url.search;
}
