// What the CLI shows, gathered two ways, and turned into the dashboard's views by view.ts:
// - from the hub cluster with the user's own kubeconfig: MirrorClusters, mirrors (their status)
//   and the hub's MirrorDeliveries in the hub cluster's agent namespace. The user's RBAC decides
//   what is listed, and the Access built from it filters the views like the dashboard does.
//   Follower clusters are not reached: the hub cluster holds only each mirror's status for them
//   (counts per cluster and at most 50 problems), so `where` summarises them.
// - from the hub's dashboard API (--hub-url): the Snapshot and Where the hub computes itself.
//
// Never read: Secrets (no payload, no copy, no kubeconfig Secret). A delivery is read for its
// names and its agent's report only (view.ts never reads spec.template).
import { fs } from '@mirrorhub/shared/kit/runtime/builtins';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  CLUSTER_SECRET_MIRROR,
  MIRROR_CLUSTER,
  MIRROR_DELIVERY,
  SECRET_MIRROR,
  type AnyMirror,
  type ClusterSecretMirrorList,
  type MirrorCluster,
  type MirrorClusterList,
  type MirrorDelivery,
  type MirrorDeliveryList,
  type SecretMirrorList,
} from '@mirrorhub/shared/api/index';
import { LABEL_ORIGIN_CLUSTER } from '@mirrorhub/shared/api/contract';
import {
  kubeconfigFileAccess,
  loadKubeAccess,
  parseKubeconfig,
  type KubeAccess,
} from '@mirrorhub/shared/kit/k8s/access';
import { groupPath, isForbidden, RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { parseYaml } from '@mirrorhub/shared/kit/k8s/yaml';
import { errorMessage, httpStatusOf } from '@mirrorhub/shared/kit/runtime/errors';
import type {
  ClusterRow,
  Matrix,
  MirrorRow,
  Overview,
  Phase,
  Snapshot,
  Where,
  WhereRow,
  WhoAmI,
} from '../dashboard/types.js';
import {
  clusterRows,
  compareWhereRows,
  mirrorRow,
  mirrorRows,
  overview,
  visibleMirrors,
  where,
  type Access,
  type ViewInput,
} from '../dashboard/view.js';

const { existsSync, readFileSync } = fs;

/** A failure the user can act on: printed as it is, without a stack. */
export class CliError extends Error {
  override readonly name = 'CliError';
}

export const DEFAULT_AGENT_NAMESPACE = 'mirrorhub-system';
export const DEFAULT_HUB_CLUSTER = 'hub';
const REQUEST_TIMEOUT_MS = 15_000;

// ---- the user's kubeconfig ------------------------------------------------------------------

export interface KubeTarget {
  access: KubeAccess;
  server: string;
  context?: string;
  /** The context's namespace: where to look when the user may not list every namespace. */
  namespace?: string;
}

/** What client-node's KubeConfig (exec plugins, several files in KUBECONFIG) adds to KubeAccess. */
type MergedKubeConfig = Pick<
  KubeConfig,
  'getCurrentContext' | 'setCurrentContext' | 'getContextObject'
>;

/**
 * The hub cluster as the user's kubeconfig reaches it: --kubeconfig, else $KUBECONFIG, else (in
 * a pod) the service account, else ~/.kube/config; `context` instead of current-context.
 */
export async function loadKube(
  opts: { kubeconfig?: string | undefined; context?: string | undefined },
  env: Record<string, string | undefined>,
): Promise<KubeTarget> {
  let file = opts.kubeconfig;
  let origin = '--kubeconfig';
  if (!file) {
    const fromEnv = (env['KUBECONFIG'] ?? '').split(delimiter).filter(Boolean);
    if (fromEnv.length > 1) return mergedKube(opts.context, env);
    if (fromEnv.length === 1) {
      file = fromEnv[0]!;
      origin = '$KUBECONFIG';
    } else if (env['KUBERNETES_SERVICE_HOST']) {
      if (opts.context) throw new CliError('--context needs a kubeconfig (--kubeconfig PATH)');
      const access = await loadKubeAccess(undefined, env);
      return { access, server: access.getCurrentCluster()?.server ?? '' };
    } else {
      file = join(env['HOME'] || homedir(), '.kube', 'config');
      origin = 'the default';
    }
  }
  if (!existsSync(file)) {
    throw new CliError(
      `no kubeconfig at ${file} (${origin}): pass --kubeconfig PATH or set KUBECONFIG to the hub cluster's kubeconfig`,
    );
  }
  try {
    const access = await kubeconfigFileAccess(file, opts.context);
    // The context's name and namespace (parsed again: kubeconfigFileAccess keeps neither).
    const parsed = parseKubeconfig(parseYaml(readFileSync(file, 'utf8')), file, opts.context);
    const target: KubeTarget = { access, server: access.getCurrentCluster()?.server ?? '' };
    if ('clientNode' in parsed) {
      const kc = access as unknown as MergedKubeConfig;
      target.context = kc.getCurrentContext();
      const ns = kc.getContextObject(target.context)?.namespace;
      if (ns) target.namespace = ns;
    } else {
      target.context = parsed.context;
      if (parsed.namespace) target.namespace = parsed.namespace;
    }
    return target;
  } catch (err) {
    throw new CliError(errorMessage(err), { cause: err });
  }
}

async function mergedKube(
  context: string | undefined,
  env: Record<string, string | undefined>,
): Promise<KubeTarget> {
  try {
    const access = await loadKubeAccess(undefined, env);
    const kc = access as unknown as MergedKubeConfig;
    if (context) kc.setCurrentContext(context);
    const name = kc.getCurrentContext();
    const ns = kc.getContextObject(name)?.namespace;
    return {
      access,
      server: access.getCurrentCluster()?.server ?? '',
      context: name,
      ...(ns ? { namespace: ns } : {}),
    };
  } catch (err) {
    throw new CliError(`kubeconfig files in KUBECONFIG: ${errorMessage(err)}`, { cause: err });
  }
}

/** The bearer token the kubeconfig's user sends (token, tokenFile, exec plugin), if any. */
export async function bearerTokenOf(access: KubeAccess): Promise<string | undefined> {
  const opts: https.RequestOptions = { headers: {} };
  await access.applyToHTTPSOptions(opts);
  const auth = (opts.headers as Record<string, unknown> | undefined)?.['Authorization'];
  const m = typeof auth === 'string' ? /^Bearer\s+(\S+)$/.exec(auth) : null;
  return m?.[1];
}

// ---- reading the hub cluster ----------------------------------------------------------------

export interface GatherOptions {
  /** -n: only the SecretMirrors of this namespace. */
  namespace?: string | undefined;
  /** -A given explicitly: no falling back to one namespace. */
  allNamespaces: boolean;
  /** The kubeconfig context's namespace (fallback when every namespace is forbidden). */
  contextNamespace?: string | undefined;
  agentNamespace: string;
  /** --agent-namespace was given (else the inCluster MirrorCluster's spec.agentNamespace wins). */
  agentNamespaceSet: boolean;
  /** The hub cluster's name when no inCluster MirrorCluster says it. */
  hubCluster: string;
}

export interface Gathered {
  input: ViewInput;
  access: Access;
  /** The hub's own cluster: the one whose deliveries were read. */
  hubCluster: string;
  agentNamespace: string;
  /** Whether the hub cluster's deliveries could be listed (else it is summarised like a follower). */
  deliveriesRead: boolean;
  /** What the user's RBAC hid, and where the CLI fell back. */
  notes: string[];
}

const G = MIRROR_CLUSTER.group;
const V = MIRROR_CLUSTER.version;

function forbiddenEverywhere(server: string, where: string, err: unknown): CliError {
  return new CliError(
    `your identity may not list SecretMirrors here (${where} on ${server}: ${errorMessage(err)}); ` +
      `ask your cluster administrator for "list" on secretmirrors.mirrorhub.io (a Role in your ` +
      `namespace is enough), or pass -n with a namespace whose SecretMirrors you may read`,
    { cause: err },
  );
}

/** An API failure as something the user can act on. */
export function describeApiFailure(err: unknown, server: string, what: string): CliError {
  if (err instanceof CliError) return err;
  const code = httpStatusOf(err);
  if (code === undefined) {
    return new CliError(
      `cannot reach the API server ${server}: ${errorMessage(err)} (is the cluster up, and is this the right kubeconfig/context?)`,
      { cause: err },
    );
  }
  if (code === 401) {
    return new CliError(
      `the API server ${server} does not accept your credentials (${errorMessage(err)}): log in again, or pass another --kubeconfig/--context`,
      { cause: err },
    );
  }
  if (code === 404) {
    return new CliError(
      `${what} on ${server}: ${errorMessage(err)}: are the mirrorhub CRDs installed, and is this the hub cluster?`,
      { cause: err },
    );
  }
  return new CliError(`${what} on ${server}: ${errorMessage(err)}`, { cause: err });
}

type Listed<T> = { ok: true; value: T } | { ok: false; forbidden: unknown };

/** A list that a 403 does not fail: the refusal is returned instead, for its message. */
async function tryList<T>(
  rest: RestClient,
  path: string,
  query: Record<string, string> = {},
): Promise<Listed<T>> {
  try {
    return { ok: true, value: await rest.get<T>(path, { query }) };
  } catch (err) {
    if (isForbidden(err)) return { ok: false, forbidden: err };
    throw err;
  }
}

/**
 * Reads the hub cluster with the user's identity. A 403 narrows what is shown (and says so in
 * notes) instead of failing, unless no SecretMirror at all may be listed.
 */
export async function gatherFromCluster(
  rest: RestClient,
  server: string,
  opts: GatherOptions,
  now: number,
): Promise<Gathered> {
  const notes: string[] = [];
  let what = 'listing MirrorClusters';
  try {
    const mc = await tryList<MirrorClusterList>(rest, groupPath(G, V, MIRROR_CLUSTER.plural));
    if (!mc.ok) {
      notes.push(
        'you may not list MirrorClusters: only the clusters your mirrors reach are shown, by name',
      );
    }
    const clusters: MirrorCluster[] = mc.ok ? mc.value.items : [];
    const clustersVisible = mc.ok;

    const mirrors: AnyMirror[] = [];
    let access: Access;
    const smPath = (ns?: string) => groupPath(G, V, SECRET_MIRROR.plural, ns);
    const oneNamespace = async (ns: string): Promise<void> => {
      what = `listing SecretMirrors in namespace ${ns}`;
      const list = await tryList<SecretMirrorList>(rest, smPath(ns));
      if (!list.ok) throw forbiddenEverywhere(server, what, list.forbidden);
      mirrors.push(...list.value.items);
    };
    if (opts.namespace) {
      await oneNamespace(opts.namespace);
      access = {
        allMirrors: false,
        namespaces: new Set([opts.namespace]),
        clusters: clustersVisible,
      };
    } else {
      what = 'listing ClusterSecretMirrors';
      const csm = await tryList<ClusterSecretMirrorList>(
        rest,
        groupPath(G, V, CLUSTER_SECRET_MIRROR.plural),
      );
      what = 'listing SecretMirrors in all namespaces';
      const sm = await tryList<SecretMirrorList>(rest, smPath());
      if (sm.ok) {
        mirrors.push(...sm.value.items);
        if (csm.ok) mirrors.push(...csm.value.items);
        else notes.push('you may not list ClusterSecretMirrors: only SecretMirrors are shown');
        access = {
          allMirrors: csm.ok,
          namespaces: new Set(sm.value.items.map((m) => m.metadata.namespace ?? '')),
          clusters: clustersVisible,
        };
      } else if (opts.allNamespaces) {
        throw forbiddenEverywhere(server, what, sm.forbidden);
      } else {
        // kubectl's rule: the context's namespace, else default.
        const ns = opts.contextNamespace || 'default';
        await oneNamespace(ns);
        notes.push(
          `you may not list SecretMirrors in all namespaces: showing namespace ${ns} (pass -n for another)`,
        );
        access = { allMirrors: false, namespaces: new Set([ns]), clusters: clustersVisible };
      }
    }

    const own = clusters.find((c) => c.spec?.inCluster === true);
    const hubCluster = own?.metadata.name ?? opts.hubCluster;
    const agentNamespace =
      (!opts.agentNamespaceSet && own?.spec.agentNamespace) || opts.agentNamespace;
    what = `listing MirrorDeliveries in namespace ${agentNamespace}`;
    const listed = await tryList<MirrorDeliveryList>(
      rest,
      groupPath(G, V, MIRROR_DELIVERY.plural, agentNamespace),
      { labelSelector: `${LABEL_ORIGIN_CLUSTER}=${hubCluster}` },
    );
    const dList = listed.ok ? listed.value : undefined;
    if (!dList) {
      notes.push(
        `you may not list MirrorDeliveries in ${agentNamespace}: the hub cluster ${hubCluster} is summarised like a follower`,
      );
    }
    const deliveries = new Map<string, readonly MirrorDelivery[]>(
      dList ? [[hubCluster, dList.items]] : [],
    );
    return {
      input: { now, clusters, mirrors, deliveries },
      access,
      hubCluster,
      agentNamespace,
      deliveriesRead: dList !== undefined,
      notes,
    };
  } catch (err) {
    throw describeApiFailure(err, server, what);
  }
}

// ---- reports: what `status` and `where` print ------------------------------------------------

export interface StatusReport {
  /** Where the view comes from. */
  source: { kind: 'cluster'; server: string; context?: string } | { kind: 'hub'; url: string };
  hubCluster: string;
  /** The hub's view of who is looking (--hub-url only). */
  whoami?: WhoAmI;
  generatedAt: string;
  overview: Overview;
  clusters: ClusterRow[];
  mirrors: MirrorRow[];
  /**
   * The hub's matrix (--hub-url only): from the hub cluster alone, a follower's cell cannot be
   * told synced from stale (its agent's report is in the follower).
   */
  matrix?: Matrix;
  /** Whether MirrorClusters were visible in full. */
  clustersVisible: boolean;
  notes: string[];
}

/** A follower cluster of one mirror, as the hub cluster knows it: counts, no namespace list. */
export interface ClusterSummary {
  cluster: string;
  mirror: string;
  kind: 'Secret' | 'ConfigMap';
  phase: Phase;
  namespaces: number;
  synced: number;
  failed: number;
  conflicts: number;
  denied: number;
  message?: string;
}

export interface WhereReport extends Where {
  /** One per (mirror, follower cluster) when read from the hub cluster; the items hold only
   *  their problems. Empty when the hub answered (--hub-url): its items are complete. */
  summaries: ClusterSummary[];
  notes: string[];
}

export function statusFromCluster(
  g: Gathered,
  source: { server: string; context?: string | undefined },
): StatusReport {
  return {
    source: {
      kind: 'cluster',
      server: source.server,
      ...(source.context ? { context: source.context } : {}),
    },
    hubCluster: g.hubCluster,
    generatedAt: new Date(g.input.now).toISOString(),
    overview: overview(g.input, g.access),
    clusters: clusterRows(g.input, g.access),
    mirrors: mirrorRows(g.input, g.access),
    clustersVisible: g.access.clusters,
    notes: g.notes,
  };
}

/**
 * Every copy named `name`: the hub cluster's from its deliveries (view.ts `where`), each follower
 * cluster's as the mirror's status holds it: one summary and the problems it lists.
 */
export function whereFromCluster(g: Gathered, name: string): WhereReport {
  const local = where(g.input, g.access, name);
  const items: WhereRow[] = [...local.items];
  const summaries: ClusterSummary[] = [];
  for (const m of visibleMirrors(g.input, g.access)) {
    const row = mirrorRow(m);
    if (row.targetName !== name) continue;
    const key = row.key;
    const kind = m.spec.source.kind === 'ConfigMap' ? 'ConfigMap' : 'Secret';
    for (const c of m.status?.clusters ?? []) {
      if (c.name === g.hubCluster && g.deliveriesRead) continue;
      summaries.push({
        cluster: c.name,
        mirror: key,
        kind,
        phase: c.phase ?? 'Pending',
        namespaces: c.namespaces ?? 0,
        synced: c.synced ?? 0,
        failed: c.failed ?? 0,
        conflicts: c.conflicts ?? 0,
        denied: c.denied ?? 0,
        ...(c.message ? { message: c.message } : {}),
      });
      for (const p of m.status?.problems ?? []) {
        if (p.cluster !== c.name) continue;
        items.push({
          cluster: p.cluster,
          namespace: p.namespace,
          state: p.state,
          ...(p.message ? { message: p.message } : {}),
          mirror: key,
          kind,
        });
      }
    }
  }
  items.sort(compareWhereRows);
  summaries.sort((a, b) => a.cluster.localeCompare(b.cluster) || a.mirror.localeCompare(b.mirror));
  return { ...local, items, summaries, notes: g.notes };
}

// ---- the hub's dashboard API (--hub-url) ----------------------------------------------------

export type Fetch = typeof fetch;

/** GET `path` of the dashboard API with the bearer token; its `{error}` on a refusal. */
export async function hubGet<T>(
  fetchFn: Fetch,
  base: string,
  path: string,
  token: string | undefined,
): Promise<T> {
  const url = base.replace(/\/+$/, '') + path;
  let res: Response;
  try {
    res = await fetchFn(url, {
      headers: {
        Accept: 'application/json',
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
      },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    throw new CliError(
      `cannot reach the hub at ${base}: ${errorMessage(cause ?? err)} (check --hub-url / MIRRORHUB_HUB_URL)`,
      { cause: err },
    );
  }
  const text = await res.text();
  if (!res.ok) {
    let message = text.slice(0, 300);
    try {
      const body = JSON.parse(text) as { error?: unknown };
      if (typeof body.error === 'string') message = body.error;
    } catch {
      // not JSON: the start of the text is the message
    }
    const hint =
      res.status === 401
        ? token
          ? ': the token was refused; pass another with --token or MIRRORHUB_TOKEN'
          : ': no token was sent; pass --token, set MIRRORHUB_TOKEN, or use a kubeconfig whose user has a bearer token'
        : res.status === 403
          ? ': your identity may not see this; ask for "list" on secretmirrors.mirrorhub.io'
          : '';
    throw new CliError(`the hub at ${base} answered ${res.status}: ${message}${hint}`);
  }
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new CliError(`the hub at ${base} answered GET ${path} with something that is not JSON`, {
      cause: err,
    });
  }
}

export function statusFromSnapshot(s: Snapshot, url: string): StatusReport {
  return {
    source: { kind: 'hub', url },
    hubCluster: s.hub.cluster,
    whoami: s.whoami,
    generatedAt: s.generatedAt,
    overview: s.overview,
    clusters: s.clusters,
    mirrors: s.mirrors,
    matrix: s.matrix,
    clustersVisible: s.whoami.clusters,
    notes: [],
  };
}

export function whereFromHub(w: Where): WhereReport {
  return { ...w, summaries: [], notes: [] };
}

/** -n with --hub-url: the hub answers for everything the identity may see; keep one namespace. */
export function onlyNamespace<R extends StatusReport | WhereReport>(r: R, ns: string): R {
  const mine = (key: string) => key.startsWith(`SecretMirror/${ns}/`);
  if ('mirrors' in r) {
    return {
      ...r,
      overview: {
        ...r.overview,
        attention: r.overview.attention.filter((a) => a.ref.startsWith('cluster:') || mine(a.ref)),
      },
      mirrors: r.mirrors.filter((m) => mine(m.key)),
      ...(r.matrix
        ? { matrix: { ...r.matrix, rows: r.matrix.rows.filter((x) => mine(x.key)) } }
        : {}),
    };
  }
  return { ...r, items: r.items.filter((i) => mine(i.mirror)) };
}
