// How a hub replica that does not lead reads a dynamic Vault source: from the leases Secret the
// leader writes (store.ts), never from Vault. Only the leader issues, renews, rotates and revokes
// leases, so N replicas hold one lease per mirror, not N; the others watch the one Secret (by
// name) and deliver the credentials it records. A record that changes (a rotation) enqueues its
// mirror.
import type { V1Secret } from '@kubernetes/client-node';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { createWatcher, watchTuning, type Watcher } from '@mirrorhub/shared/kit/k8s/watcher';
import { LEASES_SECRET } from '../../../names.js';
import { decodeRecord, recordKey, type LeaseRecord } from './rules.js';

export class LeaseReader {
  private readonly watcher: Watcher<V1Secret>;
  /** The data value last seen per record key: what a change is compared with. */
  private readonly seen = new Map<string, string>();
  /** Mirror keys asked about, by record key: who to enqueue when a record changes. */
  private readonly asked = new Map<string, string>();
  private started = false;

  constructor(
    private readonly opts: {
      kubeConfig: KubeAccess;
      namespace: string;
      watchProgressDeadlineMs?: number | undefined;
      enqueue(mirrorKey: string): void;
    },
  ) {
    this.watcher = createWatcher<V1Secret>(
      opts.kubeConfig,
      {
        version: 'v1',
        plural: 'secrets',
        namespace: opts.namespace,
        fieldSelector: `metadata.name=${LEASES_SECRET}`,
      },
      { resource: 'leases-secret', ...watchTuning(opts.watchProgressDeadlineMs) },
    );
  }

  /**
   * The mirror's record as the Secret holds it now; 'unknown' until the first list (it enqueues
   * the mirrors asked about), undefined when the leader has recorded none.
   */
  get(mirrorKey: string): LeaseRecord | undefined | 'unknown' {
    const key = recordKey(mirrorKey);
    this.asked.set(key, mirrorKey);
    this.start();
    if (!this.watcher.hasSynced()) return 'unknown';
    const value = this.watcher.get(LEASES_SECRET, this.opts.namespace)?.data?.[key];
    return value ? decodeRecord(value) : undefined;
  }

  /** The mirror no longer reads it here. */
  forget(mirrorKey: string): void {
    this.asked.delete(recordKey(mirrorKey));
  }

  async stop(): Promise<void> {
    if (this.started) await this.watcher.stop();
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    const changed = (secret: V1Secret | undefined) => {
      const data = secret?.data ?? {};
      for (const [key, mirrorKey] of this.asked) {
        const value = data[key] ?? '';
        if (this.seen.get(key) === value) continue;
        this.seen.set(key, value);
        this.opts.enqueue(mirrorKey);
      }
    };
    this.watcher.addHandler({
      onAdd: changed,
      onUpdate: changed,
      onDelete: () => changed(undefined),
    });
    this.watcher.start();
    // The first list: the mirrors that asked before it get their answer.
    this.watcher.synced.then(
      () => changed(this.watcher.get(LEASES_SECRET, this.opts.namespace)),
      () => undefined,
    );
  }
}
