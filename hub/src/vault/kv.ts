// KV v1 and v2 over a logical path `<mount>/<secret path>` (`secret/team-a/db`), as the hub
// reads mirror sources and writes mirror destinations.
//
// Mount and version: detected once per path with `GET sys/internal/ui/mounts/<path>`
// (`lookupMount`), which answers the mount path, type and `options.version` to any token whose
// policy grants some capability under that mount (no access to sys/mounts needed); OpenBao
// answers 403 both for "no access" and "no mount there". A path whose mount is not a KV engine is
// refused, also when the caller states the version (`mounts: { secret: 2 }`, which then only
// overrides the version): a stated version must never make a KV request of a non-KV path.
//
// Decisions the caller must know:
// - Values are strings. Vault stores JSON, so a secret written by someone else may hold numbers,
//   booleans, null, objects or arrays: `read()` returns those as their JSON text (`1`, `true`,
//   `{"a":1}`) and lists their keys in `jsonKeys`, so nothing is lost or silently dropped. A
//   write always stores strings, and counts a secret holding non-strings as changed (the write
//   normalises it). Writing a non-string value is refused.
// - Writes happen only when something changed: `write()` reads first and writes a new version
//   (v2) or the key (v1) only when the data differs, and the custom metadata only when it
//   differs. KV v2 writes always carry check-and-set: the caller's `cas`, else the version the
//   read saw, so a concurrent writer between the read and the write is never clobbered; the
//   caller gets a `cas-mismatch` VaultError, reads again and decides.
// - Ownership. KV v2: the owner is the custom-metadata key `mirrorhub.io/owner` (the metadata is
//   written before the first version, so a new secret is never unowned). KV v1 has no metadata:
//   the owner is the reserved data key `_mirrorhub_owner` (a name that is a valid identifier, so
//   consumers that turn keys into environment variables or template fields do not trip on it),
//   written atomically with the data and under the same policy, and visible to anyone reading
//   the secret, which says who manages it. `read()` removes it from `data` and reports it as
//   `owner`; writing data that contains the reserved key is refused. A sibling marker path was
//   rejected: two writes that can diverge, and a second path every policy must grant.
//   `owner(path)` tells the caller whether a path is its own before it overwrites or removes it
//   (for v2 also when the latest version is deleted: the metadata, and the owner, remain).
//   `owner: undefined` keeps the current owner; `owner: null` removes it.
// - `remove()` on v2 deletes every version and the metadata; on v1 it deletes the key.
// - A v2 secret whose latest version is deleted or destroyed reads as absent.

import { VaultError, isVaultError, redact, stringsIn } from './errors.js';
import { apiPath, type VaultEnvelope } from './http.js';
import type { VaultClient } from './client.js';

export const OWNER_METADATA_KEY = 'mirrorhub.io/owner';
export const OWNER_DATA_KEY = '_mirrorhub_owner';

export type KvVersion = 1 | 2;

export interface KvSecret {
  /** Every value as a string; non-string values as their JSON text (see `jsonKeys`). */
  data: Record<string, string>;
  /** Keys whose stored value is not a string. */
  jsonKeys: string[];
  kvVersion: KvVersion;
  /** KV v2: the version read. */
  version?: number;
  /** KV v2: when this version was written (RFC 3339). */
  createdTime?: string;
  /** KV v2: the custom metadata, without the owner key. */
  customMetadata?: Record<string, string>;
  owner?: string;
}

export interface KvInspection {
  secret: KvSecret | undefined;
  owner: string | undefined;
  currentVersion: number;
  kvVersion: KvVersion;
}

export interface KvWriteOptions {
  /** KV v2: write only if the current version is this (0: only if the secret never existed). */
  cas?: number;
  /** KV v2: the secret's custom metadata, replacing what is there (the owner key is kept). */
  customMetadata?: Record<string, string>;
  /** The owner to mark; undefined keeps the current one; null removes it. */
  owner?: string | null;
}

export interface KvWriteResult {
  /** A new version (v2) or the key (v1) was written. */
  wrote: boolean;
  /** KV v2: the custom metadata was written. */
  metadataWritten: boolean;
  /** KV v2: the version now current (the new one, or the unchanged one). */
  version?: number;
}

export interface KvOptions {
  /** Mounts whose KV version is known: `{ secret: 2, legacy: 1 }`; others are detected. */
  mounts?: Record<string, KvVersion>;
}

/** A logical path resolved against its mount. */
export interface KvLocation {
  /** `secret` (no slashes around). */
  mount: string;
  version: KvVersion;
  /** The path inside the mount (`team-a/db`); '' for the mount itself. */
  key: string;
}

// ---- pure helpers (unit-tested) ---------------------------------------------------------------

/** `/secret//team-a/db/` -> `secret/team-a/db`; refuses `.`/`..` segments and empty paths. */
export function normalizePath(path: string): string {
  const segments = path.split('/').filter((s) => s !== '');
  if (segments.length === 0 || segments.some((s) => s === '.' || s === '..')) {
    throw new VaultError({
      kind: 'usage',
      message: `"${path}" is not a Vault path: give it as <mount>/<secret path>, e.g. secret/team-a/db`,
    });
  }
  return segments.join('/');
}

/** The longest known mount that is a prefix of `path` (by whole segments). */
export function matchMount(
  path: string,
  mounts: ReadonlyMap<string, KvVersion>,
): KvLocation | undefined {
  let best: KvLocation | undefined;
  for (const [mount, version] of mounts) {
    if (path === mount || path.startsWith(`${mount}/`)) {
      if (!best || mount.length > best.mount.length) {
        best = { mount, version, key: path.slice(mount.length + 1) };
      }
    }
  }
  return best;
}

/** Vault's stored data as strings, and the keys that were not strings. */
export function decodeData(raw: unknown): { data: Record<string, string>; jsonKeys: string[] } {
  const data: Record<string, string> = {};
  const jsonKeys: string[] = [];
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
      if (typeof v === 'string') data[k] = v;
      else {
        data[k] = JSON.stringify(v) ?? 'null';
        jsonKeys.push(k);
      }
    }
  }
  return { data, jsonKeys };
}

export function sameStringMap(
  a: Readonly<Record<string, string>>,
  b: Readonly<Record<string, string>>,
): boolean {
  const ak = Object.keys(a);
  if (ak.length !== Object.keys(b).length) return false;
  return ak.every((k) => Object.prototype.hasOwnProperty.call(b, k) && a[k] === b[k]);
}

/** Refuses non-string values (a caller bug the type system may not catch) and empty keys. */
export function assertStringMap(what: string, map: unknown): asserts map is Record<string, string> {
  if (!map || typeof map !== 'object' || Array.isArray(map)) {
    throw new VaultError({ kind: 'usage', message: `${what} must be an object of strings` });
  }
  for (const [k, v] of Object.entries(map)) {
    if (k === '') throw new VaultError({ kind: 'usage', message: `${what} has an empty key` });
    if (typeof v !== 'string') {
      throw new VaultError({
        kind: 'usage',
        message: `${what}: the value of "${k}" is a ${v === null ? 'null' : typeof v}, not a string; encode it (e.g. JSON) first`,
      });
    }
  }
}

/** The full custom_metadata to store, or undefined when the options leave it alone. */
export function desiredCustomMetadata(
  current: Readonly<Record<string, string>>,
  opts: Pick<KvWriteOptions, 'customMetadata' | 'owner'>,
): Record<string, string> | undefined {
  if (opts.customMetadata === undefined && opts.owner === undefined) return undefined;
  const base: Record<string, string> = { ...(opts.customMetadata ?? current) };
  delete base[OWNER_METADATA_KEY];
  const owner = opts.owner === undefined ? current[OWNER_METADATA_KEY] : opts.owner;
  if (owner !== null && owner !== undefined) base[OWNER_METADATA_KEY] = owner;
  return base;
}

/** Whether mount path `mount` holds `path` (by whole segments). */
function isPrefix(mount: string, path: string): boolean {
  return path === mount || path.startsWith(`${mount}/`);
}

export interface MountInfo {
  /** The mount path, no slashes around (`secret`, `team/db`). */
  mount: string;
  /** The engine type (`kv`, `database`, `token`...). */
  type: string;
  /** The KV version its options state (1 when none). */
  version: KvVersion;
  /** The path inside the mount ('' for the mount itself). */
  key: string;
}

/**
 * The mount of logical path `path` (normalised), as Vault answers `GET
 * sys/internal/ui/mounts/<path>`: to any token whose policy grants some capability under that
 * mount, no sys/mounts access needed. OpenBao answers 403 both for "no access" and "no mount".
 */
export async function lookupMount(client: VaultClient, path: string): Promise<MountInfo> {
  type Mount = { path?: string; type?: string; options?: { version?: string } | null };
  let res;
  try {
    res = await client.request<VaultEnvelope<Mount>>({
      method: 'GET',
      path: `sys/internal/ui/mounts/${apiPath(path)}`,
    });
  } catch (err) {
    if (isVaultError(err, 'permission-denied')) {
      throw err.withMessage(
        `cannot find the mount of ${path}: Vault answered 403 to sys/internal/ui/mounts, which it does when no mount is there${err.namespace ? ` (namespace ${err.namespace})` : ''} or when the policy of ${client.session.auth.mintsTokens ? 'the token of ' : ''}${client.session.auth.description} grants nothing under it; check the path, or grant the policy access to it`,
      );
    }
    throw err;
  }
  const m = res.body?.data;
  const reported = m?.path?.replace(/^\/+|\/+$/g, '');
  // An auth method's mount is reported without its auth/ prefix (`token/` for auth/token/...).
  const mount =
    reported && !isPrefix(reported, path) && isPrefix(`auth/${reported}`, path)
      ? `auth/${reported}`
      : reported;
  if (!m || !mount) {
    throw new VaultError({
      kind: 'unexpected-response',
      message: `cannot find the mount of ${path}: sys/internal/ui/mounts answered without a mount path`,
    });
  }
  if (!isPrefix(mount, path)) {
    throw new VaultError({
      kind: 'unexpected-response',
      message: `sys/internal/ui/mounts placed ${path} in mount ${mount}/, which is not a prefix of it`,
    });
  }
  return {
    mount,
    type: m.type ?? 'unknown',
    version: m.options?.version === '2' ? 2 : 1,
    key: path === mount ? '' : path.slice(mount.length + 1),
  };
}

// ---- the client ---------------------------------------------------------------------------------

interface V2Data {
  data?: Record<string, unknown> | null;
  metadata?: {
    version?: number;
    created_time?: string;
    deletion_time?: string;
    destroyed?: boolean;
    custom_metadata?: Record<string, string> | null;
  } | null;
}

/** What a read saw, including what `write()` needs when the secret reads as absent. */
interface Observed {
  secret: KvSecret | undefined;
  /** KV v2: the current version, deleted or not (0: no metadata). */
  currentVersion: number;
  /** KV v2: the full custom metadata (owner key included); KV v1: the raw data. */
  rawMeta: Record<string, string>;
  /** KV v1: the stored data as strings, owner key included. */
  rawData: Record<string, string>;
  /** Every stored value was a string (otherwise a write rewrites it even if the text is equal). */
  allStrings: boolean;
  owner: string | undefined;
}

export class VaultKv {
  private readonly stated = new Map<string, KvVersion>();
  private readonly detected = new Map<string, KvLocation>();

  constructor(
    readonly client: VaultClient,
    opts: KvOptions = {},
  ) {
    for (const [mount, version] of Object.entries(opts.mounts ?? {})) {
      if (version !== 1 && version !== 2) {
        throw new VaultError({
          kind: 'usage',
          message: `KV version of mount "${mount}" must be 1 or 2; got ${String(version)}`,
        });
      }
      this.stated.set(normalizePath(mount), version);
    }
  }

  /** The mount, KV version and key of a logical path (detected once per path unless stated). */
  async locate(path: string): Promise<KvLocation> {
    const p = normalizePath(path);
    const known = this.detected.get(p);
    if (known) return known;
    // Asked of Vault even when the version is stated: a stated version must not turn any path
    // (auth/token/lookup-self) into a "KV secret". The stated version wins over the options.
    const detected = await this.detect(p);
    const stated = matchMount(p, this.stated);
    const loc = stated ? { ...detected, version: stated.version } : detected;
    this.detected.set(p, loc);
    return loc;
  }

  /** The secret at `path`, or undefined when absent (v2: also when its latest version is deleted). */
  async read(path: string): Promise<KvSecret | undefined> {
    return (await this.observe(await this.locateSecret(path))).secret;
  }

  /** The owner marked on `path` (v2: even when its latest version is deleted), if any. */
  async owner(path: string): Promise<string | undefined> {
    return (await this.observe(await this.locateSecret(path))).owner;
  }

  /**
   * What `path` holds and whose it is, in one read: the secret (undefined when absent), its owner
   * (v2: also when the latest version is deleted) and the current version (v2; 0: no metadata,
   * the secret never existed; v1: always 0).
   */
  async inspect(path: string): Promise<KvInspection> {
    const loc = await this.locateSecret(path);
    const seen = await this.observe(loc);
    return {
      secret: seen.secret,
      owner: seen.owner,
      currentVersion: seen.currentVersion,
      kvVersion: loc.version,
    };
  }

  /**
   * Writes `data` (and custom metadata / owner) when it differs from what is stored; see the
   * header for check-and-set, ownership and KV v1.
   */
  async write(
    path: string,
    data: Record<string, string>,
    opts: KvWriteOptions = {},
  ): Promise<KvWriteResult> {
    const loc = await this.locateSecret(path);
    const logical = `${loc.mount}/${loc.key}`;
    assertStringMap(`the data for ${logical}`, data);
    if (opts.customMetadata !== undefined) {
      assertStringMap(`the custom metadata for ${logical}`, opts.customMetadata);
    }
    if (loc.version === 1) return this.writeV1(loc, logical, data, opts);
    return this.writeV2(loc, logical, data, opts);
  }

  /** `write()`, answering only whether anything was written. */
  async writeIfChanged(
    path: string,
    data: Record<string, string>,
    opts: KvWriteOptions = {},
  ): Promise<boolean> {
    const r = await this.write(path, data, opts);
    return r.wrote || r.metadataWritten;
  }

  /** Deletes the secret: v2 every version and the metadata, v1 the key. Absent is fine. */
  async remove(path: string): Promise<void> {
    const loc = await this.locateSecret(path);
    const res = await this.client.request({
      method: 'DELETE',
      path:
        loc.version === 2 ? apiPath(loc.mount, 'metadata', loc.key) : apiPath(loc.mount, loc.key),
      accept: [404],
    });
    this.noRoute(res, loc, 'DELETE');
  }

  /** Keys under a folder (sub-folders end with `/`); [] when there is none. */
  async list(path: string): Promise<string[]> {
    const loc = await this.locate(path);
    const folder =
      loc.version === 2 ? apiPath(loc.mount, 'metadata', loc.key) : apiPath(loc.mount, loc.key);
    const res = await this.client.request<VaultEnvelope<{ keys?: string[] }>>({
      method: 'GET',
      path: `${folder}/`,
      query: { list: 'true' },
      accept: [404],
    });
    this.noRoute(res, loc, 'LIST');
    return res.status === 404 ? [] : (res.body?.data?.keys ?? []);
  }

  // ---- internals --------------------------------------------------------------------------------

  /**
   * A 404 with errors is not an absent secret (that 404 has none, or carries the deleted
   * version's metadata): Vault has no route there, i.e. no such mount. Reading it as "absent"
   * would make a caller delete what it mirrors from there, so it is an error.
   */
  private noRoute(
    res: { status: number; body?: VaultEnvelope<unknown> | undefined },
    loc: KvLocation,
    op: string,
  ): void {
    const errors = (res.body?.errors ?? []).map((e) => redact(e));
    if (res.status !== 404 || errors.length === 0) return;
    const ns = this.client.namespace;
    throw new VaultError({
      kind: 'not-found',
      message: `${op} ${loc.mount}/${loc.key}${ns ? ` (namespace ${ns})` : ''}: Vault has no route there (${errors.join('; ')}): there is no KV mount ${loc.mount}/${ns ? ` in namespace ${ns}` : ''}; check the path and the namespace`,
      status: 404,
      errors,
      namespace: ns,
    });
  }

  private async locateSecret(path: string): Promise<KvLocation> {
    const loc = await this.locate(path);
    if (loc.key === '') {
      throw new VaultError({
        kind: 'usage',
        message: `"${path}" names the mount ${loc.mount}/ itself: give the secret's path inside it, e.g. ${loc.mount}/team-a/db`,
      });
    }
    return loc;
  }

  private async detect(path: string): Promise<KvLocation> {
    const m = await lookupMount(this.client, path);
    if (m.type !== 'kv' && m.type !== 'generic') {
      throw new VaultError({
        kind: 'usage',
        message: `${path} is in mount ${m.mount}/ of type "${m.type}", not a KV secrets engine (rule: a KV source or destination must be in a KV mount, whatever kvVersion says)`,
      });
    }
    return { mount: m.mount, version: m.version, key: m.key };
  }

  private async observe(loc: KvLocation): Promise<Observed> {
    if (loc.version === 1) {
      const res = await this.client.request<VaultEnvelope<Record<string, unknown>>>({
        method: 'GET',
        path: apiPath(loc.mount, loc.key),
        accept: [404],
      });
      this.noRoute(res, loc, 'GET');
      if (res.status === 404 || !res.body?.data) {
        return {
          secret: undefined,
          currentVersion: 0,
          rawMeta: {},
          rawData: {},
          allStrings: true,
          owner: undefined,
        };
      }
      const { data: rawData, jsonKeys } = decodeData(res.body.data);
      const data = { ...rawData };
      const marker = res.body.data[OWNER_DATA_KEY];
      const owner = typeof marker === 'string' ? marker : undefined;
      if (owner !== undefined) delete data[OWNER_DATA_KEY];
      return {
        secret: {
          data,
          jsonKeys: jsonKeys.filter((k) => k !== OWNER_DATA_KEY),
          kvVersion: 1,
          ...(owner !== undefined ? { owner } : {}),
        },
        currentVersion: 0,
        rawMeta: {},
        rawData,
        allStrings: jsonKeys.length === 0,
        owner,
      };
    }
    const res = await this.client.request<VaultEnvelope<V2Data>>({
      method: 'GET',
      path: apiPath(loc.mount, 'data', loc.key),
      accept: [404],
    });
    this.noRoute(res, loc, 'GET');
    const body = res.body?.data;
    const meta = body?.metadata ?? undefined;
    const rawMeta = { ...(meta?.custom_metadata ?? {}) };
    const owner = rawMeta[OWNER_METADATA_KEY];
    const currentVersion = meta?.version ?? 0;
    const gone = !!meta?.deletion_time || meta?.destroyed === true;
    if (res.status === 404 || !body?.data || gone) {
      return { secret: undefined, currentVersion, rawMeta, rawData: {}, allStrings: true, owner };
    }
    const { data, jsonKeys } = decodeData(body.data);
    const customMetadata = { ...rawMeta };
    delete customMetadata[OWNER_METADATA_KEY];
    return {
      secret: {
        data,
        jsonKeys,
        kvVersion: 2,
        ...(meta?.version !== undefined ? { version: meta.version } : {}),
        ...(meta?.created_time ? { createdTime: meta.created_time } : {}),
        customMetadata,
        ...(owner !== undefined ? { owner } : {}),
      },
      currentVersion,
      rawMeta,
      rawData: data,
      allStrings: jsonKeys.length === 0,
      owner,
    };
  }

  private async writeV2(
    loc: KvLocation,
    logical: string,
    data: Record<string, string>,
    opts: KvWriteOptions,
  ): Promise<KvWriteResult> {
    const seen = await this.observe(loc);
    if (opts.cas !== undefined && opts.cas !== seen.currentVersion) {
      throw new VaultError({
        kind: 'cas-mismatch',
        message: `check-and-set refused writing ${logical}: the caller expected version ${opts.cas} but the current version is ${seen.currentVersion}; read it again and decide`,
        method: 'POST',
        path: apiPath(loc.mount, 'data', loc.key),
      });
    }
    const cas = opts.cas ?? seen.currentVersion;
    const desiredMeta = desiredCustomMetadata(seen.rawMeta, opts);
    const metaChanged = desiredMeta !== undefined && !sameStringMap(desiredMeta, seen.rawMeta);
    const dataChanged = !seen.secret || !seen.allStrings || !sameStringMap(seen.secret.data, data);
    // Metadata first: a new secret is owned before its first version exists.
    if (metaChanged) {
      await this.client.request({
        method: 'POST',
        path: apiPath(loc.mount, 'metadata', loc.key),
        body: { custom_metadata: desiredMeta },
        secrets: stringsIn(data),
      });
    }
    let version = seen.secret?.version;
    if (dataChanged) {
      try {
        const res = await this.client.request<VaultEnvelope<{ version?: number }>>({
          method: 'POST',
          path: apiPath(loc.mount, 'data', loc.key),
          body: { data, options: { cas } },
          secrets: stringsIn(data),
        });
        version = res.body?.data?.version ?? version;
      } catch (err) {
        if (isVaultError(err, 'cas-mismatch')) {
          throw err.withMessage(
            `check-and-set refused writing ${logical}: it changed after version ${cas} was read (another writer?); read it again and retry`,
          );
        }
        throw err;
      }
    }
    return {
      wrote: dataChanged,
      metadataWritten: metaChanged,
      ...(version !== undefined ? { version } : {}),
    };
  }

  private async writeV1(
    loc: KvLocation,
    logical: string,
    data: Record<string, string>,
    opts: KvWriteOptions,
  ): Promise<KvWriteResult> {
    const refuse = (what: string): never => {
      throw new VaultError({
        kind: 'usage',
        message: `${logical} is in KV v1 mount ${loc.mount}/, which has ${what}`,
      });
    };
    if (opts.cas !== undefined) refuse('no check-and-set (only KV v2 has)');
    if (opts.customMetadata !== undefined) refuse('no custom metadata (only KV v2 has)');
    if (Object.prototype.hasOwnProperty.call(data, OWNER_DATA_KEY)) {
      refuse(`its owner in the reserved key "${OWNER_DATA_KEY}": remove it from the data`);
    }
    const seen = await this.observe(loc);
    const owner = opts.owner === undefined ? seen.owner : opts.owner;
    const desired: Record<string, string> = { ...data };
    if (owner !== null && owner !== undefined) desired[OWNER_DATA_KEY] = owner;
    if (seen.secret && seen.allStrings && sameStringMap(seen.rawData, desired)) {
      return { wrote: false, metadataWritten: false };
    }
    await this.client.request({
      method: 'POST',
      path: apiPath(loc.mount, loc.key),
      body: desired,
      secrets: stringsIn(data),
    });
    return { wrote: true, metadataWritten: false };
  }
}
