// Kubernetes Events (events.k8s.io/v1) about a controller's objects, for `kubectl describe` and
// `kubectl get events`. Best effort: a failed Event is logged at debug and otherwise ignored.
// Callers emit only on transitions, so a steady cluster writes none. Notes carry names and
// API messages, never payload data.

import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { errorMessage } from '../runtime/errors.js';
import { groupPath, microTime, type RestClient } from './rest.js';

export interface EventRegarding {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid?: string | undefined;
}

export type EventType = 'Normal' | 'Warning';

export class EventRecorder {
  constructor(
    private readonly rest: RestClient,
    private readonly controller: string,
    private readonly instance: string,
    private readonly logger?: Logger,
  ) {}

  async record(
    target: EventRegarding,
    type: EventType,
    reason: string,
    action: string,
    note: string,
  ): Promise<void> {
    const now = new Date();
    const body = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: {
        name: `${target.name}.${now.getTime().toString(16)}${randomBytes(2).toString('hex')}`,
        namespace: target.namespace,
      },
      eventTime: microTime(now.getTime()),
      reportingController: this.controller,
      reportingInstance: this.instance.slice(0, 128),
      action: action.slice(0, 128),
      reason: reason.slice(0, 128),
      type,
      note: note.length <= 1024 ? note : `${note.slice(0, 1023)}…`,
      regarding: {
        apiVersion: target.apiVersion,
        kind: target.kind,
        name: target.name,
        namespace: target.namespace,
        ...(target.uid ? { uid: target.uid } : {}),
      },
    };
    try {
      await this.rest.post(groupPath('events.k8s.io', 'v1', 'events', target.namespace), body);
    } catch (err) {
      this.logger?.debug({ err: errorMessage(err), reason }, 'event not recorded');
    }
  }
}
