// The start-up check of every copy, in bulk.
//
// At the start of a term we know nothing about any copy's data, and checking each with a GET
// costs one request per copy (20k copies: 20k requests). Instead, read every copy once with a
// few paginated LISTs (one page in memory at a time, nothing kept but the verdict) and mark
// those that hold exactly what their delivery says as verified. The rest are checked one by one
// by their reconcile, as drift is.

import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { MirrorDelivery, SourceKind } from '@mirrorhub/shared/api/types.gen';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { kubeListerWatcher, type ListerWatcher } from '@mirrorhub/shared/kit/k8s/listwatch';
import type { CopyMarks } from '@mirrorhub/shared/mirror/names';
import { readPayload, renderCopy, type Payload } from '@mirrorhub/shared/mirror/shape';
import type { Clock } from '@mirrorhub/shared/kit/runtime/clock';
import { errorMessage } from '@mirrorhub/shared/kit/runtime/errors';
import type { Logger } from '@mirrorhub/shared/kit/runtime/log';
import {
  ANNOTATION_CONTENT_HASH,
  LABEL_DELIVERY,
  LABEL_MANAGED_BY,
  MANAGED_BY_VALUE,
} from '@mirrorhub/shared/api/contract';
import { sameContent } from './apply.js';
import { deliveryMarks } from './plan.js';

export type ListedCopy = V1Secret | V1ConfigMap;

/** What the copies of one delivery should be. */
export interface DesiredCopy {
  spec: MirrorDelivery['spec'];
  payload: Payload;
  payloadVersion: string | undefined;
  marks: CopyMarks;
}

/** What the copies of `delivery` should hold; undefined without its payload Secret. */
export function desiredCopy(
  delivery: MirrorDelivery | undefined,
  payloadSecret: V1Secret | undefined,
): DesiredCopy | undefined {
  if (!delivery || !payloadSecret) return undefined;
  return {
    spec: delivery.spec,
    payload: readPayload(payloadSecret),
    payloadVersion: payloadSecret.metadata?.resourceVersion,
    marks: deliveryMarks(delivery),
  };
}

/** The listed copy is its delivery's target and holds exactly what `want` says. */
export function holdsDesired(
  kind: SourceKind,
  obj: ListedCopy,
  want: DesiredCopy | undefined,
): boolean {
  const m = obj.metadata;
  if (!want || !m?.name || !m.namespace) return false;
  const spec = want.spec;
  if (spec.target.kind !== kind || spec.target.name !== m.name) return false;
  if (m.annotations?.[ANNOTATION_CONTENT_HASH] !== spec.contentHash) return false;
  const copy = renderCopy({
    kind,
    name: m.name,
    namespace: m.namespace,
    payload: want.payload,
    template: spec.template,
    marks: want.marks,
  });
  return sameContent(copy, obj);
}

export type CopyLister = Pick<ListerWatcher<ListedCopy>, 'list'>;

/** Lists of every copy (data included), by kind. */
export function copyListers(kc: KubeAccess): Record<SourceKind, CopyLister> {
  const lister = (plural: string) =>
    kubeListerWatcher<ListedCopy>(kc, {
      version: 'v1',
      plural,
      labelSelector: `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`,
    });
  return { Secret: lister('secrets'), ConfigMap: lister('configmaps') };
}

export interface BulkCheck {
  listers: Record<SourceKind, CopyLister>;
  /** What the copies of the named delivery should hold (looked up once per delivery). */
  desired(deliveryName: string): DesiredCopy | undefined;
  /** The listed copy holds its delivery's payload of `payloadVersion`. */
  intact(kind: SourceKind, obj: ListedCopy, payloadVersion: string | undefined): void;
  logger: Logger;
  clock: Clock;
  /** Copies per LIST page (default 250). */
  pageSize?: number;
}

/**
 * Check every copy against its delivery, a page at a time, until done or `signal` aborts. Not
 * fatal when a LIST fails: each reconcile verifies its copies one by one instead.
 */
export async function verifyAll(check: BulkCheck, signal: AbortSignal): Promise<void> {
  const began = check.clock.now();
  const desired = new Map<string, DesiredCopy | undefined>();
  const want = (name: string) => {
    if (!desired.has(name)) desired.set(name, check.desired(name));
    return desired.get(name);
  };
  let checked = 0;
  let intact = 0;
  try {
    for (const kind of ['Secret', 'ConfigMap'] as const) {
      let cont: string | undefined;
      do {
        const page = await check.listers[kind].list({
          limit: check.pageSize ?? 250,
          ...(cont ? { continue: cont } : {}),
        });
        for (const obj of page.items) {
          checked++;
          const name = obj.metadata?.labels?.[LABEL_DELIVERY];
          const w = name ? want(name) : undefined;
          if (holdsDesired(kind, obj, w)) {
            intact++;
            check.intact(kind, obj, w?.payloadVersion);
          }
        }
        cont = page.continue;
      } while (cont && !signal.aborted);
    }
    check.logger.info(
      { checked, intact, durationMs: check.clock.now() - began },
      'copies checked against their payloads',
    );
  } catch (err) {
    check.logger.warn({ err: errorMessage(err), checked }, 'bulk check of copies failed');
  }
}
