// The dashboard's API routes, in one list: server.ts registers its handlers from it, and a
// request target is checked against it before anything is served or passed to the leader. A
// standby forwards only what this list says exists, rebuilt from the parts it checked, so no
// request target (absolute form, `//host`, `\`, dot segments, unknown query) can pick where the
// standby connects or what it asks there.
import { mirrorRef, parseMirrorRef } from '@mirrorhub/shared/mirror/index';

export interface ApiRoute {
  path: string;
  /** A path ending in `/` serves everything under it (the mirror detail). */
  prefix?: true;
  /** The query parameters the route reads (each at most once); any other is refused. */
  query: readonly string[];
}

export const API_ROUTES = {
  snapshot: { path: '/api/v1/snapshot', query: ['groupBy'] },
  where: { path: '/api/v1/where', query: ['name'] },
  watch: { path: '/api/v1/watch', query: [] },
  /** /api/v1/mirrors/<kind>/<namespace, `_` for a ClusterSecretMirror>/<name> */
  mirror: { path: '/api/v1/mirrors/', prefix: true, query: [] },
} as const satisfies Record<string, ApiRoute>;

export type RouteName = keyof typeof API_ROUTES;

export const MIRROR_PATH_HELP =
  'expected /api/v1/mirrors/SecretMirror/<namespace>/<name> or /api/v1/mirrors/ClusterSecretMirror/_/<name>';

/** The mirror key of a detail path (`SecretMirror/<ns>/<name>`, ...); undefined if malformed. */
export function mirrorKeyOfPath(pathname: string): string | undefined {
  if (!pathname.startsWith(API_ROUTES.mirror.path)) return undefined;
  let parts: string[];
  try {
    parts = pathname
      .slice(API_ROUTES.mirror.path.length)
      .split('/')
      .map((p) => decodeURIComponent(p));
  } catch {
    return undefined; // a broken %-escape
  }
  // A ClusterSecretMirror's namespace is `_` in the URL; the key is its mirror reference.
  const [kind, ns, name] = parts;
  if (parts.length !== 3 || ns === '' || parts.some((p) => p.includes('/'))) return undefined;
  const id = parseMirrorRef(`${kind}/${ns === '_' ? '' : ns}/${name}`);
  return id ? mirrorRef(id) : undefined;
}

export type TargetCheck =
  | { ok: true; route: RouteName; pathname: string; search: string; params: URLSearchParams }
  | { ok: false; status: 400 | 404; error: string };

/** Characters of an origin-form target (RFC 9112 3.2.1): path and query, nothing else. */
const ORIGIN_FORM =
  /^\/(?!\/)[A-Za-z0-9\-._~%!$&'()*+,;=:@/]*(\?[A-Za-z0-9\-._~%!$&'()*+,;=:@/?]*)?$/;
const PROBE_ORIGIN = 'http://dashboard.invalid';

/**
 * Whether `target` (the raw request target, `req.url`) is one of API_ROUTES in origin form with
 * only the query that route reads; its path and query as they will be served or forwarded.
 */
export function checkTarget(target: string): TargetCheck {
  if (!ORIGIN_FORM.test(target)) {
    return {
      ok: false,
      status: 400,
      error:
        'the request target must be a path of this dashboard (`/api/v1/...`), not an absolute or scheme-relative URL',
    };
  }
  const url = new URL(target, PROBE_ORIGIN);
  const rawPath = target.split('?')[0]!;
  if (url.origin !== PROBE_ORIGIN || url.pathname !== rawPath) {
    // Dot segments and the like: what would be served is not what was asked for.
    return { ok: false, status: 400, error: `the path ${rawPath} is not in normal form` };
  }
  const entry = (Object.entries(API_ROUTES) as [RouteName, ApiRoute][]).find(([, r]) =>
    r.prefix ? url.pathname.startsWith(r.path) : url.pathname === r.path,
  );
  if (!entry) return { ok: false, status: 404, error: `no dashboard API at ${url.pathname}` };
  const [name, route] = entry;
  if (route.prefix && mirrorKeyOfPath(url.pathname) === undefined) {
    return { ok: false, status: 400, error: MIRROR_PATH_HELP };
  }
  const seen = new Set<string>();
  for (const key of url.searchParams.keys()) {
    if (!route.query.includes(key) || seen.has(key)) {
      const allowed = route.query.length ? route.query.join(', ') : 'none';
      return {
        ok: false,
        status: 400,
        error: `${route.path} takes the query parameters ${allowed}, each at most once, not "${key}"`,
      };
    }
    seen.add(key);
  }
  return {
    ok: true,
    route: name,
    pathname: url.pathname,
    search: url.search,
    params: url.searchParams,
  };
}
