// The MirrorCluster controller's decisions, with no I/O: how a MirrorCluster is reached (and
// whether its spec can be used at all), and its status and Events from the latest health probe,
// the EKS access's own health and the cleanups left there. controller.ts gathers and applies.
//
// Status semantics (docs/multicluster.md):
// - reachable: the API server answered the last probe (GET /version), whatever it answered.
//   False when it did not answer, or could not even be asked (the EKS access failed first).
// - authenticated: the last answered probe request was authenticated and authorized (not 401
//   or 403). Absent while unknown (the cluster did not answer).
// - agent: the heartbeat Lease mirrorhub-agent in the agent namespace: present = it exists and
//   was renewed within the grace period (default 3 x the agent's 30 s interval); version from
//   its mirrorhub.io/agent-version annotation; lastHeartbeat = its renewTime, written when it
//   is a report period (5 min) newer than the recorded one or the agent's health or version
//   changes, not on every renewal (the probe judges freshness each time). While the cluster
//   cannot be read, the last known agent fields stay and present turns false once the last
//   heartbeat is older than the grace period.
// - conditions: Reachable, Authenticated, AgentHealthy (True / False / Unknown) and Ready (all
//   three True). A heartbeat older than the grace period makes AgentHealthy and Ready Unknown:
//   the agent may be working, it is just not saying so.
// - Events: one per transition of Ready (reason or status), Warning unless Ready is True; one
//   when cleanups of deleted mirrors are left in the cluster, one when they are done.
import {
  LIMITS,
  type ClusterAccessType,
  type Condition,
  type EksAccess,
  type MirrorCluster,
  type MirrorClusterStatus,
} from '@mirrorhub/shared/api/index';
import {
  canonicalJson,
  findCondition,
  k8sTime,
  removeCondition,
  setCondition,
  withProgressConditions,
} from '@mirrorhub/shared/mirror/index';
import { validateClusterName } from '../names.js';
import { HEARTBEAT_LEASE } from '@mirrorhub/shared/api/contract';

// ---- access -----------------------------------------------------------------------------------

export interface KubeconfigRef {
  namespace: string;
  name: string;
  key: string;
}

/** How the hub reaches one MirrorCluster, from its spec. `key` changes iff the access does. */
export type AccessSpec = {
  agentNamespace: string;
  key: string;
} & (
  | { type: 'EKS'; eks: EksAccess }
  | { type: 'Kubeconfig'; secret: KubeconfigRef }
  | { type: 'InCluster' }
);

export type AccessResult = { ok: true; access: AccessSpec } | { ok: false; error: string };

export const DEFAULT_AGENT_NAMESPACE = 'mirrorhub-system';

/**
 * The access a MirrorCluster asks for, or why it cannot be used. The API server already refuses
 * a spec without exactly one of eks / kubeconfigSecretRef / inCluster; what only the hub can
 * judge is checked here:
 * - the name becomes a label value and part of status: it must be a DNS label;
 * - `inCluster` is the hub's own cluster, which the hub knows by its cluster name
 *   (MIRRORHUB_CLUSTER_NAME): the MirrorCluster must carry that name, and no other MirrorCluster
 *   may (two targets writing the same agent namespace would deliver everything twice).
 */
export function resolveAccess(mc: MirrorCluster, hubClusterName: string): AccessResult {
  const name = mc.metadata.name ?? '';
  const invalidName = validateClusterName(name);
  if (invalidName) return { ok: false, error: `MirrorCluster ${invalidName}` };
  const spec = mc.spec ?? {};
  const agentNamespace = spec.agentNamespace || DEFAULT_AGENT_NAMESPACE;
  const set = [
    spec.eks && 'eks',
    spec.kubeconfigSecretRef && 'kubeconfigSecretRef',
    spec.inCluster && 'inCluster',
  ].filter(Boolean);
  if (set.length !== 1) {
    return {
      ok: false,
      error: `set exactly one of spec.eks, spec.kubeconfigSecretRef or spec.inCluster: true (found ${set.length === 0 ? 'none' : set.join(', ')})`,
    };
  }
  if (spec.inCluster) {
    if (name !== hubClusterName) {
      return {
        ok: false,
        error: `an inCluster MirrorCluster is the hub's own cluster and must be named like it: "${hubClusterName}" (the hub's MIRRORHUB_CLUSTER_NAME), not "${name}"`,
      };
    }
    return {
      ok: true,
      access: {
        type: 'InCluster',
        agentNamespace,
        key: canonicalJson({ inCluster: true, agentNamespace }),
      },
    };
  }
  if (name === hubClusterName) {
    return {
      ok: false,
      error: `"${name}" is the hub's own cluster name (MIRRORHUB_CLUSTER_NAME); only an inCluster MirrorCluster may use it`,
    };
  }
  if (spec.eks) {
    const eks: EksAccess = {
      name: spec.eks.name,
      region: spec.eks.region,
      roleArn: spec.eks.roleArn,
      ...(spec.eks.externalId ? { externalId: spec.eks.externalId } : {}),
    };
    return {
      ok: true,
      access: { type: 'EKS', eks, agentNamespace, key: canonicalJson({ eks, agentNamespace }) },
    };
  }
  const ref = spec.kubeconfigSecretRef!;
  const secret: KubeconfigRef = {
    namespace: ref.namespace,
    name: ref.name,
    key: ref.key || 'kubeconfig',
  };
  return {
    ok: true,
    access: {
      type: 'Kubeconfig',
      secret,
      agentNamespace,
      key: canonicalJson({ secret, agentNamespace }),
    },
  };
}

/** status.type from the spec alone (also for a spec that cannot be used). */
export function accessTypeOf(mc: MirrorCluster): ClusterAccessType | undefined {
  const spec = mc.spec ?? {};
  if (spec.eks) return 'EKS';
  if (spec.kubeconfigSecretRef) return 'Kubeconfig';
  if (spec.inCluster) return 'InCluster';
  return undefined;
}

// ---- probe results ----------------------------------------------------------------------------

export type ProbeFailureKind = 'unreachable' | 'unauthorized' | 'forbidden' | 'failed';

export interface ProbeFailure {
  kind: ProbeFailureKind;
  /** HTTP status when the server answered. */
  status?: number;
  /** One line: what failed and what to check. */
  message: string;
}

export interface AgentLease {
  renewTime?: string;
  version?: string;
  holder?: string;
}

/** One health probe of a cluster (probe.ts). */
export interface ProbeResult {
  /** When the probe finished (hub clock, ms). */
  at: number;
  /** No client could be built: an EKS step failed, or the kubeconfig Secret is missing/invalid. */
  accessError?: string;
  /** GET /version. */
  version?: { ok: true; gitVersion: string } | { ok: false; failure: ProbeFailure };
  /** GET the agent's heartbeat Lease (only when /version answered). */
  lease?: { ok: true; lease: AgentLease | undefined } | { ok: false; failure: ProbeFailure };
}

// ---- status -----------------------------------------------------------------------------------

export const CONDITION = {
  ready: 'Ready',
  reachable: 'Reachable',
  authenticated: 'Authenticated',
  agentHealthy: 'AgentHealthy',
  cleanupPending: 'CleanupPending',
} as const;

export const CLUSTER_REASON = {
  ready: 'Ready',
  probing: 'Probing',
  invalidSpec: 'InvalidSpec',
  accessFailed: 'AccessFailed',
  reachable: 'Reachable',
  unreachable: 'Unreachable',
  probeFailed: 'ProbeFailed',
  authenticated: 'Authenticated',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  heartbeating: 'Heartbeating',
  agentMissing: 'AgentMissing',
  heartbeatStale: 'HeartbeatStale',
  leaseUnreadable: 'LeaseUnreadable',
  cleanupPending: 'CleanupPending',
  cleanupDone: 'CleanupDone',
} as const;

export interface PendingCleanup {
  /** MirrorDelivery (and payload Secret) name in the cluster's agent namespace. */
  delivery: string;
  /** The deleted mirror (`Kind/namespace/name`). */
  mirror: string;
}

export interface ClusterStatusInput {
  cluster: MirrorCluster;
  /** Why the spec cannot be used (nothing else is looked at then). */
  invalid?: string | undefined;
  /** Latest probe; undefined before the first one finished. */
  probe?: ProbeResult | undefined;
  /** EKS only: the access's own view (credentials, the last failed step). */
  eks?:
    | {
        credentialsExpireAt?: Date | undefined;
        identity?: string | undefined;
        server?: string | undefined;
        lastError?: { message: string } | undefined;
      }
    | undefined;
  /** Deliveries of deleted mirrors still (possibly) in this cluster. */
  pending?: readonly PendingCleanup[];
  agentNamespace: string;
  heartbeatGraceMs: number;
  /**
   * How often a healthy agent's heartbeat is written to status (agent.lastHeartbeat). Renewals
   * in between change nothing a reader acts on (AgentHealthy is judged on every probe), so they
   * are not written: one status write per cluster per this period, not per renewal, as the
   * kubelet reports an unchanged node status only every 5 minutes.
   */
  heartbeatReportMs: number;
  /** The latest renewTime read from the heartbeat Lease by any probe (clock ms). */
  lastRenewedAt?: number | undefined;
  now: Date;
}

export interface ClusterEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

const MAX_MESSAGE = LIMITS.MirrorClusterStatus.lastError;
// Condition and Event messages: an Event's note holds 1024 (LIMITS.Condition.message is larger).
const MAX_CONDITION_MESSAGE = 1024;
const MAX_PENDING_LISTED = 50;

/**
 * A healthy cluster is probed this many times less often than the health interval. What a
 * probe would find out sooner is found out anyway: a failing request to the cluster wakes its
 * probe at once (controller.ts), and a cluster stays "healthy" only while its heartbeat is
 * sure to be within the grace period at the next, later probe.
 */
export const HEALTHY_PROBE_FACTOR = 3;

/**
 * When to probe again (before ±10% jitter): after `intervalMs` x HEALTHY_PROBE_FACTOR when the
 * API server answered, the agent's Lease was read and its latest renewal will still be within
 * `graceMs` at that later probe (jitter included); after `intervalMs` otherwise.
 */
export function nextProbe(
  probe: ProbeResult,
  renewedAt: number | undefined,
  o: { now: number; intervalMs: number; graceMs: number },
): { healthy: boolean; inMs: number } {
  const slow = o.intervalMs * HEALTHY_PROBE_FACTOR;
  const healthy =
    probe.version?.ok === true &&
    probe.lease?.ok === true &&
    probe.lease.lease !== undefined &&
    renewedAt !== undefined &&
    o.now - renewedAt + slow * 1.1 < o.graceMs;
  return { healthy, inMs: healthy ? slow : o.intervalMs };
}

/**
 * `mc` with the latest heartbeat a probe read (`renewedAt`, clock ms) in place of the one in its
 * status, which is written only every heartbeatReportMs: what the dashboard shows. The same
 * object when the status is as new.
 */
export function withLatestHeartbeat(
  mc: MirrorCluster,
  renewedAt: number | undefined,
): MirrorCluster {
  const agent = mc.status?.agent;
  if (!agent?.lastHeartbeat || renewedAt === undefined) return mc;
  if (!(renewedAt > Date.parse(agent.lastHeartbeat))) return mc;
  return {
    ...mc,
    status: { ...mc.status, agent: { ...agent, lastHeartbeat: k8sTime(new Date(renewedAt)) } },
  };
}

/**
 * The MirrorCluster's status from its probe, with Reconciling and Stalled derived from Ready
 * (withProgressConditions: a credential the cluster refuses, Unauthorized or Forbidden, or an
 * invalid spec, is Stalled; an unreachable cluster or a stale heartbeat is Reconciling).
 */
export function planClusterStatus(input: ClusterStatusInput): {
  status: MirrorClusterStatus;
  events: ClusterEvent[];
} {
  const planned = planHealth(input);
  const conditions = withProgressConditions(planned.status.conditions, {
    now: input.now,
    generation: input.cluster.metadata.generation,
  });
  return { status: clean({ ...planned.status, conditions }), events: planned.events };
}

function planHealth(input: ClusterStatusInput): {
  status: MirrorClusterStatus;
  events: ClusterEvent[];
} {
  const { cluster, probe, now } = input;
  const prev = cluster.status ?? {};
  const generation = cluster.metadata.generation;
  const type = accessTypeOf(cluster);
  let conditions: Condition[] = [...(prev.conditions ?? [])];
  const set = (
    type: string,
    status: 'True' | 'False' | 'Unknown',
    reason: string,
    message: string,
  ) => {
    conditions = setCondition(
      conditions,
      {
        type,
        status,
        reason,
        message: truncate(message, MAX_CONDITION_MESSAGE),
        ...(generation !== undefined ? { observedGeneration: generation } : {}),
      },
      now,
    );
  };
  const base: MirrorClusterStatus = {
    ...(type ? { type } : {}),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };

  if (input.invalid !== undefined) {
    for (const c of [CONDITION.reachable, CONDITION.authenticated, CONDITION.agentHealthy]) {
      set(c, 'Unknown', CLUSTER_REASON.invalidSpec, 'the spec cannot be used');
    }
    set(CONDITION.ready, 'False', CLUSTER_REASON.invalidSpec, input.invalid);
    conditions = withPending(conditions, input.pending, now, generation);
    const status = clean({
      ...base,
      lastError: truncate(input.invalid, MAX_MESSAGE),
      ...pendingField(input.pending),
      conditions,
    });
    return { status, events: events(prev, status) };
  }

  const eksCredentials = {
    ...(input.eks?.credentialsExpireAt
      ? { credentialsExpireAt: k8sTime(input.eks.credentialsExpireAt) }
      : {}),
    ...(input.eks?.identity ? { identity: input.eks.identity } : {}),
    ...(input.eks?.server ? { server: input.eks.server } : {}),
  };

  if (!probe) {
    for (const c of [CONDITION.reachable, CONDITION.authenticated, CONDITION.agentHealthy]) {
      if (!findCondition(conditions, c))
        set(c, 'Unknown', CLUSTER_REASON.probing, 'not checked yet');
    }
    if (!findCondition(conditions, CONDITION.ready)) {
      set(CONDITION.ready, 'Unknown', CLUSTER_REASON.probing, 'waiting for the first health check');
    }
    conditions = withPending(conditions, input.pending, now, generation);
    const status = clean({
      ...prev,
      ...base,
      ...eksCredentials,
      pendingCleanup: undefined,
      ...pendingField(input.pending),
      conditions,
    });
    return { status, events: events(prev, status) };
  }

  let reachable: boolean;
  let authenticated: boolean | undefined;
  let kubernetesVersion = prev.kubernetesVersion;
  let lastError: string | undefined;
  let agent = prev.agent ? { ...prev.agent } : undefined;
  // Ready: the first problem found, in the order a person would fix them.
  let notReady: { status: 'False' | 'Unknown'; reason: string; message: string } | undefined;
  const v = probe.version;

  if (probe.accessError !== undefined || !v) {
    const message = probe.accessError ?? 'the cluster was not probed';
    reachable = false;
    authenticated = false;
    lastError = message;
    set(
      CONDITION.reachable,
      'Unknown',
      CLUSTER_REASON.accessFailed,
      'not asked: the hub could not build credentials for it',
    );
    set(CONDITION.authenticated, 'False', CLUSTER_REASON.accessFailed, message);
    notReady = { status: 'False', reason: CLUSTER_REASON.accessFailed, message };
  } else if (!v.ok && v.failure.kind === 'unreachable') {
    reachable = false;
    lastError = v.failure.message;
    set(CONDITION.reachable, 'False', CLUSTER_REASON.unreachable, v.failure.message);
    set(
      CONDITION.authenticated,
      'Unknown',
      CLUSTER_REASON.unreachable,
      'the API server did not answer',
    );
    notReady = { status: 'False', reason: CLUSTER_REASON.unreachable, message: v.failure.message };
  } else {
    reachable = true;
    set(
      CONDITION.reachable,
      'True',
      CLUSTER_REASON.reachable,
      v.ok
        ? `the API server answered (${v.gitVersion})`
        : `the API server answered (${v.failure.status ?? 'error'})`,
    );
    if (v.ok) kubernetesVersion = v.gitVersion;
    // The first request that was refused decides "authenticated".
    const refused = [
      v.ok ? undefined : v.failure,
      probe.lease && !probe.lease.ok ? probe.lease.failure : undefined,
    ].find((f) => f && (f.kind === 'unauthorized' || f.kind === 'forbidden'));
    if (refused) {
      authenticated = false;
      lastError = refused.message;
      const reason =
        refused.kind === 'unauthorized' ? CLUSTER_REASON.unauthorized : CLUSTER_REASON.forbidden;
      set(CONDITION.authenticated, 'False', reason, refused.message);
      notReady = { status: 'False', reason, message: refused.message };
    } else if (!v.ok) {
      lastError = v.failure.message;
      set(CONDITION.authenticated, 'Unknown', CLUSTER_REASON.probeFailed, v.failure.message);
      notReady = {
        status: 'False',
        reason: CLUSTER_REASON.probeFailed,
        message: v.failure.message,
      };
    } else {
      authenticated = true;
      set(
        CONDITION.authenticated,
        'True',
        CLUSTER_REASON.authenticated,
        "the hub's requests are authenticated and authorized",
      );
    }
  }

  // The agent.
  const lease = probe.lease;
  const graceText = formatDuration(input.heartbeatGraceMs);
  if (lease?.ok) {
    const l = lease.lease;
    if (!l) {
      agent = { present: false };
      const message = `no heartbeat Lease ${HEARTBEAT_LEASE} in ${input.agentNamespace}: install the agent (chart mirrorhub-agent, clusterName=${cluster.metadata.name ?? ''}) in that namespace`;
      set(CONDITION.agentHealthy, 'False', CLUSTER_REASON.agentMissing, message);
      notReady ??= { status: 'False', reason: CLUSTER_REASON.agentMissing, message };
    } else {
      const renewed = l.renewTime ? Date.parse(l.renewTime) : NaN;
      const fresh = Number.isFinite(renewed) && now.getTime() - renewed <= input.heartbeatGraceMs;
      // A healthy agent that keeps heartbeating: the recorded time stands until it is a report
      // period old (see heartbeatReportMs).
      const recorded = prev.agent?.lastHeartbeat ? Date.parse(prev.agent.lastHeartbeat) : NaN;
      const keep =
        fresh &&
        prev.agent?.present === true &&
        (prev.agent.version ?? '') === (l.version ?? '') &&
        renewed >= recorded &&
        renewed - recorded < input.heartbeatReportMs;
      agent = {
        present: fresh,
        ...(l.version ? { version: l.version } : {}),
        ...(keep
          ? { lastHeartbeat: prev.agent!.lastHeartbeat! }
          : Number.isFinite(renewed)
            ? { lastHeartbeat: k8sTime(new Date(renewed)) }
            : {}),
      };
      const who = `agent${l.version ? ` ${l.version}` : ''}`;
      if (fresh) {
        set(CONDITION.agentHealthy, 'True', CLUSTER_REASON.heartbeating, `${who} is heartbeating`);
      } else {
        const message = `${who} has not renewed its heartbeat Lease ${input.agentNamespace}/${HEARTBEAT_LEASE} for more than ${graceText}${agent.lastHeartbeat ? ` (last: ${agent.lastHeartbeat})` : ''}: check the agent's pods in that namespace`;
        set(CONDITION.agentHealthy, 'Unknown', CLUSTER_REASON.heartbeatStale, message);
        notReady ??= { status: 'Unknown', reason: CLUSTER_REASON.heartbeatStale, message };
      }
    }
  } else {
    // Not read: keep what was known, and let it go stale.
    if (agent?.lastHeartbeat) {
      // The status may hold an older time than the last probe read (heartbeatReportMs).
      const renewed = Math.max(Date.parse(agent.lastHeartbeat), input.lastRenewedAt ?? -Infinity);
      if (!(now.getTime() - renewed <= input.heartbeatGraceMs)) agent.present = false;
    }
    const why =
      lease && !lease.ok
        ? lease.failure.message
        : reachable
          ? 'the heartbeat Lease was not read'
          : 'the cluster cannot be read';
    const reason =
      lease && !lease.ok && lease.failure.kind !== 'unreachable'
        ? CLUSTER_REASON.leaseUnreadable
        : CLUSTER_REASON.unreachable;
    set(CONDITION.agentHealthy, 'Unknown', reason, why);
    if (lease && !lease.ok) {
      lastError ??= lease.failure.message;
      notReady ??= {
        status: 'False',
        reason: CLUSTER_REASON.probeFailed,
        message: lease.failure.message,
      };
    }
  }

  // A failing credential refresh while the old session still works: not an outage, but say it.
  lastError ??= input.eks?.lastError?.message;

  if (notReady) {
    set(CONDITION.ready, notReady.status, notReady.reason, notReady.message);
  } else {
    set(
      CONDITION.ready,
      'True',
      CLUSTER_REASON.ready,
      `reachable, authenticated, ${agent?.version ? `agent ${agent.version}` : 'agent'} heartbeating`,
    );
  }
  conditions = withPending(conditions, input.pending, now, generation);
  const status = clean({
    ...base,
    reachable,
    ...(authenticated !== undefined ? { authenticated } : {}),
    ...(agent ? { agent } : {}),
    ...(kubernetesVersion ? { kubernetesVersion } : {}),
    ...eksCredentials,
    ...(lastError ? { lastError: truncate(lastError, MAX_MESSAGE) } : {}),
    ...pendingField(input.pending),
    conditions: orderConditions(conditions),
  });
  return { status, events: events(prev, status) };
}

// ---- cleanups left in a cluster ---------------------------------------------------------------

const PENDING_PREFIX =
  'deliveries of deleted mirrors left in this cluster, removed when the hub reaches it again: ';

/** The CleanupPending condition message for `pending`, for people (status.pendingCleanup is the record). */
export function formatPendingCleanups(pending: readonly PendingCleanup[]): string {
  const sorted = [...pending].sort((a, b) =>
    a.delivery < b.delivery ? -1 : a.delivery > b.delivery ? 1 : 0,
  );
  const shown = sorted.slice(0, MAX_PENDING_LISTED).map((p) => `${p.delivery} (${p.mirror})`);
  const more = sorted.length - shown.length;
  return `${PENDING_PREFIX}${shown.join(', ')}${more > 0 ? `, and ${more} more` : ''}`;
}

/** The cleanups recorded in a MirrorCluster's status, so a restarted hub still shows them. */
export function parsePendingCleanups(status: MirrorClusterStatus | undefined): PendingCleanup[] {
  return (status?.pendingCleanup ?? []).map((p) => ({ delivery: p.delivery, mirror: p.mirror }));
}

/** status.pendingCleanup: sorted, so the same set never reads as a change. */
function pendingField(
  pending: readonly PendingCleanup[] | undefined,
): Pick<MirrorClusterStatus, 'pendingCleanup'> {
  if (!pending || pending.length === 0) return {};
  const sorted = [...pending].sort((a, b) =>
    a.delivery < b.delivery ? -1 : a.delivery > b.delivery ? 1 : 0,
  );
  return {
    pendingCleanup: sorted
      .slice(0, LIMITS.MirrorClusterStatus.pendingCleanup)
      .map((p) => ({ delivery: p.delivery, mirror: p.mirror })),
  };
}

function withPending(
  conditions: Condition[],
  pending: readonly PendingCleanup[] | undefined,
  now: Date,
  generation: number | undefined,
): Condition[] {
  if (!pending || pending.length === 0)
    return removeCondition(conditions, CONDITION.cleanupPending);
  return setCondition(
    conditions,
    {
      type: CONDITION.cleanupPending,
      status: 'True',
      reason: CLUSTER_REASON.cleanupPending,
      message: formatPendingCleanups(pending),
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    },
    now,
  );
}

// ---- events -----------------------------------------------------------------------------------

function events(prev: MirrorClusterStatus, next: MirrorClusterStatus): ClusterEvent[] {
  const out: ClusterEvent[] = [];
  const was = findCondition(prev.conditions, CONDITION.ready);
  const is = findCondition(next.conditions, CONDITION.ready);
  if (
    is &&
    is.reason !== CLUSTER_REASON.probing &&
    (was?.status !== is.status || was?.reason !== is.reason)
  ) {
    out.push({
      type: is.status === 'True' ? 'Normal' : 'Warning',
      reason: is.status === 'True' ? 'ClusterReady' : is.reason,
      message: is.message,
    });
  }
  const before = parsePendingCleanups(prev).length;
  const after = parsePendingCleanups(next);
  const beforeNames = new Set(parsePendingCleanups(prev).map((p) => p.delivery));
  const added = after.filter((p) => !beforeNames.has(p.delivery));
  if (added.length > 0) {
    out.push({
      type: 'Warning',
      reason: CLUSTER_REASON.cleanupPending,
      message: truncate(
        `${added.length} ${added.length === 1 ? 'delivery' : 'deliveries'} of deleted mirrors left in this cluster until the hub reaches it: ${added.map((p) => `${p.delivery} (${p.mirror})`).join(', ')}`,
        MAX_CONDITION_MESSAGE,
      ),
    });
  }
  if (before > 0 && after.length === 0) {
    out.push({
      type: 'Normal',
      reason: CLUSTER_REASON.cleanupDone,
      message: 'the deliveries of deleted mirrors left in this cluster are removed',
    });
  }
  return out;
}

// ---- helpers ----------------------------------------------------------------------------------

const ORDER: string[] = [
  CONDITION.ready,
  CONDITION.reachable,
  CONDITION.authenticated,
  CONDITION.agentHealthy,
  CONDITION.cleanupPending,
  'Reconciling',
  'Stalled',
];

function orderConditions(conditions: Condition[]): Condition[] {
  const rank = (t: string) => {
    const i = ORDER.indexOf(t);
    return i < 0 ? ORDER.length : i;
  };
  return [...conditions].sort((a, b) => rank(a.type) - rank(b.type));
}

function clean(status: MirrorClusterStatus): MirrorClusterStatus {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(status)) if (v !== undefined) out[k] = v;
  if (Array.isArray(out['conditions']))
    out['conditions'] = orderConditions(out['conditions'] as Condition[]);
  return out as MirrorClusterStatus;
}

function truncate(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

export function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
