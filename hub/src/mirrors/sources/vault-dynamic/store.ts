// Where dynamic sources' leases survive a hub restart or a leader change: ONE Secret,
// mirrorhub-leases, in the hub's own namespace, one data key per mirror (leases.ts recordKey).
// One Secret, so the hub's RBAC names it (resourceNames) instead of granting every Secret of
// its namespace; it is written only when a lease is issued, rotated or revoked, never on a
// renewal. Lease ids and credentials are secrets: they live there and in memory, never in a
// custom resource, a log line or an error.
import {
  corePath,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type RestClient,
} from '@mirrorhub/shared/kit/k8s/rest';
import { LEASES_SECRET } from '../../../names.js';
import { decodeRecord, encodeRecord, recordKey, type LeaseRecord } from './rules.js';

interface SecretBody {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string> | null;
}

export class LeaseStore {
  private cache: Map<string, LeaseRecord> | undefined;
  private loading: Promise<Map<string, LeaseRecord>> | undefined;
  /** Writes one after the other: each is a read-modify-write of the one Secret. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly rest: RestClient,
    private readonly namespace: string,
  ) {}

  /** The mirror's record (read from the Secret once per hub process). */
  async get(mirrorKey: string): Promise<LeaseRecord | undefined> {
    return (await this.load()).get(recordKey(mirrorKey));
  }

  /** Stores (or, with undefined, forgets) the mirror's record; resolves once the Secret says so. */
  put(mirrorKey: string, record: LeaseRecord | undefined): Promise<void> {
    const run = this.chain.then(() => this.write(recordKey(mirrorKey), record));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async load(): Promise<Map<string, LeaseRecord>> {
    if (this.cache) return this.cache;
    this.loading ??= (async () => {
      const secret = await this.read();
      const map = new Map<string, LeaseRecord>();
      for (const [k, v] of Object.entries(secret?.data ?? {})) {
        const r = decodeRecord(v);
        if (r) map.set(k, r);
      }
      this.cache = map;
      return map;
    })().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async read(): Promise<SecretBody | undefined> {
    try {
      return await this.rest.get<SecretBody>(corePath('secrets', this.namespace, LEASES_SECRET));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw new Error(
        `reading Secret ${this.namespace}/${LEASES_SECRET} failed (the hub keeps its Vault leases there): ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }

  private async write(key: string, record: LeaseRecord | undefined): Promise<void> {
    const map = await this.load();
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.read();
      const data = { ...(current?.data ?? {}) };
      if (record) data[key] = encodeRecord(record);
      else delete data[key];
      try {
        if (!current) {
          if (!record) break;
          await this.rest.post(corePath('secrets', this.namespace), {
            metadata: {
              name: LEASES_SECRET,
              namespace: this.namespace,
              labels: {
                'app.kubernetes.io/part-of': 'mirrorhub',
                'app.kubernetes.io/component': 'hub',
              },
              annotations: {
                'mirrorhub.io/description':
                  'Leases of dynamic Vault sources (lease ids and credentials), one key per mirror. Deleting a key makes the hub read new credentials for that mirror; the old lease then expires on its own.',
              },
            },
            type: 'Opaque',
            data,
          });
        } else {
          await this.rest.put(corePath('secrets', this.namespace, LEASES_SECRET), {
            ...current,
            data,
          });
        }
        if (record) map.set(key, record);
        else map.delete(key);
        return;
      } catch (err) {
        if (isConflict(err) || isAlreadyExists(err)) continue; // someone wrote in between: again
        throw new Error(
          `writing Secret ${this.namespace}/${LEASES_SECRET} failed: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
    if (!record) {
      map.delete(key);
      return;
    }
    throw new Error(
      `writing Secret ${this.namespace}/${LEASES_SECRET}: it kept changing under the hub; retrying later`,
    );
  }
}
