// Kubernetes Events about a controller's objects (events.k8s.io/v1; `kubectl describe` and
// `kubectl get events` show them, the core/v1 API serves the same objects). One recorder for
// every controller of hub and agent.
//
// Best effort: a failed Event is logged and counted, never thrown, so an Event never fails a
// reconcile. Callers record on transitions only, so a steady cluster writes none. Notes carry
// names, reasons and counts the plans built, never payload data. Events about a cluster-scoped
// object go to the "default" namespace, as kubectl expects.

import { crypto } from '../runtime/builtins.js';
import { realClock, type Clock } from '../runtime/clock.js';
import { errorMessage, httpStatusOf } from '../runtime/errors.js';
import type { Logger } from '../runtime/log.js';
import { groupPath, microTime, type RestClient } from '../k8s/rest.js';
import type { WriteMetrics } from '../runtime/metrics.js';

const { randomBytes } = crypto;

/** The object an Event is about. */
export interface EventSubject {
  apiVersion?: string | undefined;
  kind?: string | undefined;
  metadata?: {
    name?: string | undefined;
    namespace?: string | undefined;
    uid?: string | undefined;
    resourceVersion?: string | undefined;
  };
}

export type EventType = 'Normal' | 'Warning';

/** One Event, as a plan decides it. */
export interface ControllerEvent {
  type: EventType;
  /** UpperCamelCase, machine-readable (e.g. Synced, PolicyDenied). */
  reason: string;
  /** Human-readable; names and counts only. */
  message: string;
  /** What the controller did (default "Reconcile"). */
  action?: string | undefined;
}

export interface EventRecorderOptions {
  rest: RestClient;
  /** reportingController: who reports (the component's field manager, e.g. mirrorhub-hub). */
  controller: string;
  /** reportingInstance: which replica (its pod name). */
  instance: string;
  logger?: Logger | undefined;
  metrics?: WriteMetrics | undefined;
  clock?: Clock | undefined;
}

/** The API server's limit of `note`, in bytes (UTF-8). */
const MAX_NOTE_BYTES = 1024;

export class EventRecorder {
  private readonly clock: Clock;

  constructor(private readonly opts: EventRecorderOptions) {
    this.clock = opts.clock ?? realClock;
  }

  /** Emit one Event. Failures are logged and counted, never thrown. */
  async record(subject: EventSubject, event: ControllerEvent): Promise<void> {
    const now = this.clock.now();
    const name = subject.metadata?.name ?? '';
    const objectNamespace = subject.metadata?.namespace || undefined;
    const namespace = objectNamespace ?? 'default';
    const note = event.message;
    const body = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: {
        name: `${name.slice(0, 200)}.${now.toString(16)}${randomBytes(3).toString('hex')}`,
        namespace,
      },
      eventTime: microTime(now),
      reportingController: this.opts.controller,
      reportingInstance: this.opts.instance.slice(0, 128),
      action: (event.action ?? 'Reconcile').slice(0, 128),
      reason: event.reason.slice(0, 128),
      type: event.type,
      note: boundedNote(note),
      regarding: {
        apiVersion: subject.apiVersion,
        kind: subject.kind,
        name,
        ...(objectNamespace ? { namespace: objectNamespace } : {}),
        ...(subject.metadata?.uid ? { uid: subject.metadata.uid } : {}),
        ...(subject.metadata?.resourceVersion
          ? { resourceVersion: subject.metadata.resourceVersion }
          : {}),
      },
    };
    const object = `${subject.kind ?? ''}/${objectNamespace ?? ''}/${name}`;
    try {
      await this.opts.rest.post(groupPath('events.k8s.io', 'v1', 'events', namespace), body);
      this.opts.metrics?.writesTotal.inc({ kind: 'Event', verb: 'create' });
      this.opts.logger?.info({ object, reason: event.reason, type: event.type }, 'event');
    } catch (err) {
      this.opts.metrics?.writeErrorsTotal.inc({
        kind: 'Event',
        verb: 'create',
        code: String(httpStatusOf(err) ?? 'none'),
      });
      this.opts.logger?.warn(
        { err: errorMessage(err), reason: event.reason, object },
        'emitting an Event failed',
      );
    }
  }
}

/**
 * `note` within the API server's limit, which counts UTF-8 bytes: cut at a character boundary,
 * with an ellipsis that says so (an Event over the limit is refused outright).
 */
function boundedNote(note: string): string {
  if (Buffer.byteLength(note) <= MAX_NOTE_BYTES) return note;
  const ellipsis = '…';
  let budget = MAX_NOTE_BYTES - Buffer.byteLength(ellipsis);
  let out = '';
  for (const ch of note) {
    budget -= Buffer.byteLength(ch);
    if (budget < 0) break;
    out += ch;
  }
  return out + ellipsis;
}
