// API clients for a cluster with a deadline on every request.
//
// client-node's makeApiClient() sends requests with no timeout at all: a follower that accepts
// the connection and never answers would hold a write (and the slot in that cluster's queue)
// forever. Clients made here abort every request after `timeoutMs` and turn the abort into an
// error that says so; per-call options (patch content types) are appended to the middleware,
// so they keep the deadline.
import {
  createConfiguration,
  ServerConfiguration,
  type ApiConstructor,
  type ApiType,
  type KubeConfig,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';

/** Default deadline of one request to a cluster. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** `kc.makeApiClient(type)`, with every request aborted after `timeoutMs`. */
export function timedApiClient<T extends ApiType>(
  kc: KubeConfig,
  type: ApiConstructor<T>,
  timeoutMs: number = DEFAULT_REQUEST_TIMEOUT_MS,
): T {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const config = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(timeoutMs));
          return Promise.resolve(ctx);
        },
        post: (res: ResponseContext) => Promise.resolve(res),
      },
    ],
  });
  return new type(config);
}

/** A request aborted by its deadline. */
export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
  /** Node-style code, so callers that classify network failures see a timeout. */
  readonly code = 'ETIMEDOUT';
  constructor(what: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(`${what}: no response in ${formatMs(timeoutMs)}`, options);
  }
}

/**
 * Runs `fn`; an abort (our deadline) becomes a RequestTimeoutError naming `what`. Any other
 * error is rethrown as it is.
 */
export async function withDeadline<R>(
  what: string,
  timeoutMs: number,
  fn: () => Promise<R>,
): Promise<R> {
  try {
    return await fn();
  } catch (err) {
    if (isAbort(err)) throw new RequestTimeoutError(what, timeoutMs, { cause: err });
    throw err;
  }
}

export function isAbort(err: unknown): boolean {
  const name = (err as { name?: unknown } | undefined)?.name;
  return name === 'AbortError' || name === 'TimeoutError';
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
