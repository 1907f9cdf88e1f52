// REST clients for a cluster with a deadline on every request.
//
// A follower that accepts the connection and never answers would hold a write (and the slot in
// that cluster's queue) forever. Clients made here abort every request after `timeoutMs`, and
// `withDeadline` turns the abort into an error that says so.
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { USER_AGENT } from '@mirrorhub/shared/api/contract';

/** Default deadline of one request to a cluster. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** A REST client for the cluster of `access`, every request aborted after `timeoutMs`. */
export function timedRestClient(
  access: KubeAccess,
  timeoutMs: number = DEFAULT_REQUEST_TIMEOUT_MS,
): RestClient {
  if (!access.getCurrentCluster()) throw new Error('the kubeconfig has no current cluster');
  return new RestClient(access, { timeoutMs, userAgent: USER_AGENT.hub });
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
