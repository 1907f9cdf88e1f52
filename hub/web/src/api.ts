// Talking to the hub: bearer-authenticated JSON requests and the change stream. Every request
// carries `Authorization: Bearer <token>`; the token lives in sessionStorage only (gone with the
// tab, never in localStorage, never in a URL). A null token sends none: the page is served by
// `kubectl mirrorhub dashboard`, which signs each request with the user's own credentials.

import type { ApiError, MirrorDetail, Snapshot, Where } from '../../src/dashboard/types.js';

const TOKEN_KEY = 'mirrorhub.token';

export function loadToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function saveToken(token: string | null): void {
  try {
    if (token === null) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // Storage disabled: the token still lives in memory for this page.
  }
}

/**
 * Set on its answers by `kubectl mirrorhub dashboard` (hub/src/cli/dashboard.ts) when it signs
 * every request with the user's kubeconfig credentials; the hub never sets it.
 */
const SIGNED_IN_HEADER = 'x-mirrorhub-signed-in';

/**
 * Whether what serves the page signs its requests, so no token is needed. Asked with the icon
 * (204, no sign-in needed), so a hub that wants a token sees no refused request.
 */
export async function servedSignedIn(): Promise<boolean> {
  try {
    const res = await fetch('/favicon.ico', { cache: 'no-store' });
    return res.headers.get(SIGNED_IN_HEADER) !== null;
  } catch {
    return false;
  }
}

/** An answer other than 2xx: status and the hub's `{error}` text. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The hub could not be reached at all (fetch rejected). */
export class NetworkError extends Error {}

async function errorText(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as Partial<ApiError>;
    if (typeof body.error === 'string' && body.error !== '') return body.error;
  } catch {
    // Not JSON: fall through to the status line.
  }
  return `${res.status} ${res.statusText}`.trim();
}

function headers(token: string | null, accept = 'application/json'): Record<string, string> {
  return token === null ? { Accept: accept } : { Authorization: `Bearer ${token}`, Accept: accept };
}

async function getJSON<T>(path: string, token: string | null, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, { headers: headers(token), cache: 'no-store', signal });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new NetworkError(`The hub cannot be reached (${String(err)}).`);
  }
  if (!res.ok) throw new HttpError(res.status, await errorText(res));
  return (await res.json()) as T;
}

export function fetchSnapshot(
  token: string | null,
  groupBy: string | undefined,
): Promise<Snapshot> {
  const q = groupBy ? `?groupBy=${encodeURIComponent(groupBy)}` : '';
  return getJSON<Snapshot>(`/api/v1/snapshot${q}`, token);
}

export function fetchMirror(
  token: string | null,
  kind: string,
  namespace: string | undefined,
  name: string,
): Promise<MirrorDetail> {
  const seg = [kind, namespace || '_', name].map(encodeURIComponent).join('/');
  return getJSON<MirrorDetail>(`/api/v1/mirrors/${seg}`, token);
}

export function fetchWhere(token: string | null, name: string): Promise<Where> {
  return getJSON<Where>(`/api/v1/where?name=${encodeURIComponent(name)}`, token);
}

export interface StreamEvent {
  event: string;
  data: string;
}

/**
 * Parses text/event-stream chunks (EventSource cannot send an Authorization header, so the page
 * reads the stream with fetch). Comment lines (`:` heartbeats) are dropped; an event is dispatched
 * at each blank line.
 */
export class EventStreamParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];

  constructor(private readonly emit: (ev: StreamEvent) => void) {}

  push(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) return;
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (m[0] === '\r' && m.index === this.buffer.length - 1) return;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0) {
        this.emit({ event: this.event || 'message', data: this.data.join('\n') });
      }
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
  }
}

/** How long the stream may stay silent (no event, no heartbeat) before it counts as dead. */
const SILENCE_MS = 60_000;

/**
 * Opens GET /api/v1/watch and feeds its events to `onEvent` until the stream ends. Resolves when
 * the stream ends (or stays silent for a minute); rejects with HttpError or NetworkError when it
 * cannot be opened. `onOpen` runs once the hub has answered 200.
 */
export async function watch(
  token: string | null,
  signal: AbortSignal,
  onOpen: () => void,
  onEvent: (ev: StreamEvent) => void,
): Promise<void> {
  const ctl = new AbortController();
  const abort = () => ctl.abort();
  signal.addEventListener('abort', abort);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(abort, SILENCE_MS);
  };
  try {
    let res: Response;
    try {
      res = await fetch('/api/v1/watch', {
        headers: headers(token, 'text/event-stream'),
        cache: 'no-store',
        signal: ctl.signal,
      });
    } catch (err) {
      if (signal.aborted) return;
      throw new NetworkError(`The hub cannot be reached (${String(err)}).`);
    }
    if (!res.ok || !res.body) throw new HttpError(res.status, await errorText(res));
    onOpen();
    arm();
    const parser = new EventStreamParser(onEvent);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        arm();
        parser.push(decoder.decode(value, { stream: true }));
      }
    } catch {
      // Aborted (silence, sign-out) or the connection broke: both end this stream.
    }
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', abort);
  }
}
