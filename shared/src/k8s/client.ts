/**
 * Small helpers over @kubernetes/client-node 1.x.
 *
 * Patch content types — the known gotcha: the generated 1.x clients pick the *first* media type
 * a PATCH operation lists, which is `application/json-patch+json`, whatever the body is. A merge
 * patch body sent that way fails with "cannot unmarshal object into Go value of type
 * jsonpatch.Patch". The documented fix (client-node's patch example, `PatchStrategy` in
 * patch.ts) is to pass per-call configuration that overrides the header via middleware:
 * `setHeaderOptions('Content-Type', PatchStrategy.MergePatch)`. The middleware runs after the
 * request factory set the default header, so it wins. The body is still serialised as JSON,
 * which is also valid for server-side apply (YAML is a superset of JSON).
 */
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { backoffDelay } from '../runtime/backoff.js';
import { realClock, sleep, type Clock } from '../runtime/clock.js';
import { isConflict, type CustomObjectRef } from './rest.js';

export type { CustomObjectRef } from './rest.js';

export { ApiException, PatchStrategy } from '@kubernetes/client-node';

export interface KubeClients {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  coordination: CoordinationV1Api;
  events: EventsV1Api;
  /** Untyped CRUD on any kind (uses discovery). */
  objects: KubernetesObjectApi;
}

/** The typed API clients the hub and agent use, all from one KubeConfig. */
export function makeClients(kc: KubeConfig): KubeClients {
  return {
    kubeConfig: kc,
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    coordination: kc.makeApiClient(CoordinationV1Api),
    events: kc.makeApiClient(EventsV1Api),
    objects: KubernetesObjectApi.makeApiClient(kc),
  };
}

// ---- error predicates: one implementation, in the lean REST client -----------------------------

export {
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isRetriable,
  isTooManyRequests,
  isUnauthorized,
} from './rest.js';

// ---- retry on conflict ------------------------------------------------------------------------

export interface RetryOnConflictOptions {
  /** Attempts in total (default 5, like client-go's retry.DefaultRetry). */
  steps?: number;
  /** Delay before the second attempt (default 10 ms); grows by `factor`, jittered. */
  initialMs?: number;
  factor?: number;
  maxMs?: number;
  clock?: Clock;
  random?: () => number;
  signal?: AbortSignal;
}

/**
 * Run `fn` (which must re-read the object it writes) until it does not fail with 409 Conflict,
 * at most `steps` times. Any other error, and the last conflict, is thrown.
 */
export async function retryOnConflict<T>(
  fn: (attempt: number) => Promise<T>,
  opts: RetryOnConflictOptions = {},
): Promise<T> {
  const steps = Math.max(1, opts.steps ?? 5);
  const clock = opts.clock ?? realClock;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (!isConflict(err) || attempt + 1 >= steps || opts.signal?.aborted) throw err;
      const delay = backoffDelay(
        {
          initialMs: opts.initialMs ?? 10,
          maxMs: opts.maxMs ?? 1000,
          factor: opts.factor ?? 2,
          jitter: 0.5,
          ...(opts.random ? { random: opts.random } : {}),
        },
        attempt,
      );
      await sleep(clock, delay, opts.signal);
    }
  }
}

// ---- patch helpers ----------------------------------------------------------------------------

/** Per-call options that make a generated PATCH send the given Content-Type. */
export function patchOptions(strategy: PatchStrategy): ReturnType<typeof setHeaderOptions> {
  return setHeaderOptions('Content-Type', strategy);
}
export const mergePatchOptions = (): ReturnType<typeof setHeaderOptions> =>
  patchOptions(PatchStrategy.MergePatch);
export const applyPatchOptions = (): ReturnType<typeof setHeaderOptions> =>
  patchOptions(PatchStrategy.ServerSideApply);

export interface StatusPatchOptions {
  fieldManager: string;
  /**
   * Merge patch only: make the patch conditional on this resourceVersion (409 if the object
   * changed since it was read). Omit for last-writer-wins on the fields sent.
   */
  resourceVersion?: string;
}

/**
 * JSON merge patch of `.status` through the status subresource. Only the fields present in
 * `status` change; `null` deletes a field. Returns the updated object.
 */
export async function mergePatchStatus<T = unknown>(
  api: CustomObjectsApi,
  ref: CustomObjectRef,
  status: Record<string, unknown>,
  opts: StatusPatchOptions,
): Promise<T> {
  const body: Record<string, unknown> = { status };
  if (opts.resourceVersion) body['metadata'] = { resourceVersion: opts.resourceVersion };
  const common = {
    group: ref.group,
    version: ref.version,
    plural: ref.plural,
    name: ref.name,
    body,
    fieldManager: opts.fieldManager,
  };
  const o = mergePatchOptions();
  return (await (ref.namespace
    ? api.patchNamespacedCustomObjectStatus({ ...common, namespace: ref.namespace }, o)
    : api.patchClusterCustomObjectStatus(common, o))) as T;
}

export interface ApplyStatusOptions {
  fieldManager: string;
  /** apiVersion (`group/version`) and kind of the object; SSA needs them in the body. */
  apiVersion: string;
  kind: string;
  /** Take over fields owned by other managers (default true: a controller owns its status). */
  force?: boolean;
}

/**
 * Server-side apply of `.status` through the status subresource: this field manager then owns
 * exactly the fields sent, and fields it sent before but omits now are removed.
 */
export async function applyStatus<T = unknown>(
  api: CustomObjectsApi,
  ref: CustomObjectRef,
  status: Record<string, unknown>,
  opts: ApplyStatusOptions,
): Promise<T> {
  const metadata: Record<string, string> = { name: ref.name };
  if (ref.namespace) metadata['namespace'] = ref.namespace;
  const common = {
    group: ref.group,
    version: ref.version,
    plural: ref.plural,
    name: ref.name,
    body: { apiVersion: opts.apiVersion, kind: opts.kind, metadata, status },
    fieldManager: opts.fieldManager,
    force: opts.force ?? true,
  };
  const o = applyPatchOptions();
  return (await (ref.namespace
    ? api.patchNamespacedCustomObjectStatus({ ...common, namespace: ref.namespace }, o)
    : api.patchClusterCustomObjectStatus(common, o))) as T;
}

/** `namespace/name` (or `name` for cluster-scoped objects): the work-queue key convention. */
export function objectKey(obj: { metadata?: { name?: string; namespace?: string } }): string {
  const name = obj.metadata?.name ?? '';
  const ns = obj.metadata?.namespace;
  return ns ? `${ns}/${name}` : name;
}

/** Inverse of `objectKey`. */
export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** True when `err` is an ApiException from client-node (as opposed to a network error). */
export function isApiException(err: unknown): err is ApiException<unknown> {
  return err instanceof ApiException;
}
