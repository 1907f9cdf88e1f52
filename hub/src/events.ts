// Kubernetes Events (core/v1) about mirrors. Only names, reasons and messages the plan built
// from names and counts go in: never payload data. Events about a cluster-scoped mirror go to
// the "default" namespace, as kubectl expects for cluster-scoped objects.
import { randomBytes } from 'node:crypto';
import type { CoreV1Event } from '@kubernetes/client-node';
import { corePath, type RestClient } from '@mirrorhub/shared/k8s/rest';
import { errorMessage, type ControllerMetrics, type Logger } from '@mirrorhub/shared/runtime/index';
import { EVENT_COMPONENT } from './names.js';

export interface EventTarget {
  apiVersion: string;
  kind: string;
  metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export interface RecordedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export class EventRecorder {
  constructor(
    private readonly rest: RestClient,
    private readonly opts: {
      instance: string;
      logger: Logger;
      metrics: ControllerMetrics;
      now?: () => Date;
    },
  ) {}

  /** Emit one Event. Failures are logged and counted, never thrown. */
  async record(target: EventTarget, event: RecordedEvent): Promise<void> {
    const now = (this.opts.now ?? (() => new Date()))();
    const name = target.metadata.name ?? '';
    const namespace = target.metadata.namespace || 'default';
    const body: CoreV1Event = {
      metadata: {
        name: `${name.slice(0, 200)}.${now.getTime().toString(16)}${randomBytes(3).toString('hex')}`,
        namespace,
      },
      involvedObject: {
        apiVersion: target.apiVersion,
        kind: target.kind,
        name,
        ...(target.metadata.namespace ? { namespace: target.metadata.namespace } : {}),
        ...(target.metadata.uid ? { uid: target.metadata.uid } : {}),
        ...(target.metadata.resourceVersion
          ? { resourceVersion: target.metadata.resourceVersion }
          : {}),
      },
      type: event.type,
      reason: event.reason,
      message: event.message.slice(0, 1024),
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: EVENT_COMPONENT },
      reportingComponent: `mirrorhub.io/${EVENT_COMPONENT}`,
      reportingInstance: this.opts.instance.slice(0, 128),
    };
    try {
      await this.rest.post(corePath('events', namespace), body);
      this.opts.metrics.writesTotal.inc({ kind: 'Event', verb: 'create' });
      this.opts.logger.info(
        {
          object: `${target.kind}/${target.metadata.namespace ?? ''}/${name}`,
          reason: event.reason,
        },
        'event',
      );
    } catch (err) {
      this.opts.metrics.writeErrorsTotal.inc({ kind: 'Event', verb: 'create', code: 'error' });
      this.opts.logger.warn(
        { err: errorMessage(err), reason: event.reason, object: name },
        'emitting an Event failed',
      );
    }
  }
}
