// `mirrorhub` / `kubectl mirrorhub`: the hub dashboard's overview and "where is it" in a
// terminal. Arguments -> gather (the hub cluster with the user's kubeconfig, or the hub's
// dashboard API) -> view.ts -> a table or JSON. `migrate` (migrate/) turns another tool's rules
// into mirrorhub objects. Exit codes: 0 done, 1 failed (the message says what to do; for migrate
// also: a rule cannot be translated), 2 wrong usage.
import { fs, util } from '@mirrorhub/shared/kit/runtime/builtins';
import { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { errorMessage } from '@mirrorhub/shared/kit/runtime/errors';
import type { Snapshot, Where } from '../dashboard/types.js';
import {
  bearerTokenOf,
  CliError,
  DEFAULT_AGENT_NAMESPACE,
  DEFAULT_HUB_CLUSTER,
  gatherFromCluster,
  hubGet,
  loadKube,
  onlyNamespace,
  statusFromCluster,
  statusFromSnapshot,
  whereFromCluster,
  whereFromHub,
  type Fetch,
  type StatusReport,
  type WhereReport,
} from './gather.js';
import { runMigrate } from './migrate/index.js';
import { runDashboard } from './dashboard.js';
import { renderStatus, renderWhere } from './table.js';

const { readFileSync } = fs;
const { parseArgs } = util;

export interface Io {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
  /** The dashboard API's transport (default: the global fetch). */
  fetch?: Fetch;
  /** Milliseconds since the epoch (default: Date.now). */
  now?: () => number;
}

export const USAGE = `Usage: mirrorhub <command> [flags]
       kubectl mirrorhub <command> [flags]

The mirrorhub dashboard in a terminal: what is mirrored where, and what needs attention.

Commands:
  status                  overview, what needs attention, clusters and mirrors
  where NAME              every cluster and namespace holding a copy named NAME
  migrate                 the mirrorhub objects equivalent to this cluster's kubernetes-reflector
                          and kubed annotations, ClusterSecrets and KTS SecretMirrors, as YAML
  dashboard               the hub's dashboard in your browser, signed in as you (dashboard --help)
  help                    this help

Flags:
      --kubeconfig PATH     the hub cluster's kubeconfig (default: $KUBECONFIG, else ~/.kube/config)
      --context NAME        the kubeconfig context to use (default: its current-context)
  -n, --namespace NS        only the SecretMirrors of namespace NS
  -A, --all-namespaces      every namespace (the default, when your identity may list them)
  -o, --output FORMAT       table (default) or json
      --agent-namespace NS  the agent namespace in the hub cluster (default: ${DEFAULT_AGENT_NAMESPACE})
      --hub-cluster NAME    the hub cluster's name when no inCluster MirrorCluster names it
                            (default: ${DEFAULT_HUB_CLUSTER})
      --hub-url URL         ask the hub's dashboard API instead of reading the cluster
                            (default: $MIRRORHUB_HUB_URL)
      --token TOKEN         bearer token for --hub-url (default: $MIRRORHUB_TOKEN, else the
                            kubeconfig user's token)
  -h, --help                this help
      --version             the version

Flags of migrate (it reads the cluster of --kubeconfig/--context, writes nothing to it):
      --out DIR             one file per object in DIR (default: one YAML stream on stdout);
                            an existing file is never overwritten
      --plan                per rule, which copies mirrorhub would create, take over or leave
                            alone; no YAML
      --continue            emit what can be translated even when some rules cannot (exit 0)
      --source-namespace NS where a ClusterSecret's inline data becomes a source Secret
                            (default: ${DEFAULT_AGENT_NAMESPACE})
      --kubed-context CONTEXT=CLUSTER[/NAMESPACE]
                            the MirrorCluster a context of kubed's sync-contexts reaches, and
                            the namespace that context names (default: the source's); repeat
                            for each context

Examples:
  kubectl mirrorhub status
  kubectl mirrorhub where wildcard-tls -o json
  mirrorhub status -n team-a --context prod-hub
  kubectl mirrorhub migrate --plan
  kubectl mirrorhub migrate --out ./mirrorhub-rules
`;

/** Wrong usage: printed with the usage, exit code 2. */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface Args {
  command: 'status' | 'where' | 'migrate' | 'help';
  name?: string;
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  allNamespaces: boolean;
  output: 'table' | 'json';
  agentNamespace: string;
  agentNamespaceSet: boolean;
  hubCluster: string;
  hubUrl?: string;
  token?: string;
  help: boolean;
  version: boolean;
  /** migrate only */
  out?: string;
  plan: boolean;
  continueOnRefusal: boolean;
  sourceNamespace: string;
  kubedContexts: Map<string, { cluster: string; namespace?: string }>;
}

const OPTIONS = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  'all-namespaces': { type: 'boolean', short: 'A' },
  output: { type: 'string', short: 'o' },
  'agent-namespace': { type: 'string' },
  'hub-cluster': { type: 'string' },
  'hub-url': { type: 'string' },
  token: { type: 'string' },
  out: { type: 'string' },
  plan: { type: 'boolean' },
  continue: { type: 'boolean' },
  'source-namespace': { type: 'string' },
  'kubed-context': { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

/** The command line, or a UsageError saying what is wrong with it. */
export function parseCommandLine(argv: readonly string[], env: Io['env']): Args {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    // node:util's messages name the flag ("Unknown option '--foo'. ..."): keep the first sentence.
    throw new UsageError(errorMessage(err).split('. ')[0]!.replace(/\.$/, ''));
  }
  const { values: v, positionals } = parsed;
  const help = v.help === true;
  const version = v.version === true;
  const [command, ...rest] = positionals;
  const args: Args = {
    command: 'help',
    allNamespaces: v['all-namespaces'] === true,
    output: 'table',
    agentNamespace: v['agent-namespace'] ?? DEFAULT_AGENT_NAMESPACE,
    agentNamespaceSet: v['agent-namespace'] !== undefined,
    hubCluster: v['hub-cluster'] ?? DEFAULT_HUB_CLUSTER,
    help,
    version,
    plan: v.plan === true,
    continueOnRefusal: v.continue === true,
    sourceNamespace: v['source-namespace'] ?? DEFAULT_AGENT_NAMESPACE,
    kubedContexts: new Map(),
  };
  if (help || version) return args;
  if (command === undefined) throw new UsageError('no command given');
  if (command === 'help') return args;
  if (command === 'status') {
    if (rest.length > 0) throw new UsageError(`status takes no arguments (got "${rest[0]}")`);
  } else if (command === 'where') {
    if (rest.length === 0) throw new UsageError('where needs the name of a copy: where NAME');
    if (rest.length > 1) throw new UsageError(`where takes one name (got ${rest.length})`);
    args.name = rest[0]!;
  } else if (command === 'migrate') {
    if (rest.length > 0) throw new UsageError(`migrate takes no arguments (got "${rest[0]}")`);
    for (const flag of ['namespace', 'all-namespaces', 'output', 'hub-url', 'token'] as const) {
      if (v[flag] !== undefined) {
        throw new UsageError(`--${flag} does not apply to migrate: it reads the whole cluster`);
      }
    }
  } else {
    throw new UsageError(`unknown command "${command}"`);
  }
  args.command = command;
  if (command !== 'migrate') {
    for (const flag of ['out', 'plan', 'continue', 'source-namespace', 'kubed-context'] as const) {
      if (v[flag] !== undefined) throw new UsageError(`--${flag} applies to migrate only`);
    }
  }
  const output = v.output ?? 'table';
  if (output !== 'table' && output !== 'json') {
    throw new UsageError(`unknown output format "${output}": use -o table or -o json`);
  }
  args.output = output;
  const nonEmpty = (flag: string, value: string | undefined): string | undefined => {
    if (value === '') throw new UsageError(`${flag} needs a value`);
    return value;
  };
  const set = <K extends keyof Args>(key: K, value: Args[K] | undefined) => {
    if (value !== undefined) args[key] = value;
  };
  set('kubeconfig', nonEmpty('--kubeconfig', v.kubeconfig));
  set('context', nonEmpty('--context', v.context));
  set('namespace', nonEmpty('--namespace', v.namespace));
  set('hubUrl', nonEmpty('--hub-url', v['hub-url']) ?? (env['MIRRORHUB_HUB_URL'] || undefined));
  set('token', nonEmpty('--token', v.token) ?? (env['MIRRORHUB_TOKEN'] || undefined));
  set('out', nonEmpty('--out', v.out));
  nonEmpty('--source-namespace', v['source-namespace']);
  for (const mapping of v['kubed-context'] ?? []) {
    const m =
      /^([^=]+)=([a-z0-9]([-a-z0-9.]*[a-z0-9])?)(?:\/([a-z0-9]([-a-z0-9]*[a-z0-9])?))?$/.exec(
        mapping,
      );
    if (!m) {
      throw new UsageError(
        `--kubed-context ${JSON.stringify(mapping)}: use CONTEXT=MIRRORCLUSTER or CONTEXT=MIRRORCLUSTER/NAMESPACE`,
      );
    }
    if (args.kubedContexts.has(m[1]!)) {
      throw new UsageError(`--kubed-context: context ${m[1]} is mapped twice`);
    }
    args.kubedContexts.set(m[1]!, { cluster: m[2]!, ...(m[4] ? { namespace: m[4] } : {}) });
  }
  if (args.out && args.plan) {
    throw new UsageError('--out and --plan exclude each other: --plan writes nothing');
  }
  if (args.namespace && args.allNamespaces) {
    throw new UsageError('-n/--namespace and -A/--all-namespaces exclude each other');
  }
  if (args.hubUrl && !/^https?:\/\//.test(args.hubUrl)) {
    throw new UsageError(`--hub-url must be an http(s) URL (got "${args.hubUrl}")`);
  }
  return args;
}

function version(env: Io['env']): string {
  try {
    // ../../package.json is hub/package.json from src/cli and from dist/cli alike.
    const pkg = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { version?: string };
    return env['MIRRORHUB_VERSION'] ?? pkg.version ?? 'unknown';
  } catch {
    return env['MIRRORHUB_VERSION'] ?? 'unknown';
  }
}

/** Runs one command line; resolves to the exit code. Never throws. */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  // Long-running, with flags of its own: dashboard.ts.
  if (argv[0] === 'dashboard') return runDashboard(argv.slice(1), io);
  let args: Args;
  try {
    args = parseCommandLine(argv, io.env);
  } catch (err) {
    io.stderr.write(`error: ${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  if (args.version && !args.help) {
    io.stdout.write(`mirrorhub ${version(io.env)}\n`);
    return 0;
  }
  if (args.help || args.command === 'help') {
    io.stdout.write(USAGE);
    return 0;
  }
  if (args.command === 'migrate') {
    try {
      return await runMigrate(args, io);
    } catch (err) {
      io.stderr.write(`error: ${errorMessage(err)}\n`);
      return 1;
    }
  }
  try {
    const report = args.hubUrl ? await fromHub(args, io) : await fromCluster(args, io);
    for (const note of report.notes) io.stderr.write(`note: ${note}\n`);
    const now = (io.now ?? Date.now)();
    if (args.output === 'json') {
      io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    } else if ('overview' in report) {
      io.stdout.write(renderStatus(report, now));
    } else {
      io.stdout.write(renderWhere(report));
    }
    return 0;
  } catch (err) {
    // A CliError says what to do; anything else is unexpected: its message, never a stack.
    io.stderr.write(`error: ${errorMessage(err)}\n`);
    return 1;
  }
}

async function fromCluster(args: Args, io: Io): Promise<StatusReport | WhereReport> {
  const kube = await loadKube(args, io.env);
  const rest = new RestClient(kube.access, { timeoutMs: 15_000, userAgent: 'mirrorhub-cli' });
  try {
    const gathered = await gatherFromCluster(
      rest,
      kube.server,
      {
        namespace: args.namespace,
        allNamespaces: args.allNamespaces,
        contextNamespace: kube.namespace,
        agentNamespace: args.agentNamespace,
        agentNamespaceSet: args.agentNamespaceSet,
        hubCluster: args.hubCluster,
      },
      (io.now ?? Date.now)(),
    );
    return args.command === 'where'
      ? whereFromCluster(gathered, args.name!)
      : statusFromCluster(gathered, { server: kube.server, context: kube.context });
  } finally {
    rest.close();
  }
}

async function fromHub(args: Args, io: Io): Promise<StatusReport | WhereReport> {
  const url = args.hubUrl!;
  let token = args.token;
  if (!token) {
    // The kubeconfig user's bearer token, when it has one (an OIDC or exec token works too).
    try {
      token = await bearerTokenOf((await loadKube(args, io.env)).access);
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      // No usable kubeconfig: ask without a token; the hub's 401 says what is missing.
    }
  }
  const fetchFn = io.fetch ?? fetch;
  if (args.command === 'where') {
    const path = `/api/v1/where?name=${encodeURIComponent(args.name!)}`;
    const report = whereFromHub(await hubGet<Where>(fetchFn, url, path, token));
    return args.namespace ? onlyNamespace(report, args.namespace) : report;
  }
  const report = statusFromSnapshot(
    await hubGet<Snapshot>(fetchFn, url, '/api/v1/snapshot', token),
    url,
  );
  if (!args.namespace) return report;
  return {
    ...onlyNamespace(report, args.namespace),
    notes: [
      `the overview counts are the hub's for everything you may see, not only ${args.namespace}`,
    ],
  };
}
