// The page's state and everything that changes it: sign-in, loading what the current route
// shows, the 503 retry, and the change stream. Components only read `state` and call methods.

import type { MirrorDetail, Snapshot, Where } from '../../src/dashboard/types.js';
import {
  fetchMirror,
  fetchSnapshot,
  fetchWhere,
  HttpError,
  loadToken,
  NetworkError,
  saveToken,
  servedSignedIn,
  watch,
} from './api.js';
import { parseRoute, type Route } from './route.js';

export type Live = 'live' | 'connecting' | 'offline';

export type Loaded<T> =
  | { status: 'loading' }
  | { status: 'ok'; data: T }
  | { status: 'error'; code: number; error: string };

export interface State {
  token: string | null;
  /**
   * No token of the page's own, and none needed: what serves the page signs every request
   * (`kubectl mirrorhub dashboard`, with the user's kubeconfig credentials).
   */
  ambient: boolean;
  /** Finding out whether the page needs a token (asking what serves it). */
  probing: boolean;
  /** The token is being checked (first snapshot after sign-in). */
  signingIn: boolean;
  signinError?: string;
  snapshot?: Snapshot;
  /** When the snapshot arrived (client clock): heartbeat ages count on from here. */
  snapshotAt: number;
  /** A 503 (hub not ready, standing by) or an unreachable hub: shown above the page. */
  banner?: string;
  live: Live;
  route: Route;
  /** The matrix grouping the user chose (undefined: the hub's default). */
  groupBy?: string;
  /** The mirror detail for route.key. */
  detail?: { key: string; result: Loaded<MirrorDetail> };
  /** The where answer for route.name. */
  where?: { name: string; result: Loaded<Where> };
}

const RETRY_MS = 2_000;
const BACKOFF_MIN_MS = 1_000;
const BACKOFF_MAX_MS = 10_000;
/** A stream open this long counts as healthy: the next reconnect waits the minimum again. */
const STABLE_MS = 10_000;

function failure(err: unknown): { code: number; error: string } {
  if (err instanceof HttpError) return { code: err.status, error: err.message };
  return { code: 0, error: err instanceof Error ? err.message : String(err) };
}

export class Store {
  state: State;
  private listeners = new Set<() => void>();
  private inFlight = false;
  private again = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private watchAbort: AbortController | undefined;

  constructor() {
    const token = loadToken();
    this.state = {
      token,
      ambient: false,
      probing: token === null,
      signingIn: false,
      snapshotAt: 0,
      live: 'connecting',
      route: parseRoute(location.hash),
    };
  }

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private set(patch: Partial<State>): void {
    this.state = { ...this.state, ...patch };
    for (const fn of this.listeners) fn();
  }

  start(): void {
    window.addEventListener('hashchange', () => this.navigate(location.hash));
    this.navigate(location.hash);
    if (this.state.token) this.startWatch();
    else void this.probe();
  }

  /** Signed in: with a token of the page's own, or by what serves the page. */
  private signedIn(): boolean {
    return this.state.token !== null || this.state.ambient;
  }

  /** Without a token: is the page served by something that signs its requests? */
  private async probe(): Promise<void> {
    const ambient = await servedSignedIn();
    if (this.state.token !== null) return; // signed in with the form meanwhile
    this.set({ ambient, probing: false });
    if (!ambient) return;
    this.refresh();
    this.startWatch();
  }

  navigate(hash: string): void {
    const route = parseRoute(hash);
    const patch: Partial<State> = { route };
    if (route.page === 'mirror' && this.state.detail?.key !== route.key) {
      patch.detail = { key: route.key, result: { status: 'loading' } };
    }
    if (route.page === 'where' && this.state.where?.name !== route.name) {
      patch.where = route.name ? { name: route.name, result: { status: 'loading' } } : undefined;
    }
    this.set(patch);
    if (this.signedIn()) this.refresh();
  }

  signIn(token: string): void {
    const t = token.trim();
    if (t === '') {
      this.set({ signinError: 'Paste a token first.' });
      return;
    }
    this.set({ token: t, ambient: false, probing: false, signingIn: true, signinError: undefined });
    this.refresh();
    this.startWatch();
  }

  signOut(error?: string): void {
    saveToken(null);
    this.watchAbort?.abort();
    this.watchAbort = undefined;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.set({
      token: null,
      ambient: false,
      probing: false,
      signingIn: false,
      signinError: error,
      snapshot: undefined,
      banner: undefined,
      live: 'connecting',
      detail: undefined,
      where: undefined,
    });
  }

  setGroupBy(groupBy: string | undefined): void {
    this.set({ groupBy });
    this.refresh();
  }

  /** Loads what the current page shows; at most one load runs, later asks are coalesced. */
  refresh(): void {
    if (!this.signedIn()) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.inFlight = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    void this.load().finally(() => {
      this.inFlight = false;
      if (this.again) {
        this.again = false;
        this.refresh();
      }
    });
  }

  private async load(): Promise<void> {
    const { token, ambient, route, groupBy } = this.state;
    if (!this.signedIn()) return;
    const detailRoute = route.page === 'mirror' ? route : undefined;
    const whereName = route.page === 'where' && route.name !== '' ? route.name : undefined;
    const [snap, detail, where] = await Promise.allSettled([
      fetchSnapshot(token, groupBy),
      detailRoute
        ? fetchMirror(token, detailRoute.kind, detailRoute.namespace, detailRoute.name)
        : Promise.resolve(undefined),
      whereName !== undefined ? fetchWhere(token, whereName) : Promise.resolve(undefined),
    ]);
    // Signed out (or in again with another token) meanwhile: this answer is stale.
    if (this.state.token !== token || this.state.ambient !== ambient) return;

    const rejected = [snap, detail, where].flatMap((r) =>
      r.status === 'rejected' ? [r.reason as unknown] : [],
    );
    const refused = rejected.find((e) => e instanceof HttpError && e.status === 401);
    if (refused) {
      this.signOut((refused as HttpError).message);
      return;
    }
    const unavailable = rejected.find(
      (e) => (e instanceof HttpError && e.status === 503) || e instanceof NetworkError,
    );

    const patch: Partial<State> = {};
    if (snap.status === 'fulfilled') {
      patch.snapshot = snap.value;
      patch.snapshotAt = Date.now();
      if (this.state.signingIn) {
        saveToken(token);
        patch.signingIn = false;
      }
    }
    const cur = this.state.detail;
    if (detailRoute && cur?.key === detailRoute.key) {
      if (detail.status === 'fulfilled' && detail.value) {
        patch.detail = { key: cur.key, result: { status: 'ok', data: detail.value } };
      } else if (detail.status === 'rejected' && !isTransient(detail.reason)) {
        patch.detail = { key: cur.key, result: { status: 'error', ...failure(detail.reason) } };
      }
    }
    const curWhere = this.state.where;
    if (whereName !== undefined && curWhere?.name === whereName) {
      if (where.status === 'fulfilled' && where.value) {
        patch.where = { name: whereName, result: { status: 'ok', data: where.value } };
      } else if (where.status === 'rejected' && !isTransient(where.reason)) {
        patch.where = { name: whereName, result: { status: 'error', ...failure(where.reason) } };
      }
    }
    if (unavailable) {
      patch.banner = failure(unavailable).error;
      if (unavailable instanceof NetworkError) patch.live = 'offline';
      // Hub not ready or standing by, or not reachable: try again shortly.
      this.retryTimer = setTimeout(() => this.refresh(), RETRY_MS);
    } else {
      patch.banner = undefined;
    }
    if (!unavailable && snap.status === 'rejected' && this.state.signingIn) {
      patch.signingIn = false;
      patch.signinError = failure(snap.reason).error;
    }
    this.set(patch);
  }

  private startWatch(): void {
    this.watchAbort?.abort();
    const ctl = new AbortController();
    this.watchAbort = ctl;
    void this.watchLoop(ctl.signal);
  }

  private async watchLoop(signal: AbortSignal): Promise<void> {
    let delay = BACKOFF_MIN_MS;
    let opened = false;
    while (!signal.aborted) {
      if (!this.signedIn()) return;
      const token = this.state.token;
      let openedAt = 0;
      try {
        await watch(
          token,
          signal,
          () => {
            this.set({ live: 'live' });
            openedAt = Date.now();
            // Back after a gap: whatever changed meanwhile was not announced.
            if (opened) this.refresh();
            opened = true;
          },
          (ev) => {
            let data: { version?: unknown; error?: unknown };
            try {
              data = JSON.parse(ev.data) as typeof data;
            } catch {
              return;
            }
            if (ev.event === 'unauthorized') {
              // The token expired or lost its access: the hub ends the stream after this.
              // Signed in by what serves the page, the next stream carries a renewed token.
              if (this.state.ambient) return;
              this.signOut(typeof data.error === 'string' ? data.error : 'Signed out by the hub.');
            } else if (ev.event === 'changed') {
              const shown = this.state.snapshot?.version ?? -1;
              if (typeof data.version === 'number' && data.version > shown) this.refresh();
            }
          },
        );
        if (signal.aborted) return;
        this.set({ live: 'connecting' });
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof HttpError && err.status === 401) {
          this.signOut(err.message);
          return;
        }
        this.set({ live: err instanceof NetworkError ? 'offline' : 'connecting' });
      }
      // A stream that held for a while starts the backoff over; one cut at once (a proxy that
      // drops it, say) keeps backing off.
      if (openedAt > 0 && Date.now() - openedAt > STABLE_MS) delay = BACKOFF_MIN_MS;
      await sleep(delay, signal);
      delay = Math.min(delay * 2, BACKOFF_MAX_MS);
    }
  }
}

function isTransient(err: unknown): boolean {
  return (err instanceof HttpError && err.status === 503) || err instanceof NetworkError;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}
