// The delivery controller's I/O: each planned write (plan.ts) against one cluster's API server,
// every request with the cluster's deadline, every write counted in metrics (writes_total,
// write_errors_total by kind and verb).
//
// The payload Secret is entirely ours: replaced as a whole (an unconditional update, which
// Secrets allow), created when missing. Not server-side apply: SSA turns a map that loses its
// last key into null, and Kubernetes then refuses the object. A MirrorDelivery is created when
// missing, else JSON-patched (spec as a whole, our labels and annotations). A name found taken on
// create is read, and written over only when the plan's refusal functions allow.
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import { GROUP, MIRROR_DELIVERY, VERSION, type MirrorDelivery } from '@mirrorhub/shared/api/index';
import {
  httpStatusOf,
  type ControllerMetrics,
  type Logger,
} from '@mirrorhub/shared/kit/runtime/index';
import {
  corePath,
  groupPath,
  isAlreadyExists,
  isNotFound,
  type RestClient,
} from '@mirrorhub/shared/kit/k8s/rest';
import { FIELD_MANAGER } from '@mirrorhub/shared/api/contract';
import { withDeadline } from '../../../clusters/client.js';
import {
  deliveryPatch,
  deliveryRefusal,
  payloadRefusal,
  type JsonPatchOp,
  type PlannedWrite,
} from './delivery.js';

/** A write refused because the object there is not ours to write over. */
export class OwnershipConflictError extends Error {
  override readonly name = 'OwnershipConflictError';
}

/** One cluster's agent namespace, as the writes reach it. */
export interface ApplyTarget {
  rest: RestClient;
  namespace: string;
  originCluster: string;
  /** Deadline of every request. */
  timeoutMs: number;
  metrics: ControllerMetrics;
  logger: Logger;
  /** A create found a delivery under the name: the controller remembers it for the plans. */
  foundDelivery(name: string, existing: MirrorDelivery, desired: MirrorDelivery): void;
}

/** Perform one write. Resolves to the object written (undefined for a delete). */
export async function applyWrite(
  t: ApplyTarget,
  w: PlannedWrite,
): Promise<KubernetesObject | undefined> {
  if (w.verb === 'delete') {
    await deleteObject(t, w.kind, w.name);
    return undefined;
  }
  if (w.kind === 'Secret') return writePayload(t, w.payload as V1Secret, w.name, w.verb);
  return writeDelivery(t, w.delivery, w.verb === 'patch' ? w.patch : undefined);
}

/** The delivery under `name` as the API server has it; undefined when there is none. */
export async function readDelivery(
  t: ApplyTarget,
  name: string,
): Promise<MirrorDelivery | undefined> {
  try {
    return await withDeadline('get MirrorDelivery', t.timeoutMs, () =>
      t.rest.get<MirrorDelivery>(deliveryPath(t, name)),
    );
  } catch (err) {
    if (!isNotFound(err)) throw err;
    return undefined;
  }
}

async function writePayload(
  t: ApplyTarget,
  body: V1Secret,
  name: string,
  verb: 'create' | 'update',
): Promise<V1Secret> {
  const path = corePath('secrets', t.namespace, name);
  const put = () =>
    counted(t, 'Secret', 'update', () =>
      t.rest.put<V1Secret>(path, body, { fieldManager: FIELD_MANAGER.hub }),
    );
  const post = () =>
    counted(t, 'Secret', 'create', () =>
      t.rest.post<V1Secret>(corePath('secrets', t.namespace), body, {
        fieldManager: FIELD_MANAGER.hub,
      }),
    );
  let res: V1Secret;
  if (verb === 'update') {
    try {
      res = await put();
    } catch (err) {
      if (!isNotFound(err)) throw err;
      res = await post();
    }
  } else {
    try {
      res = await post();
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const existing = await withDeadline('get Secret', t.timeoutMs, () =>
        t.rest.get<V1Secret>(path),
      );
      const refusal = payloadRefusal(existing, name, t.namespace, t.originCluster);
      if (refusal !== undefined) throw new OwnershipConflictError(refusal);
      res = await put();
    }
  }
  t.logger.debug({ payload: name }, 'payload Secret written');
  return res;
}

async function writeDelivery(
  t: ApplyTarget,
  delivery: MirrorDelivery,
  patch: JsonPatchOp[] | undefined,
): Promise<MirrorDelivery> {
  const name = delivery.metadata.name ?? '';
  let ops = patch;
  let res: MirrorDelivery | undefined;
  if (!ops) {
    try {
      res = await counted(t, 'MirrorDelivery', 'create', () =>
        t.rest.post<MirrorDelivery>(deliveryPath(t), delivery, { fieldManager: FIELD_MANAGER.hub }),
      );
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const existing = await withDeadline('get MirrorDelivery', t.timeoutMs, () =>
        t.rest.get<MirrorDelivery>(deliveryPath(t, name)),
      );
      t.foundDelivery(name, existing, delivery);
      const refusal = deliveryRefusal(existing, delivery, t.namespace);
      if (refusal !== undefined) throw new OwnershipConflictError(refusal);
      ops = deliveryPatch(existing, delivery);
    }
  }
  if (ops) {
    const body = ops;
    res = await counted(t, 'MirrorDelivery', 'patch', () =>
      t.rest.patch<MirrorDelivery>(deliveryPath(t, name), body, 'application/json-patch+json', {
        fieldManager: FIELD_MANAGER.hub,
      }),
    );
  }
  t.logger.debug({ delivery: name, contentHash: delivery.spec.contentHash }, 'delivery written');
  return res!;
}

/** Delete; already gone is fine. */
async function deleteObject(
  t: ApplyTarget,
  kind: 'Secret' | 'MirrorDelivery',
  name: string,
): Promise<void> {
  const path = kind === 'Secret' ? corePath('secrets', t.namespace, name) : deliveryPath(t, name);
  try {
    await counted(t, kind, 'delete', () => t.rest.delete(path));
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  t.logger.debug(
    kind === 'Secret' ? { payload: name } : { delivery: name },
    kind === 'Secret' ? 'payload Secret deleted' : 'delivery deleted',
  );
}

function deliveryPath(t: ApplyTarget, name?: string): string {
  return groupPath(GROUP, VERSION, MIRROR_DELIVERY.plural, t.namespace, name);
}

/**
 * `fn` with the cluster's deadline, counted: written, or failed by HTTP code (a delete of what
 * is already gone is neither).
 */
function counted<T>(
  t: ApplyTarget,
  kind: string,
  verb: 'create' | 'update' | 'patch' | 'delete',
  fn: () => Promise<T>,
): Promise<T> {
  return withDeadline(`${verb} ${kind}`, t.timeoutMs, fn).then(
    (res) => {
      t.metrics.writesTotal.inc({ kind, verb });
      return res;
    },
    (err: unknown) => {
      if (!(verb === 'delete' && isNotFound(err))) {
        t.metrics.writeErrorsTotal.inc({
          kind,
          verb,
          code: String(httpStatusOf(err) ?? 'network'),
        });
      }
      throw err;
    },
  );
}
