// Where the agent keeps what sequence.ts decides from: the ConfigMap SEQUENCES_CONFIGMAP in the
// agent namespace. Not in the MirrorDelivery (its writers are the very identities a replay comes
// from, and deleting it would wipe the memory), nor on the copies (a deleted Retain mirror's
// copies carry no marks any more, and a delivery may have none): a ConfigMap that the agent
// chart's admission policy lets only the agent's ServiceAccount write (the hub's group has no
// ConfigMap rights there at all), read once per leadership term and written before the agent
// acts on a sequence it has not applied yet, so a restart never forgets what it acted on.
//
// Writes are few: none while deliveries stay as they are, one when the hub writes a changed
// delivery (the deliveries changed at once share one), conditional on the resourceVersion (a
// conflict merges what the other writer left, so nothing either remembers is lost).

import type { V1ConfigMap } from '@kubernetes/client-node';
import { SEQUENCES_CONFIGMAP } from '@mirrorhub/shared/api/contract';
import {
  corePath,
  isAlreadyExists,
  isConflict,
  isNotFound,
  RestClient,
} from '@mirrorhub/shared/kit/k8s/rest';
import { errorMessage, httpStatusOf } from '@mirrorhub/shared/kit/runtime/errors';
import type { Logger } from '@mirrorhub/shared/kit/runtime/log';
import type { ControllerMetrics } from '@mirrorhub/shared/kit/runtime/metrics';
import {
  bounded,
  memoryContent,
  mergeMemories,
  readMemory,
  withApplied,
  type Applied,
  type Remembered,
} from './sequence.js';

export interface SequenceMemoryOptions {
  rest: RestClient;
  /** The agent namespace. */
  namespace: string;
  fieldManager: string;
  logger: Logger;
  /** Every write is counted (writes_total / write_errors_total, kind ConfigMap). */
  metrics?: Pick<ControllerMetrics, 'writesTotal' | 'writeErrorsTotal'> | undefined;
  /** Whether a delivery of this name exists (the cache): the others' entries are tombstones. */
  live(name: string): boolean;
  /** Tombstones kept (default sequence.ts's MAX_GONE). */
  maxGone?: number;
}

/** Tries of one write against other writers' conflicting writes. */
const WRITE_TRIES = 5;

export class SequenceMemory {
  private loaded: Promise<Remembered> | undefined;
  /** The ConfigMap as last read or written: its resourceVersion, or none there. */
  private resourceVersion: string | undefined;
  /** Entries waiting for the next write, and that write's completion. */
  private batch: { entries: Map<string, Applied>; done: Promise<void> } | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly opts: SequenceMemoryOptions) {}

  private get path(): string {
    return corePath('configmaps', this.opts.namespace, SEQUENCES_CONFIGMAP);
  }

  /** Read the ConfigMap again on next use (a new leadership term: another agent may have written). */
  reset(): void {
    this.loaded = undefined;
  }

  /** What is remembered (the ConfigMap, read once per term; a failed read is tried again). */
  memory(): Promise<Remembered> {
    if (!this.loaded) {
      const loading = this.read();
      this.loaded = loading;
      loading.catch(() => {
        if (this.loaded === loading) this.loaded = undefined;
      });
    }
    return this.loaded;
  }

  private async read(): Promise<Remembered> {
    let cm: V1ConfigMap | undefined;
    try {
      cm = await this.opts.rest.get<V1ConfigMap>(this.path);
    } catch (err) {
      if (!isNotFound(err)) {
        throw new Error(
          `reading ConfigMap ${this.opts.namespace}/${SEQUENCES_CONFIGMAP} (the sequences this agent applied): ${errorMessage(err)}`,
          { cause: err },
        );
      }
    }
    this.resourceVersion = cm?.metadata?.resourceVersion;
    const { memory, invalid } = readMemory(cm);
    if (invalid.length > 0) {
      this.opts.logger.warn(
        { configMap: SEQUENCES_CONFIGMAP, invalid: invalid.slice(0, 10), count: invalid.length },
        'entries of the sequences ConfigMap are not "<sequence> <uid>": ignored',
      );
    }
    return memory;
  }

  /**
   * Remember `applied` under `name`; resolves once the ConfigMap holds it. Entries that arrive
   * while a write is under way go out together in the next one.
   */
  remember(name: string, applied: Applied): Promise<void> {
    if (!this.batch) {
      const entries = new Map<string, Applied>();
      const done = this.chain
        .catch(() => undefined)
        .then(() => {
          if (this.batch?.entries === entries) this.batch = undefined;
          return this.write(entries);
        });
      this.batch = { entries, done };
      this.chain = done;
    }
    const had = this.batch.entries.get(name);
    if (!had || applied.sequence >= had.sequence) this.batch.entries.set(name, applied);
    return this.batch.done;
  }

  private async write(entries: ReadonlyMap<string, Applied>): Promise<void> {
    const { logger, namespace } = this.opts;
    let base = await this.memory();
    for (let attempt = 1; ; attempt++) {
      const { memory, forgotten } = bounded(
        withApplied(base, entries),
        (n) => this.opts.live(n),
        this.opts.maxGone,
      );
      const { data, annotations } = memoryContent(memory);
      const body: V1ConfigMap = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: SEQUENCES_CONFIGMAP,
          namespace,
          labels: { 'app.kubernetes.io/part-of': 'mirrorhub' },
          annotations: {
            'mirrorhub.io/description':
              'Written by the mirrorhub agent only: the newest MirrorDelivery sequence it applied per delivery name ("<sequence> <uid>"), so that an older delivery is refused as a replay',
            ...annotations,
          },
          ...(this.resourceVersion ? { resourceVersion: this.resourceVersion } : {}),
        },
        data,
      };
      const query = { fieldManager: this.opts.fieldManager };
      const verb = this.resourceVersion ? 'update' : 'create';
      try {
        const written = this.resourceVersion
          ? await this.opts.rest.put<V1ConfigMap>(this.path, body, query)
          : await this.opts.rest.post<V1ConfigMap>(corePath('configmaps', namespace), body, query);
        this.opts.metrics?.writesTotal.inc({ kind: 'ConfigMap', verb });
        this.resourceVersion = written.metadata?.resourceVersion;
        this.loaded = Promise.resolve(memory);
        if (forgotten > 0) {
          logger.info(
            { forgotten, forgottenUpTo: memory.forgottenUpTo },
            'sequences of long-deleted deliveries forgotten; none of them is accepted again',
          );
        }
        return;
      } catch (err) {
        const code = String(httpStatusOf(err) ?? 'none');
        this.opts.metrics?.writeErrorsTotal.inc({ kind: 'ConfigMap', verb, code });
        // Someone else wrote it (another agent of an overlapping term), or it was deleted or
        // created meanwhile: read it again and keep what both remember.
        const raced = isConflict(err) || isAlreadyExists(err) || isNotFound(err);
        if (!raced || attempt >= WRITE_TRIES) {
          throw new Error(
            `writing ConfigMap ${namespace}/${SEQUENCES_CONFIGMAP} (the sequences this agent applied): ${errorMessage(err)}; nothing is applied until it can be written (the agent chart's RBAC and its admission policy <release>-sequences let the agent's ServiceAccount write it)`,
            { cause: err },
          );
        }
        base = mergeMemories(base, await this.read());
      }
    }
  }
}
