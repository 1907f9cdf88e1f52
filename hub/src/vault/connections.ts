// VaultConnections and ClusterVaultConnections: resolves each into a VaultClient (with the
// credentials of the Secrets and ServiceAccounts it names) and reports whether the hub can log in
// with it (status.ready, condition Ready, an Event on every change).
//
// A client is built when first asked for and kept while the connection's spec (generation) stays:
// the hub's own status writes do not rebuild it. A spec change builds a new one and closes the
// old once its requests in flight are done (a dynamic secret read cut in the middle would be
// minted by Vault and lost to the hub), revoking the token the old one minted. Referenced Secrets are read (GET) when a client is
// built, and watched (one field-selected watch per Secret, ref-counted like mirror sources): when
// the value a client was built with changes (a rotated token or secret_id), the client is built
// again and logs in at once. A failed login also reads them again.
//
// Tenancy, by construction: a VaultConnection names Secrets and a ServiceAccount only in its own
// namespace (its schema has no namespace fields); Kubernetes auth with the hub's OWN
// ServiceAccount exists only in a ClusterVaultConnection; a SecretMirror may use a
// ClusterVaultConnection only when spec.allowedNamespaces admits its namespace and
// spec.tenantPaths grants the path (`refusal`, paths.ts).
//
// Several hub replicas: every replica builds the clients it reads Vault with (each polls its
// own Vault KV sources), but only the leader writes a connection's status and Events.
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import {
  CLUSTER_VAULT_CONNECTION,
  DEFAULT_POLL_PERIOD_MS,
  GROUP,
  VAULT_CONNECTION,
  VERSION,
  type ClusterVaultConnection,
  type VaultConnection,
  type VaultConnectionStatus,
  type VaultSourceRef,
  objectPath,
} from '@mirrorhub/shared/api/index';
import {
  Reconciler,
  StatusWriter,
  type ControllerEvent,
} from '@mirrorhub/shared/kit/controller/index';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { createWatcher, watchTuning, type Watcher } from '@mirrorhub/shared/kit/k8s/watcher';
import type { ProcessResult } from '@mirrorhub/shared/kit/k8s/workqueue';
import {
  findCondition,
  setCondition,
  withProgressConditions,
} from '@mirrorhub/shared/mirror/index';
import {
  childLogger,
  errorMessage,
  realClock,
  type Clock,
  type ControllerMetrics,
  type Counter,
  type Logger,
} from '@mirrorhub/shared/kit/runtime/index';
import { FIELD_MANAGER, USER_AGENT } from '@mirrorhub/shared/api/contract';
import {
  appRoleAuth,
  isVaultError,
  kubernetesAuth,
  tokenAuth,
  VaultClient,
  type VaultAuth,
} from './index.js';
import { SourceWatches } from '../object-watches.js';
import {
  ConnectionConfigError,
  isTransient,
  needsNamespaceLabels,
  notReadyReason,
  outcomeOf,
  referencedSecrets,
  tenancyRefusal,
  type SecretRole,
} from './decide.js';
import { grantRefusal, type GrantUse } from './paths.js';
import { ALWAYS_LEADING, type Role } from '../shards/ownership.js';

const { createHash } = crypto;

const SECRET_ROLES: readonly SecretRole[] = ['token', 'roleId', 'secretId'];

const CONTROLLER = 'vaultconnection';

type AnyConnection = VaultConnection | ClusterVaultConnection;

export interface ServiceAccountRef {
  namespace: string;
  name: string;
}

export interface VaultConnectionsOptions {
  kubeConfig: KubeAccess;
  /** See HubConfig.watchProgressDeadlineMs. */
  watchProgressDeadlineMs?: number | undefined;
  /** The hub's own ServiceAccount (Kubernetes auth of a ClusterVaultConnection without serviceAccountRef). */
  serviceAccount?: ServiceAccountRef | undefined;
  /** Whether the hub may request tokens of tenants' ServiceAccounts (chart value, default off). */
  tenantServiceAccountTokens?: boolean | undefined;
  /**
   * The namespaces of mirrorhub's own ServiceAccounts (the hub's, and the agent's where it runs
   * in this cluster): no VaultConnection there gets a token of one of theirs.
   */
  ownNamespaces?: readonly string[] | undefined;
  /** A connection changed (spec, or became present/absent): `key` as connectionKey(). */
  onChange(key: string): void;
  identity: string;
  logger: Logger;
  metrics: ControllerMetrics;
  /** Requests to Vault by operation and outcome (mirrorhub_vault_requests_total). */
  requests: Counter<'operation' | 'outcome'>;
  /** Per Vault request (default 10 s). */
  requestTimeoutMs?: number | undefined;
  /** How often a Ready connection's login is checked again (default 5 min). */
  recheckMs?: number | undefined;
  clock?: Clock | undefined;
  /** Whether this replica leads (default: always): only the leader writes status and Events. */
  role?: Role | undefined;
}

/** mirrorhub_vault_requests_total: every request to Vault by operation and outcome. */
export function vaultRequests(metrics: ControllerMetrics): Counter<'operation' | 'outcome'> {
  return metrics.counter(
    'vault_requests_total',
    'Requests to Vault / OpenBao by operation (login, detect, metadata, read; inspect, write, ' +
      'remove for Vault destinations; issue, renew, revoke for dynamic sources) and outcome.',
    ['operation', 'outcome'],
  );
}

function keyOfObject(obj: AnyConnection): string {
  return obj.kind === 'ClusterVaultConnection' || !obj.metadata.namespace
    ? `ClusterVaultConnection/${obj.metadata.name ?? ''}`
    : `VaultConnection/${obj.metadata.namespace}/${obj.metadata.name ?? ''}`;
}

interface Built {
  /** metadata.generation of the spec the client was built from. */
  generation: string;
  client: VaultClient;
  /** A login failed, or a referenced Secret changed: read the Secrets again before the next use. */
  stale: boolean;
  /** `namespace/name/key` -> digest of the value the client was built with. */
  secrets: Map<string, string>;
}

const secretReadKey = (namespace: string, name: string, key: string): string =>
  `${namespace}/${name}/${key}`;
const digestOf = (b64: string): string => createHash('sha256').update(b64).digest('hex');

export class VaultConnections {
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly rest: RestClient;
  private readonly reconciler: Reconciler;
  private readonly writer: StatusWriter<AnyConnection>;
  private readonly namespaced: Watcher<VaultConnection>;
  private readonly cluster: Watcher<ClusterVaultConnection>;
  private readonly built = new Map<string, Built>();
  private readonly building = new Map<string, Promise<VaultClient>>();
  /**
   * One field-selected watch per Secret a connection reads its credentials from (keyed
   * `<connection key>#<role>`), shared and ref-counted as mirror sources are: a rotated token or
   * secret_id rebuilds the client at once instead of after the old one fails.
   */
  private readonly secretWatches: SourceWatches;
  private stopped = false;

  private unsubscribeRole: (() => void) | undefined;

  constructor(private readonly opts: VaultConnectionsOptions) {
    this.log = childLogger(opts.logger, { controller: CONTROLLER });
    this.clock = opts.clock ?? realClock;
    this.rest = new RestClient(opts.kubeConfig, { userAgent: USER_AGENT.hub });
    this.writer = new StatusWriter<AnyConnection>({
      rest: this.rest,
      pathOf: connectionPath,
      keyOf: keyOfObject,
      fieldManager: FIELD_MANAGER.hub,
      reportingInstance: opts.identity,
      metrics: opts.metrics,
      logger: this.log,
      summary: (status) => ({ ready: status?.ready }),
      detail: (status) => ({ message: status?.message }),
      clock: this.clock,
    });
    this.reconciler = new Reconciler({
      name: CONTROLLER,
      reconcile: (key) => this.reconcile(key),
      logger: this.log,
      metrics: opts.metrics,
      shutdownTimeoutMs: 10_000,
      clock: this.clock,
    });
    this.secretWatches = new SourceWatches({
      kubeConfig: opts.kubeConfig,
      logger: this.log,
      onChange: (keys) => this.secretsChanged(keys),
    });
    // A fresh look at the default poll period repairs whatever the watches missed.
    const fresh = {
      resyncPeriodMs: DEFAULT_POLL_PERIOD_MS,
      ...watchTuning(opts.watchProgressDeadlineMs),
    };
    this.namespaced = createWatcher<VaultConnection>(
      opts.kubeConfig,
      { group: GROUP, version: VERSION, plural: VAULT_CONNECTION.plural },
      fresh,
    );
    this.cluster = createWatcher<ClusterVaultConnection>(
      opts.kubeConfig,
      { group: GROUP, version: VERSION, plural: CLUSTER_VAULT_CONNECTION.plural },
      fresh,
    );
  }

  async start(): Promise<void> {
    this.unsubscribeRole = (this.opts.role ?? ALWAYS_LEADING).onChange((leading) => {
      // A new leader reports every connection as it finds it.
      if (!leading) return;
      for (const c of [...this.namespaced.list(), ...this.cluster.list()]) {
        this.reconciler.add(keyOfObject(c));
      }
    });
    for (const w of [this.namespaced, this.cluster] as Watcher<AnyConnection>[]) {
      this.reconciler.watch(w, {
        onAdd: (obj) => this.changed(obj),
        onUpdate: (obj) => this.changed(obj),
        onDelete: (obj) => this.changed(obj, true),
        onListed: () => this.writer.relisted(),
      });
    }
    await this.reconciler.synced();
    this.reconciler.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribeRole?.();
    await this.reconciler.stop();
    await this.secretWatches.stop();
    const all = [...this.built.values()];
    this.built.clear();
    await Promise.all(all.map((b) => b.client.close().catch(() => undefined)));
    this.rest.close();
  }

  hasSynced(): boolean {
    return this.namespaced.hasSynced() && this.cluster.hasSynced();
  }

  private changed(obj: AnyConnection, deleted = false): void {
    const key = keyOfObject(obj);
    if (deleted) this.writer.deleted(key);
    else if (this.writer.observed(obj)) return;
    this.reconciler.add(key);
  }

  /** The connection object from the cache (undefined: absent). */
  get(ref: VaultSourceRef['connection']): AnyConnection | undefined {
    return ref.kind === 'VaultConnection'
      ? this.namespaced.get(ref.name, ref.namespace)
      : this.cluster.get(ref.name);
  }

  /**
   * Why a SecretMirror in `namespace` may not use `ref` (undefined: it may). A VaultConnection is
   * always the mirror's own namespace's (resolveSource makes it so); a ClusterVaultConnection
   * must list the namespace or select it by its labels, and grant `access` (the path and its
   * use) in spec.tenantPaths (paths.ts).
   */
  async refusal(
    ref: VaultSourceRef['connection'],
    namespace: string | undefined,
    access?: { path: string; use: GrantUse },
  ): Promise<string | undefined> {
    if (ref.kind !== 'ClusterVaultConnection' || namespace === undefined) return undefined;
    const conn = this.cluster.get(ref.name);
    if (!conn) return `ClusterVaultConnection "${ref.name}" not found`;
    const allowed = conn.spec.allowedNamespaces;
    let labels: Record<string, string> | Error = {};
    if (needsNamespaceLabels(allowed, namespace)) {
      try {
        const ns = await this.rest.request<{ metadata?: { labels?: Record<string, string> } }>(
          'GET',
          `/api/v1/namespaces/${encodeURIComponent(namespace)}`,
        );
        labels = ns.metadata?.labels ?? {};
      } catch (err) {
        labels = err instanceof Error ? err : new Error(errorMessage(err));
      }
    }
    const denied = tenancyRefusal(ref.name, allowed, namespace, labels);
    if (denied !== undefined || !access) return denied;
    return grantRefusal(ref.name, conn.spec.tenantPaths, namespace, access.path, access.use);
  }

  /** A client for the connection; throws (redacted, path-free) when it cannot be built. */
  async client(ref: VaultSourceRef['connection']): Promise<VaultClient> {
    const conn = this.get(ref);
    if (!conn) {
      throw new ConnectionConfigError(
        `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name} not found`,
      );
    }
    const key = keyOfObject(conn);
    const generation = String(conn.metadata.generation ?? conn.metadata.resourceVersion ?? '');
    const have = this.built.get(key);
    if (have && have.generation === generation && !have.stale) return have.client;
    const pending = this.building.get(key);
    if (pending) return pending;
    const p = (async () => {
      try {
        const secrets = new Map<string, string>();
        const client = await this.build(conn, secrets);
        const old = this.built.get(key);
        this.built.set(key, { generation, client, stale: false, secrets });
        if (old) void old.client.close({ revoke: true }).catch(() => undefined);
        return client;
      } finally {
        this.building.delete(key);
      }
    })();
    this.building.set(key, p);
    return p;
  }

  /**
   * What a mirror's request through `ref` just saw: a Vault that cannot serve (down, sealed), a
   * login that failed, or a Vault that serves again. When that contradicts the connection's
   * Ready condition, the connection is checked now, so `kubectl get vconn` agrees with the
   * mirrors using it.
   */
  observed(ref: VaultSourceRef['connection'], err: unknown): void {
    const conn = this.get(ref);
    if (!conn) return;
    const ready = conn.status?.ready;
    // A login that failed under a mirror (its token revoked out of band): not Ready from now,
    // not at the next periodic check.
    const down = err !== undefined && (isTransient(err) || isVaultError(err, 'login-failed'));
    if ((down && ready !== false) || (err === undefined && ready === false)) {
      this.reconciler.add(keyOfObject(conn));
    }
  }

  /** A login with this connection's client failed: read its Secrets again next time. */
  loginFailed(ref: VaultSourceRef['connection']): void {
    const conn = this.get(ref);
    if (!conn) return;
    const b = this.built.get(keyOfObject(conn));
    if (b) b.stale = true;
  }

  // ---- referenced Secrets -----------------------------------------------------------------------

  /** Watch exactly the Secrets `conn` reads (none once it is gone). */
  private watchSecrets(key: string, conn: AnyConnection | undefined): void {
    const refs = conn
      ? referencedSecrets(
          conn.spec.auth as ClusterVaultConnection['spec']['auth'],
          conn.metadata.namespace,
        )
      : [];
    for (const role of SECRET_ROLES) {
      const ref = refs.find((r) => r.role === role);
      this.secretWatches.set(
        `${key}#${role}`,
        ref ? { kind: 'Secret', namespace: ref.namespace, name: ref.name } : undefined,
      );
    }
  }

  /**
   * A watched Secret changed (or was listed): a connection whose client was built with other
   * values, or that has no client, is built again and logs in now.
   */
  private secretsChanged(keys: readonly string[]): void {
    if (this.stopped) return;
    const conns = new Set(keys.map((k) => k.slice(0, k.lastIndexOf('#'))));
    for (const key of conns) {
      const b = this.built.get(key);
      if (b && !b.stale && !this.secretsDiffer(b)) continue;
      if (b) {
        b.stale = true;
        this.log.info({ connection: key }, 'a Secret the Vault connection uses changed');
      }
      this.reconciler.add(key);
    }
  }

  private secretsDiffer(b: Built): boolean {
    for (const [at, digest] of b.secrets) {
      const [namespace = '', name = '', ...rest] = at.split('/');
      const seen = this.secretWatches.get({ kind: 'Secret', namespace, name });
      if (seen.state === 'missing') return true;
      if (seen.state !== 'found') continue;
      const b64 = seen.object.data?.[rest.join('/')];
      if (b64 === undefined || digestOf(b64) !== digest) return true;
    }
    return false;
  }

  // ---- building a client ------------------------------------------------------------------------

  private async build(conn: AnyConnection, secrets: Map<string, string>): Promise<VaultClient> {
    const spec = conn.spec;
    const ownNs = conn.metadata.namespace;
    const ns = spec.namespace;
    const auth = await this.auth(conn, ownNs, secrets);
    const address = spec.address;
    const url = new URL(address);
    if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
      throw new ConnectionConfigError(
        `address ${address}: http:// is allowed only for a loopback address; use https://`,
      );
    }
    return new VaultClient({
      address,
      ...(ns ? { namespace: ns } : {}),
      ...(spec.caBundle ? { caPem: spec.caBundle } : {}),
      auth,
      timeoutMs: this.opts.requestTimeoutMs ?? 10_000,
      userAgent: USER_AGENT.hub,
      logger: this.log,
    });
  }

  private async auth(
    conn: AnyConnection,
    ownNs: string | undefined,
    secrets: Map<string, string>,
  ): Promise<VaultAuth> {
    const a = conn.spec.auth as ClusterVaultConnection['spec']['auth'];
    const secretNs = (ref: { namespace?: string }): string => ownNs ?? ref.namespace ?? '';
    if (a.token) {
      const token = await this.secretValue(secretNs(a.token.secretRef), a.token.secretRef, secrets);
      return tokenAuth({ token });
    }
    if (a.appRole) {
      const r = a.appRole;
      const roleId =
        r.roleId ??
        (r.roleIdSecretRef
          ? await this.secretValue(secretNs(r.roleIdSecretRef), r.roleIdSecretRef, secrets)
          : '');
      const secretId = await this.secretValue(
        secretNs(r.secretIdSecretRef),
        r.secretIdSecretRef,
        secrets,
      );
      return appRoleAuth({ roleId, secretId, mount: r.mountPath ?? 'approle' });
    }
    if (a.kubernetes) {
      const k = a.kubernetes;
      let sa: ServiceAccountRef;
      if (k.serviceAccountRef) {
        sa = {
          namespace: ownNs ?? k.serviceAccountRef.namespace ?? '',
          name: k.serviceAccountRef.name,
        };
        if (!this.opts.tenantServiceAccountTokens) {
          throw new ConnectionConfigError(
            `kubernetes auth with ServiceAccount ${sa.namespace}/${sa.name}: this hub does not request tokens of other ServiceAccounts (chart value vault.serviceAccountTokens is off)`,
          );
        }
        // The hub's and the agent's ServiceAccounts each read every Secret of the cluster: a
        // VaultConnection in their namespace would send such a token to an address its author
        // picks, more than `create vaultconnections` there may ever be worth.
        if (ownNs !== undefined && this.opts.ownNamespaces?.includes(ownNs)) {
          throw new ConnectionConfigError(
            `kubernetes auth with ServiceAccount ${sa.namespace}/${sa.name}: the hub requests no token of a ServiceAccount in ${ownNs}, the namespace of mirrorhub's own ServiceAccounts; put the VaultConnection and its ServiceAccount in the namespace of the mirrors that use it`,
          );
        }
      } else {
        // Only a ClusterVaultConnection can get here (the namespaced schema requires the ref).
        if (ownNs) {
          throw new ConnectionConfigError(
            "kubernetes auth of a VaultConnection needs serviceAccountRef: the hub's own ServiceAccount is for ClusterVaultConnections only",
          );
        }
        if (!this.opts.serviceAccount) {
          throw new ConnectionConfigError(
            "kubernetes auth with the hub's own ServiceAccount: the hub does not know its ServiceAccount (MIRRORHUB_SERVICE_ACCOUNT)",
          );
        }
        sa = this.opts.serviceAccount;
      }
      const audience = k.audience ?? 'vault';
      return kubernetesAuth({
        role: k.role,
        mount: k.mountPath ?? 'kubernetes',
        getJwt: () => this.serviceAccountToken(sa, audience),
      });
    }
    throw new ConnectionConfigError('spec.auth: set exactly one of token, appRole or kubernetes');
  }

  private async secretValue(
    namespace: string,
    ref: { name: string; key: string },
    reads: Map<string, string>,
  ): Promise<string> {
    let secret: { data?: Record<string, string> };
    try {
      secret = await this.rest.request<{ data?: Record<string, string> }>(
        'GET',
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(ref.name)}`,
      );
    } catch (err) {
      throw new ConnectionConfigError(
        `reading Secret ${namespace}/${ref.name} failed: ${errorMessage(err)}`,
      );
    }
    const b64 = secret.data?.[ref.key];
    if (b64 === undefined) {
      throw new ConnectionConfigError(`Secret ${namespace}/${ref.name} has no key "${ref.key}"`);
    }
    reads.set(secretReadKey(namespace, ref.name, ref.key), digestOf(b64));
    const value = Buffer.from(b64, 'base64').toString('utf8').trim();
    if (!value)
      throw new ConnectionConfigError(`Secret ${namespace}/${ref.name} key "${ref.key}" is empty`);
    return value;
  }

  private async serviceAccountToken(sa: ServiceAccountRef, audience: string): Promise<string> {
    const res = await this.rest.request<{ status?: { token?: string } }>(
      'POST',
      `/api/v1/namespaces/${encodeURIComponent(sa.namespace)}/serviceaccounts/${encodeURIComponent(sa.name)}/token`,
      {
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { audiences: [audience], expirationSeconds: 600 },
        },
      },
    );
    const token = res.status?.token;
    if (!token)
      throw new Error(
        `TokenRequest for ServiceAccount ${sa.namespace}/${sa.name} returned no token`,
      );
    return token;
  }

  // ---- status -----------------------------------------------------------------------------------

  private async reconcile(key: string): Promise<ProcessResult | void> {
    if (this.stopped) return;
    const [kind, a, b] = key.split('/');
    const ref: VaultSourceRef['connection'] =
      kind === 'VaultConnection'
        ? { kind: 'VaultConnection', namespace: a ?? '', name: b ?? '' }
        : { kind: 'ClusterVaultConnection', name: a ?? '' };
    const cached = this.get(ref);
    const conn = cached ? this.writer.current(key, cached) : undefined;
    if (!conn) {
      this.opts.onChange(key);
      this.watchSecrets(key, undefined);
      const old = this.built.get(key);
      this.built.delete(key);
      if (old) await old.client.close({ revoke: true }).catch(() => undefined);
      return;
    }
    const auth = conn.spec.auth;
    const method = auth.token ? 'token' : auth.appRole ? 'approle' : 'kubernetes';
    let ready = false;
    let message: string;
    let reason: string;
    const builtBefore = this.built.get(key)?.client;
    let client: VaultClient | undefined;
    try {
      client = await this.client(ref);
      const logins = client.session.stats().logins;
      await client.login();
      // Counted when it asked Vault (a session holding a live token does not).
      if (client.session.stats().logins !== logins) {
        this.opts.requests.inc({ operation: 'login', outcome: 'ok' });
      }
      // A cached token logs in without asking Vault: ask whether Vault still honours it (a token
      // revoked out of band, by anyone, must not leave the connection Ready) and whether it
      // serves (sealed: 503). A refused token: log in again (a static token fails here).
      const token = await client.session.token();
      if (await client.session.isRefused(token)) {
        client.session.invalidate(token);
        await client.login();
      }
      await client.http.request({ method: 'GET', path: 'sys/health' });
      ready = true;
      reason = 'Authenticated';
      message = `logged in to ${conn.spec.address} with ${client.session.auth.description}`;
    } catch (err) {
      if (!(err instanceof ConnectionConfigError)) {
        this.opts.requests.inc({ operation: 'login', outcome: outcomeOf(err) });
        if (isVaultError(err, 'login-failed')) this.loginFailed(ref);
      }
      reason = notReadyReason(err);
      message = errorMessage(err);
    }
    // After the build, so the watches' first list finds the values the client was built with.
    this.watchSecrets(key, conn);
    // Mirrors read afresh only when it matters: a new client (spec or credentials changed), or
    // Vault serving again (or not); a periodic check that changes nothing re-reads nothing.
    if (client !== builtBefore || ready !== (conn.status?.ready ?? false)) {
      this.opts.onChange(key);
    }
    const prev = conn.status ?? {};
    const now = new Date(this.clock.now());
    // Reconciling while Vault is unavailable (retried), Stalled when the configuration or the
    // credentials are refused (decide.ts notReadyReason; REASON_CLASS says which is which).
    const conditions = withProgressConditions(
      setCondition(
        prev.conditions,
        {
          type: 'Ready',
          status: ready ? 'True' : 'False',
          reason,
          message: message.slice(0, 1024),
          observedGeneration: conn.metadata.generation,
        },
        now,
      ),
      { now, generation: conn.metadata.generation },
    );
    const next: VaultConnectionStatus = {
      ...(conn.metadata.generation !== undefined
        ? { observedGeneration: conn.metadata.generation }
        : {}),
      authMethod: method,
      ready,
      ...(ready ? {} : { message: message.slice(0, 4096) }),
      conditions,
    };
    const events: ControllerEvent[] = [];
    const before = findCondition(prev.conditions, 'Ready');
    if (before?.status !== (ready ? 'True' : 'False') || before.reason !== reason) {
      events.push(
        ready
          ? { type: 'Normal', reason: 'Authenticated', message: message.slice(0, 1024) }
          : { type: 'Warning', reason, message: message.slice(0, 1024) },
      );
    }
    if ((this.opts.role ?? ALWAYS_LEADING).leading()) {
      await this.writer.writeStatus(conn, next, events);
    }
    const recheck = this.opts.recheckMs ?? 5 * 60_000;
    return { requeueAfterMs: ready ? recheck : Math.min(recheck, 30_000) };
  }
}

function isLoopback(host: string): boolean {
  return (
    host === 'localhost' || host === '[::1]' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
  );
}

function connectionPath(obj: AnyConnection): string {
  return objectPath(obj, {
    namespaced: VAULT_CONNECTION.plural,
    cluster: CLUSTER_VAULT_CONNECTION.plural,
  });
}
