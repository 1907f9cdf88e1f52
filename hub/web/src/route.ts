// Hash routes: #/, #/clusters, #/mirrors, #/mirror/<kind>/<namespace or _>/<name>, #/matrix,
// #/where?name=<target>. Segments are URI-encoded.

export type Route =
  | { page: 'overview' }
  | { page: 'clusters' }
  | { page: 'mirrors' }
  | { page: 'matrix' }
  | { page: 'mirror'; kind: string; namespace?: string; name: string; key: string }
  | { page: 'where'; name: string }
  | { page: 'unknown'; hash: string };

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#/, '');
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const parts = path.split('/').filter((p) => p !== '');
  const [first] = parts;
  if (parts.length === 0) return { page: 'overview' };
  if (parts.length === 1 && (first === 'clusters' || first === 'mirrors' || first === 'matrix')) {
    return { page: first };
  }
  if (parts.length === 1 && first === 'where')
    return { page: 'where', name: query.get('name') ?? '' };
  if (first === 'mirror' && parts.length === 4) {
    const kind = decode(parts[1] ?? '');
    const ns = decode(parts[2] ?? '');
    const name = decode(parts[3] ?? '');
    const namespace = ns === '_' ? undefined : ns;
    return { page: 'mirror', kind, namespace, name, key: `${kind}/${namespace ?? ''}/${name}` };
  }
  return { page: 'unknown', hash };
}

/** The detail page of a mirror key (SecretMirror/<ns>/<name> or ClusterSecretMirror//<name>). */
export function mirrorHref(key: string): string {
  const [kind = '', ns = '', ...rest] = key.split('/');
  const seg = [kind, ns || '_', rest.join('/')].map(encodeURIComponent).join('/');
  return `#/mirror/${seg}`;
}

export function whereHref(name: string): string {
  return `#/where?name=${encodeURIComponent(name)}`;
}
