// The agent's heartbeat: a coordination.k8s.io Lease in the agent namespace, renewed on an
// interval, carrying the agent's version. The hub reads it for cluster health (present, version,
// last heartbeat); an agent that stops renewing shows up as stale there.

import { jitterUp } from '@mirrorhub/shared/kit/runtime/backoff';
import { realClock, sleep, type Clock } from '@mirrorhub/shared/kit/runtime/clock';
import { errorMessage } from '@mirrorhub/shared/kit/runtime/errors';
import type { Logger } from '@mirrorhub/shared/kit/runtime/log';
import {
  CONTENT_TYPE,
  groupPath,
  microTime,
  type RestClient,
} from '@mirrorhub/shared/kit/k8s/rest';
import {
  ANNOTATION_AGENT_VERSION,
  ANNOTATION_CLUSTER_NAME,
  HEARTBEAT_LEASE,
} from '@mirrorhub/shared/api/contract';

export interface HeartbeatOptions {
  rest: RestClient;
  namespace: string;
  clusterName: string;
  version: string;
  /** Who renews (pod name); shown as the Lease's holderIdentity. */
  identity: string;
  /** Default 30 s; each wait is jittered up by up to 10%. */
  intervalMs?: number;
  fieldManager: string;
  logger?: Logger;
  clock?: Clock;
}

export class Heartbeat {
  private readonly clock: Clock;
  private readonly intervalMs: number;
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private lastOk = 0;

  constructor(private readonly opts: HeartbeatOptions) {
    this.clock = opts.clock ?? realClock;
    // Why every 30 s, no less and no more often: the hub calls an agent stale once its last
    // renewal is older than the AgentHealthy grace (hub/src/clusters/controller.ts: 3 x this
    // interval). A failed beat is not retried before the next one, so at this interval, jitter
    // included, one beat may fail without the cluster turning Unknown; at 45 s a single failed
    // write would. Beating more often would write more without the hub noticing sooner: it
    // reads the Lease when it probes a healthy cluster, about as often.
    this.intervalMs = opts.intervalMs ?? 30_000;
  }

  /** Beat once now (resolves when it is written, or failed and was logged), then on interval. */
  async start(): Promise<void> {
    if (this.loop) return;
    this.loop = Promise.resolve();
    await this.beat();
    this.loop = (async () => {
      while (await sleep(this.clock, jitterUp(this.intervalMs, 0.1), this.abort.signal)) {
        await this.beat();
      }
    })();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  /** Time of the last successful renewal (0: none yet). */
  get lastRenewed(): number {
    return this.lastOk;
  }

  /** Create or renew the Lease with one server-side apply. */
  async beat(): Promise<void> {
    const { namespace, clusterName, version, identity } = this.opts;
    const now = this.clock.now();
    const body = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: HEARTBEAT_LEASE,
        namespace,
        annotations: {
          [ANNOTATION_AGENT_VERSION]: version,
          [ANNOTATION_CLUSTER_NAME]: clusterName,
        },
      },
      spec: {
        holderIdentity: identity,
        // Stale after three missed beats.
        leaseDurationSeconds: Math.max(1, Math.ceil((3 * this.intervalMs) / 1000)),
        renewTime: microTime(now),
      },
    };
    try {
      await this.opts.rest.patch(
        groupPath('coordination.k8s.io', 'v1', 'leases', namespace, HEARTBEAT_LEASE),
        body,
        CONTENT_TYPE.apply,
        { fieldManager: this.opts.fieldManager, force: true },
      );
      this.lastOk = now;
    } catch (err) {
      this.opts.logger?.warn({ err: errorMessage(err) }, 'heartbeat failed');
    }
  }
}
