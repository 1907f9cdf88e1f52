import type { V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import { SEQUENCES_CONFIGMAP } from '@mirrorhub/shared/api/contract';
import { KubeApiError, type RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { createLogger } from '@mirrorhub/shared/kit/runtime/log';
import { SequenceMemory } from './memory.js';
import { ANNOTATION_FORGOTTEN_UP_TO, readMemory } from './sequence.js';

const NS = 'mirrorhub-system';
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 2_000, interval: 1 });
const PATH = `/api/v1/namespaces/${NS}/configmaps/${SEQUENCES_CONFIGMAP}`;

/** The ConfigMap as an API server keeps it: conditional on resourceVersion, 404 and 409. */
class FakeApi {
  stored: V1ConfigMap | undefined;
  private version = 0;
  writes: string[] = [];
  /** Runs before the next write is applied (another writer, a deletion, a refusal). */
  beforeWrite: (() => void) | undefined;
  /** Writes wait for this (a write in flight). */
  hold: Promise<void> | undefined;

  private error(code: number, reason: string): KubeApiError {
    return new KubeApiError(code, { reason, message: reason }, 'fake');
  }

  private store(body: V1ConfigMap): V1ConfigMap {
    this.stored = structuredClone({
      ...body,
      metadata: { ...body.metadata, resourceVersion: String(++this.version) },
    });
    return structuredClone(this.stored);
  }

  /** Another writer's change: bumps the resourceVersion. */
  otherWrites(data: Record<string, string>): void {
    this.store({ ...this.stored, data: { ...this.stored?.data, ...data } });
  }

  private hook(): void {
    const h = this.beforeWrite;
    this.beforeWrite = undefined;
    h?.();
  }

  readonly rest = {
    get: (path: string) => {
      expect(path).toBe(PATH);
      if (!this.stored) return Promise.reject(this.error(404, 'NotFound'));
      return Promise.resolve(structuredClone(this.stored));
    },
    post: async (path: string, body: V1ConfigMap) => {
      expect(path).toBe(`/api/v1/namespaces/${NS}/configmaps`);
      this.writes.push('create');
      await this.hold;
      this.hook();
      if (this.stored) return Promise.reject(this.error(409, 'AlreadyExists'));
      return Promise.resolve(this.store(body));
    },
    put: async (path: string, body: V1ConfigMap) => {
      expect(path).toBe(PATH);
      this.writes.push('update');
      await this.hold;
      this.hook();
      if (!this.stored) return Promise.reject(this.error(404, 'NotFound'));
      if (body.metadata?.resourceVersion !== this.stored.metadata?.resourceVersion) {
        return Promise.reject(this.error(409, 'Conflict'));
      }
      return Promise.resolve(this.store(body));
    },
  };

  data(): Record<string, string> | undefined {
    return this.stored?.data;
  }
}

function setUp(live: (name: string) => boolean = () => true, maxGone?: number) {
  const api = new FakeApi();
  const counted: string[] = [];
  const memory = new SequenceMemory({
    rest: api.rest as unknown as RestClient,
    namespace: NS,
    fieldManager: 'mirrorhub-agent',
    logger: createLogger({ level: 'silent' }),
    metrics: {
      writesTotal: { inc: (l) => counted.push(`${l.kind} ${l.verb}`) },
      writeErrorsTotal: { inc: (l) => counted.push(`${l.kind} ${l.verb} ${l.code}`) },
    },
    live,
    ...(maxGone !== undefined ? { maxGone } : {}),
  });
  return { api, memory, counted };
}

describe('SequenceMemory', () => {
  it('creates the ConfigMap with the first sequence, then updates it; reads it back after a restart', async () => {
    const { api, memory } = setUp();
    expect((await memory.memory()).applied.size).toBe(0);
    await memory.remember('d1', { sequence: 5, uid: 'u1' });
    await memory.remember('d1', { sequence: 6, uid: 'u1' });
    expect(api.writes).toEqual(['create', 'update']);
    expect(api.data()).toEqual({ d1: '6 u1' });
    expect((await memory.memory()).applied.get('d1')).toEqual({ sequence: 6, uid: 'u1' });

    const restarted = new SequenceMemory({
      rest: api.rest as unknown as RestClient,
      namespace: NS,
      fieldManager: 'mirrorhub-agent',
      logger: createLogger({ level: 'silent' }),
      live: () => true,
    });
    expect((await restarted.memory()).applied.get('d1')).toEqual({ sequence: 6, uid: 'u1' });
  });

  it('entries that arrive together share a write; those during a write go together in the next', async () => {
    const { api, memory } = setUp();
    await Promise.all(['d1', 'd2'].map((n) => memory.remember(n, { sequence: 1, uid: 'u' })));
    expect(api.writes).toEqual(['create']);
    let release!: () => void;
    api.hold = new Promise((r) => (release = r));
    const during = memory.remember('d3', { sequence: 2, uid: 'u' });
    await eventually(() => expect(api.writes).toEqual(['create', 'update']));
    const next = ['d4', 'd5', 'd6'].map((n) => memory.remember(n, { sequence: 2, uid: 'u' }));
    release();
    await Promise.all([during, ...next]);
    expect(api.writes).toEqual(['create', 'update', 'update']);
    expect(Object.keys(api.data() ?? {})).toEqual(['d1', 'd2', 'd3', 'd4', 'd5', 'd6']);
  });

  it('another writer in between: read again, and nothing either remembers is lost', async () => {
    const { api, memory, counted } = setUp();
    await memory.remember('d1', { sequence: 5, uid: 'u1' });
    api.beforeWrite = () => api.otherWrites({ d1: '9 u1', d2: '3 u2' });
    await memory.remember('d3', { sequence: 1, uid: 'u3' });
    expect(api.writes).toEqual(['create', 'update', 'update']);
    expect(api.data()).toEqual({ d1: '9 u1', d2: '3 u2', d3: '1 u3' });
    // Every write counted, the conflict too.
    expect(counted).toEqual(['ConfigMap create', 'ConfigMap update 409', 'ConfigMap update']);
  });

  it('the ConfigMap deleted in between: created again with everything remembered', async () => {
    const { api, memory } = setUp();
    await memory.remember('d1', { sequence: 5, uid: 'u1' });
    api.beforeWrite = () => (api.stored = undefined);
    await memory.remember('d2', { sequence: 6, uid: 'u2' });
    expect(api.writes).toEqual(['create', 'update', 'create']);
    expect(api.data()).toEqual({ d1: '5 u1', d2: '6 u2' });
  });

  it('a refused write fails the caller, which then applies nothing, and is not remembered', async () => {
    const { api, memory } = setUp();
    api.rest.post = () =>
      Promise.reject(new KubeApiError(403, { reason: 'Forbidden', message: 'no' }, 'POST'));
    await expect(memory.remember('d1', { sequence: 5, uid: 'u1' })).rejects.toThrow(
      /^writing ConfigMap mirrorhub-system\/mirrorhub-agent-sequences \(the sequences this agent applied\): .*403.*; nothing is applied until it can be written \(the agent chart's RBAC and its admission policy <release>-sequences let the agent's ServiceAccount write it\)$/,
    );
    expect((await memory.memory()).applied.size).toBe(0);
  });

  it('keeps at most maxGone names of deleted deliveries, forgetting the oldest into the bar', async () => {
    const live = new Set(['d-live']);
    const { api, memory } = setUp((n) => live.has(n), 2);
    for (const [n, s] of [
      ['d-live', 1],
      ['g1', 10],
      ['g2', 20],
      ['g3', 30],
    ] as const) {
      await memory.remember(n, { sequence: s, uid: 'u' });
    }
    expect(Object.keys(api.data() ?? {}).sort()).toEqual(['d-live', 'g2', 'g3']);
    expect(api.stored?.metadata?.annotations?.[ANNOTATION_FORGOTTEN_UP_TO]).toBe('10');
    expect(readMemory(api.stored).memory.forgottenUpTo).toBe(10);
  });
});
