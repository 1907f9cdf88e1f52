// A standby hub has no caches to answer the dashboard from, but behind a Service or an Ingress
// half the viewers land on it. It passes their API requests (the event stream included) to the
// leader, and only those it checked itself (server.ts): a GET of a route in routes.ts from an
// authenticated viewer. The leader still decides what the viewer may see. Where the leader is
// comes from the leader-election Lease (its holder is `<pod name>_<suffix>`) and that pod's
// status.podIP, accepted only when the pod is one of this Deployment's replicas (same app labels
// as our own pod): a Lease holder alone never points the hub at an arbitrary address.
import { http } from '@mirrorhub/shared/kit/runtime/builtins';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { corePath, isNotFound } from '@mirrorhub/shared/kit/k8s/rest';
import { errorMessage } from '@mirrorhub/shared/kit/runtime/index';
import { VIEWER_TOKEN_HEADER } from './auth.js';

/** Set on proxied requests: a request that already went through a standby is not sent on. */
export const VIA_HEADER = 'x-mirrorhub-via';

/** Base URL (http://ip:port) of the leader's dashboard, or undefined when it cannot be found. */
export type LeaderLocator = (holderIdentity: string) => Promise<string | undefined>;

/** The labels that make a pod one of the hub Deployment's replicas. */
const REPLICA_LABELS = ['app.kubernetes.io/name', 'app.kubernetes.io/instance'];

interface PodLike {
  metadata?: { labels?: Record<string, string>; deletionTimestamp?: string };
  status?: { podIP?: string };
}

/**
 * Finds the leader pod in `namespace` (the pods of one Deployment share it): holder
 * `<pod>_<suffix>` -> pods/<pod>, which must carry our own pod's app labels and have an IP.
 * Answers are cached for `ttlMs` (default 10 s).
 */
export function podLeaderLocator(opts: {
  rest: RestClient;
  namespace: string;
  /** This replica's pod name (POD_NAME). */
  selfPod: string;
  port: number;
  ttlMs?: number;
  now?: () => number;
}): LeaderLocator {
  const ttl = opts.ttlMs ?? 10_000;
  const now = opts.now ?? Date.now;
  let self: Record<string, string> | undefined;
  const cache = new Map<string, { at: number; url: string | undefined }>();
  const get = async (name: string): Promise<PodLike | undefined> => {
    try {
      return await opts.rest.get<PodLike>(corePath('pods', opts.namespace, name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return async (holder) => {
    const pod = holder.replace(/_[0-9a-f]{8}$/, '');
    const hit = cache.get(pod);
    if (hit && now() - hit.at < ttl) return hit.url;
    self ??= (await get(opts.selfPod))?.metadata?.labels ?? {};
    const p = await get(pod);
    const labels = p?.metadata?.labels ?? {};
    const sameApp = REPLICA_LABELS.every((k) => self![k] !== undefined && labels[k] === self![k]);
    const ip = p?.status?.podIP;
    const url =
      sameApp && ip && !p?.metadata?.deletionTimestamp
        ? `http://${ip.includes(':') ? `[${ip}]` : ip}:${opts.port}`
        : undefined;
    cache.set(pod, { at: now(), url });
    return url;
  };
}

/**
 * Pass a GET of `target` (a path and query checked by routes.ts checkTarget, never the raw
 * request target) to the leader at `base` and its answer back, streaming (event streams too).
 * Only the path and query are set on the leader's URL: its scheme, host and port stay `base`'s.
 */
export function proxy(
  base: string,
  target: { pathname: string; search: string },
  req: IncomingMessage,
  res: ServerResponse,
  via: string,
  onError: (message: string) => void,
): void {
  const url = new URL(base);
  url.pathname = target.pathname;
  url.search = target.search;
  const headers: OutgoingHttpHeaders = { [VIA_HEADER]: via };
  for (const h of ['authorization', VIEWER_TOKEN_HEADER, 'accept', 'if-none-match', 'user-agent']) {
    const v = req.headers[h];
    if (v !== undefined) headers[h] = v;
  }
  const out = http.request(url, { method: 'GET', headers }, (upstream) => {
    res.writeHead(upstream.statusCode ?? 502, upstream.headers);
    upstream.pipe(res);
  });
  out.setTimeout(10_000, () => {
    // Only until the answer starts: an event stream is long-lived by design.
    if (!res.headersSent) out.destroy(new Error('no answer within 10 s'));
  });
  out.on('response', () => out.setTimeout(0));
  out.on('error', (err) => {
    const message = `the leader's dashboard (${base}) did not answer: ${errorMessage(err)}`;
    onError(message);
    if (!res.headersSent) {
      const body = JSON.stringify({ error: message });
      res.writeHead(502, { 'content-type': 'application/json; charset=utf-8' });
      res.end(body);
    } else {
      res.destroy();
    }
  });
  res.on('close', () => out.destroy());
  out.end();
}
