/**
 * Error helpers shared by logging, status messages and the Kubernetes helpers.
 *
 * client-node 1.x throws `ApiException` whose `message` embeds the whole response body and
 * headers as JSON. That is noisy in logs and would be wrong in a status message, so everything
 * that prints an error goes through `errorMessage()`, which keeps the HTTP code, the Status
 * reason and the Status message only.
 */

/** The fields of a Kubernetes `Status` we care about. */
export interface StatusLike {
  code?: number;
  reason?: string;
  message?: string;
}

/** HTTP status of an error from client-node (`ApiException.code`) or our own transport. */
export function httpStatusOf(err: unknown): number | undefined {
  if (!isObject(err)) return undefined;
  for (const key of ['code', 'statusCode'] as const) {
    const v = err[key];
    if (typeof v === 'number' && v >= 100 && v < 600) return v;
  }
  return undefined;
}

/** The Kubernetes Status carried by an API error, if it has one (body may be a JSON string). */
export function statusOf(err: unknown): StatusLike | undefined {
  if (!isObject(err)) return undefined;
  let body: unknown = err['body'];
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  if (isObject(body) && (body['kind'] === 'Status' || 'reason' in body || 'message' in body)) {
    const s: StatusLike = {};
    if (typeof body['code'] === 'number') s.code = body['code'];
    if (typeof body['reason'] === 'string') s.reason = body['reason'];
    if (typeof body['message'] === 'string') s.message = body['message'];
    return s;
  }
  const status = err['status'];
  if (isObject(status) && typeof status['reason'] === 'string') {
    return status as StatusLike;
  }
  return undefined;
}

/** The Status reason (`NotFound`, `Conflict`, `AlreadyExists`, `Expired`, ...) if known. */
export function reasonOf(err: unknown): string | undefined {
  const fromStatus = statusOf(err)?.reason;
  if (fromStatus) return fromStatus;
  if (isObject(err) && typeof err['reason'] === 'string') return err['reason'];
  return undefined;
}

function isApiErrorLike(err: unknown): boolean {
  return isObject(err) && httpStatusOf(err) !== undefined && ('body' in err || 'headers' in err);
}

/**
 * One line describing `err`, safe for logs, Events and status messages: for API errors
 * `"409 Conflict: <Status.message>"`, otherwise the error's own message.
 */
export function errorMessage(err: unknown): string {
  if (isApiErrorLike(err)) {
    const code = httpStatusOf(err);
    const status = statusOf(err);
    const reason = status?.reason ?? '';
    const msg = status?.message ?? '';
    return `${code}${reason ? ' ' + reason : ''}${msg ? ': ' + msg : ''}`;
  }
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

/** Wrap `cause` with context, keeping the chain (`new Error(msg, { cause })`). */
export function wrapError(message: string, cause: unknown): Error {
  return new Error(`${message}: ${errorMessage(cause)}`, { cause });
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}
