// One health probe of a cluster, as the hub's identity there: GET /version, then the agent's
// heartbeat Lease in the agent namespace. Every request has a deadline; every failure is turned
// into one line that says what failed and what to check (plan.ts decides what it means).
import type { V1Lease } from '@kubernetes/client-node';
import { type ClusterAccessType } from '@mirrorhub/shared/api/index';
import { errorMessage, httpStatusOf } from '@mirrorhub/shared/kit/runtime/index';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { groupPath, isNotFound, type RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { RequestTimeoutError, timedRestClient, withDeadline } from './client.js';
import type { AgentLease, ProbeFailure, ProbeResult } from './plan.js';
import { ANNOTATION_AGENT_VERSION, HEARTBEAT_LEASE } from '@mirrorhub/shared/api/contract';

/** What a probe needs to know to say what to check. */
export interface ProbeContext {
  cluster: string;
  type: ClusterAccessType;
  agentNamespace: string;
  /** EKS: the role the hub assumed (its access entry must exist). */
  roleArn?: string;
  /** EKS: the cluster's name in EKS. */
  eksName?: string;
  /** Kubeconfig: `namespace/name` of the Secret. */
  secret?: string;
  timeoutMs: number;
}

/**
 * One pooled client per cluster for its probes, rebuilt only when the cluster's KubeAccess is
 * replaced (new endpoint, CA or kubeconfig). A client per probe would pay a TLS handshake per
 * request and leave its kept-alive connections open until the API server drops them: at 100
 * clusters probed every few seconds, thousands of idle sockets in the hub.
 */
export class ProbeClient {
  private access: KubeAccess | undefined;
  private rest: RestClient | undefined;

  constructor(private readonly timeoutMs: number) {}

  for(kc: KubeAccess): RestClient {
    if (this.rest && this.access === kc) return this.rest;
    this.rest?.close();
    this.access = kc;
    this.rest = timedRestClient(kc, this.timeoutMs);
    return this.rest;
  }

  close(): void {
    this.rest?.close();
    this.rest = undefined;
    this.access = undefined;
  }
}

/**
 * Probe the cluster of `kc`. Never throws: `kubeConfig` failures become `accessError`, request
 * failures a ProbeFailure; each failure is also handed to `report` (EKS token / endpoint
 * refresh).
 */
export async function probeCluster(
  kubeConfig: () => Promise<KubeAccess>,
  client: ProbeClient,
  ctx: ProbeContext,
  report: (err: unknown) => void,
  now: () => number,
): Promise<ProbeResult> {
  let kc: KubeAccess;
  try {
    kc = await kubeConfig();
  } catch (err) {
    return { at: now(), accessError: errorMessage(err) };
  }
  const server = kc.getCurrentCluster()?.server ?? 'the API server';
  let rest: RestClient;
  try {
    rest = client.for(kc);
  } catch (err) {
    return { at: now(), accessError: errorMessage(err) };
  }
  let version: ProbeResult['version'];
  try {
    const info = await withDeadline('GET /version', ctx.timeoutMs, () =>
      rest.get<{ gitVersion?: string }>('/version'),
    );
    version = { ok: true, gitVersion: info.gitVersion ?? '' };
  } catch (err) {
    report(err);
    version = { ok: false, failure: describeFailure(err, 'GET /version', server, ctx) };
  }
  if (!version.ok) return { at: now(), version };
  let lease: ProbeResult['lease'];
  const what = `reading Lease ${ctx.agentNamespace}/${HEARTBEAT_LEASE}`;
  try {
    const l = await withDeadline(what, ctx.timeoutMs, () =>
      rest.get<V1Lease>(
        groupPath('coordination.k8s.io', 'v1', 'leases', ctx.agentNamespace, HEARTBEAT_LEASE),
      ),
    );
    const found: AgentLease = {};
    const renew = l.spec?.renewTime as unknown;
    if (renew instanceof Date) found.renewTime = renew.toISOString();
    else if (typeof renew === 'string') found.renewTime = renew;
    const v = l.metadata?.annotations?.[ANNOTATION_AGENT_VERSION];
    if (v) found.version = v.slice(0, 64);
    if (l.spec?.holderIdentity) found.holder = l.spec.holderIdentity;
    lease = { ok: true, lease: found };
  } catch (err) {
    if (isNotFound(err)) {
      lease = { ok: true, lease: undefined };
    } else {
      report(err);
      lease = { ok: false, failure: describeFailure(err, what, server, ctx) };
    }
  }
  return { at: now(), version, lease };
}

/** A failed probe request, classified and worded with what to check. */
export function describeFailure(
  err: unknown,
  what: string,
  server: string,
  ctx: ProbeContext,
): ProbeFailure {
  const status = httpStatusOf(err);
  const detail = errorMessage(err).replace(/\s+/g, ' ').slice(0, 400);
  if (status === undefined) {
    // A deadline's error already names the request.
    const failed = err instanceof RequestTimeoutError ? detail : `${what} failed: ${detail}`;
    return {
      kind: 'unreachable',
      message: `${failed}; check that the hub can reach ${server} (network, firewall/security groups, private endpoint access)`,
    };
  }
  if (status === 401) {
    const check =
      ctx.type === 'EKS'
        ? `check that EKS cluster ${ctx.eksName ?? ctx.cluster} has an access entry for ${ctx.roleArn ?? 'the role the hub assumes'} (kubernetesGroups [mirrorhub-hub]) and that eks.name names this cluster`
        : ctx.type === 'Kubeconfig'
          ? `check the credentials in the kubeconfig Secret ${ctx.secret ?? ''} (expired token or certificate?)`
          : "check the hub's ServiceAccount token";
    return {
      kind: 'unauthorized',
      status,
      message: `${what}: the API server refused the hub's credentials (401 Unauthorized); ${check}`,
    };
  }
  if (status === 403) {
    const check =
      ctx.type === 'EKS'
        ? `check that the agent chart's hub-access Role and RoleBinding exist in ${ctx.agentNamespace} and bind group mirrorhub-hub, the kubernetesGroups of the access entry for ${ctx.roleArn ?? 'the hub role'}`
        : `check that the agent chart's hub-access Role and RoleBinding exist in ${ctx.agentNamespace} and bind the identity of the hub's credentials (hubAccess.group / hubAccess.users)`;
    return { kind: 'forbidden', status, message: `${what}: ${detail}; ${check}` };
  }
  return { kind: 'failed', status, message: `${what} failed: ${detail}` };
}
