import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { FakeClock, settle } from '../../testing/fake.js';
import {
  LeaderElector,
  type Lease,
  type LeaseClient,
  type LeaderElectionOptions,
} from './leader.js';

class ApiError extends Error {
  constructor(readonly code: number) {
    super(`HTTP ${code}`);
  }
}

/** An in-memory Lease store with resourceVersion checks, like the API server. */
class MemoryLeases implements LeaseClient {
  lease: Lease | undefined;
  private rv = 1;
  down = false;
  writes: string[] = [];
  /** With a clock: when each call was made, as `<ms> <call>` (failed ones too). */
  calls: string[] = [];

  constructor(private readonly clock?: FakeClock) {}

  private note(call: string): void {
    if (this.clock) this.calls.push(`${this.clock.now()} ${call}${this.down ? ' (down)' : ''}`);
  }

  async get(): Promise<Lease | undefined> {
    this.note('get');
    await Promise.resolve();
    if (this.down) throw new ApiError(503);
    return this.lease ? this.roundTrip(this.lease) : undefined;
  }
  async create(_ns: string, lease: Lease): Promise<Lease> {
    this.note(`create ${lease.spec?.holderIdentity}`);
    await Promise.resolve();
    if (this.down) throw new ApiError(503);
    if (this.lease) throw new ApiError(409);
    this.lease = this.roundTrip({
      ...lease,
      metadata: { ...lease.metadata, resourceVersion: String(++this.rv) },
    });
    this.writes.push(`create ${lease.spec?.holderIdentity}`);
    return this.roundTrip(this.lease);
  }
  async replace(_ns: string, _name: string, lease: Lease): Promise<Lease> {
    this.note(`replace ${lease.spec?.holderIdentity || '<released>'}`);
    await Promise.resolve();
    if (this.down) throw new ApiError(503);
    if (lease.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion)
      throw new ApiError(409);
    this.lease = this.roundTrip({
      ...lease,
      metadata: { ...lease.metadata, resourceVersion: String(++this.rv) },
    });
    this.writes.push(`replace ${lease.spec?.holderIdentity || '<released>'}`);
    return this.roundTrip(this.lease);
  }
  /** JSON round trip, as over the wire: MicroTimes become strings. */
  private roundTrip(l: Lease): Lease {
    return JSON.parse(JSON.stringify(l)) as Lease;
  }
}

function elector(
  id: string,
  client: LeaseClient,
  clock: FakeClock,
  log: string[],
  over: Partial<LeaderElectionOptions> = {},
) {
  return new LeaderElector({
    namespace: 'mirrorhub-system',
    name: 'mirrorhub-hub',
    identity: id,
    client,
    clock,
    random: () => 0,
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    onStartedLeading: (signal) => {
      log.push(`${clock.now()} ${id} started`);
      signal.addEventListener('abort', () => log.push(`${clock.now()} ${id} signal aborted`));
    },
    onStoppedLeading: () => log.push(`${clock.now()} ${id} stopped`),
    ...over,
  });
}

describe('LeaderElector', () => {
  it('elects one leader; the standby waits while it renews', async () => {
    const clock = new FakeClock(0);
    const leases = new MemoryLeases();
    const log: string[] = [];
    // client-go's cadence: the leader renews every retryPeriod.
    const a = elector('a', leases, clock, log, { renewPeriodMs: 2_000 }).start();
    await settle();
    const b = elector('b', leases, clock, log).start();
    await settle();
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    expect(b.leader).toBe('a');
    await clock.advance(60_000);
    expect(b.isLeader()).toBe(false);
    expect(leases.lease?.spec?.holderIdentity).toBe('a');
    expect(leases.writes.filter((w) => w === 'replace a').length).toBeGreaterThanOrEqual(25); // renews every 2 s
    expect(log).toEqual(['0 a started']);
    expect(a.check()).toMatchObject({ ok: true, message: 'leader' });
    expect(b.check()).toMatchObject({ ok: true });
    // MicroTime precision on the wire
    expect(String(leases.lease?.spec?.renewTime)).toMatch(/\.\d{6}Z$/);
    await b.stop();
    await a.stop();
  });

  it('releases on stop so a standby takes over within one retry period', async () => {
    const clock = new FakeClock(0);
    const leases = new MemoryLeases();
    const log: string[] = [];
    const a = elector('a', leases, clock, log).start();
    await settle();
    const b = elector('b', leases, clock, log).start();
    await clock.advance(5_000);
    await a.stop();
    expect(log).toEqual(['0 a started', '5000 a signal aborted', '5000 a stopped']);
    expect(leases.lease?.spec?.holderIdentity).toBe('');
    await clock.advance(2_000);
    expect(b.isLeader()).toBe(true);
    expect(leases.lease?.spec?.leaseTransitions).toBe(1);
    expect(log.at(-1)).toMatch(/^(6000|7000) b started$/);
    await b.stop();
  });

  it('takes over an abandoned (not released) lease only after leaseDuration', async () => {
    const clock = new FakeClock(0);
    const leases = new MemoryLeases();
    const log: string[] = [];
    const a = elector('a', leases, clock, log, { releaseOnStop: false }).start();
    await settle();
    const b = elector('b', leases, clock, log).start();
    await settle();
    await a.stop(); // like a crash: lease still names 'a'
    await clock.advance(14_000);
    expect(b.isLeader()).toBe(false);
    await clock.advance(4_000);
    expect(b.isLeader()).toBe(true);
    await b.stop();
  });

  it('steps down after renewDeadline without the API, before anyone else can lead', async () => {
    const clock = new FakeClock(0);
    const leases = new MemoryLeases();
    const log: string[] = [];
    const a = elector('a', leases, clock, log).start();
    await settle();
    await clock.advance(4_000); // renewed at 0; the next renewal is due at 5000
    leases.down = true;
    await clock.advance(20_000);
    expect(a.isLeader()).toBe(false);
    const stoppedAt = Number(log.find((l) => l.endsWith('a stopped'))?.split(' ')[0]);
    expect(stoppedAt).toBeGreaterThan(4_000);
    expect(stoppedAt).toBeLessThanOrEqual(4_000 + 10_000);
    // a standby arriving now could only win at >= 4000 + 15000: after 'a' stepped down
    leases.down = false;
    await clock.advance(4_000);
    expect(a.isLeader()).toBe(true); // nobody else took it: 'a' leads again
    await a.stop();
  });

  it('lets only one of two racing candidates win (409 on the stale resourceVersion)', async () => {
    const clock = new FakeClock(0);
    const leases = new MemoryLeases();
    const log: string[] = [];
    const a = elector('a', leases, clock, log);
    const b = elector('b', leases, clock, log);
    a.start();
    b.start();
    await settle();
    await clock.advance(10_000);
    expect([a.isLeader(), b.isLeader()].filter(Boolean)).toHaveLength(1);
    expect(log.filter((l) => l.endsWith('started'))).toHaveLength(1);
    await a.stop();
    await b.stop();
  });

  it('steps down (and releases) when the leader work fails', async () => {
    const clock = new FakeClock(0);
    const leases = new MemoryLeases();
    const log: string[] = [];
    const a = elector('a', leases, clock, log, {
      onStartedLeading: async () => {
        throw new Error('controller crashed');
      },
    }).start();
    await settle();
    await clock.advance(2_000);
    expect(leases.writes).toContain('replace <released>');
    await a.stop();
  });

  it('steps down when the leader work fails without waiting for the next renewal', async () => {
    const clock = new FakeClock(0);
    const leases = new MemoryLeases(clock);
    const log: string[] = [];
    const a = elector('a', leases, clock, log, {
      onStartedLeading: async () => {
        await Promise.resolve();
        log.push(`${clock.now()} a failed`);
        throw new Error('controller crashed');
      },
    }).start();
    await clock.advance(1_000);
    expect(log.slice(0, 2)).toEqual(['0 a failed', '0 a stopped']);
    expect(leases.calls.filter((c) => c.includes('replace'))[0]).toBe('0 replace <released>');
    await a.stop();
  });

  it.each([
    { leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
    { leaseDurationMs: 15_000, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 },
    { leaseDurationMs: 500, renewDeadlineMs: 300, retryPeriodMs: 100 },
  ])('rejects inconsistent timings %o', (t) => {
    expect(() => elector('a', new MemoryLeases(), new FakeClock(), [], t)).toThrow();
  });

  it.each([
    {
      renewPeriodMs: 8_000,
      error:
        'leader election: renewPeriod (8000 ms) + retryPeriod (2000 ms) must be less than renewDeadline (10000 ms), so that a failed renewal is retried at least once before the leader steps down: lower renewPeriodMs below 8000 ms, or raise renewDeadlineMs above 10000 ms (keeping it below leaseDuration)',
    },
    {
      renewPeriodMs: 1_000,
      error:
        'leader election: renewPeriod (1000 ms) must be at least retryPeriod (2000 ms): raise renewPeriodMs to 2000 or more, or leave it unset (default: a third of leaseDuration)',
    },
  ])('rejects renewPeriodMs $renewPeriodMs, saying what to change', ({ renewPeriodMs, error }) => {
    expect(() => elector('a', new MemoryLeases(), new FakeClock(), [], { renewPeriodMs })).toThrow(
      error,
    );
  });

  /** Lease writes by the leader `a` in the minute after it took the Lease, alone or watched. */
  async function writesInAMinute(over: Partial<LeaderElectionOptions>): Promise<number> {
    const clock = new FakeClock(0);
    const leases = new MemoryLeases();
    const log: string[] = [];
    const a = elector('a', leases, clock, log, over).start();
    await settle();
    const b = elector('b', leases, clock, log, over).start();
    await settle();
    expect(leases.writes).toEqual(['create a']);
    await clock.advance(60_000);
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false); // the standby saw the record change often enough
    expect(log).toEqual(['0 a started']);
    await b.stop();
    await a.stop();
    return leases.writes.filter((w) => w === 'replace a').length;
  }

  it.each([
    { timings: {}, perMinute: 12 }, // the default: a third of the 15 s lease
    { timings: { renewPeriodMs: 2_000 }, perMinute: 30 }, // client-go's: every retryPeriod
    { timings: { renewPeriodMs: 7_500 }, perMinute: 8 },
    {
      timings: { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 5_000 },
      perMinute: 3, // every 20 s
    },
  ])('at idle, renews $perMinute times a minute with $timings', async ({ timings, perMinute }) => {
    expect(await writesInAMinute(timings)).toBe(perMinute);
  });

  it('keeps renewing every retryPeriod where renewDeadline leaves no room for a retry', async () => {
    // client-go accepts renewDeadline 3 s with retryPeriod 2 s; renewing less often would leave
    // a failed renewal no retry, so the default stays at retryPeriod for such timings.
    expect(await writesInAMinute({ renewDeadlineMs: 3_000 })).toBe(30);
  });

  it('retries a failed renewal every retryPeriod, steps down at renewDeadline, and renews on schedule again', async () => {
    const clock = new FakeClock(0);
    const leases = new MemoryLeases(clock);
    const log: string[] = [];
    const a = elector('a', leases, clock, log).start();
    await settle();
    await clock.advance(6_000); // renewed at 5000
    leases.down = true;
    await clock.advance(3_000);
    expect(a.isLeader()).toBe(true);
    // Back before the deadline (5000 + 10000): the retry at 14000 renews, the next is due 5 s on.
    await clock.advance(4_500); // 13500
    leases.down = false;
    await clock.advance(6_000); // 19500
    expect(a.isLeader()).toBe(true);
    expect(leases.calls.filter((c) => !c.endsWith(' get'))).toEqual([
      '0 create a',
      '5000 replace a',
      '10000 get (down)', // due 5 s after the last renewal: fails
      '12000 get (down)', // retried every retryPeriod
      '14000 replace a', // renewed before the deadline
      '19000 replace a',
    ]);
    // Down for good: retries every 2 s from the renewal due at 24000, then it steps down once
    // 10 s have passed since its last renewal (19000), before a standby could take over
    // (19000 + 15000 on the standby's clock at the earliest).
    leases.calls.length = 0;
    leases.down = true;
    await clock.advance(15_000); // 34500
    expect(a.isLeader()).toBe(false);
    expect(leases.calls.filter((c) => Number(c.split(' ')[0]) < 29_000)).toEqual([
      '24000 get (down)',
      '26000 get (down)',
      '28000 get (down)',
    ]);
    expect(log).toEqual(['0 a started', '29000 a signal aborted', '29000 a stopped']);
    await a.stop();
  });

  it.each([{ renewPeriodMs: 2_000 }, { renewPeriodMs: 5_000 }, {}])(
    'a standby takes over an abandoned Lease leaseDuration after its last renewal, as before (%o)',
    async (timings) => {
      for (const crashAt of [11_000, 12_500, 14_900]) {
        const clock = new FakeClock(0);
        const leases = new MemoryLeases(clock);
        const log: string[] = [];
        const a = elector('a', leases, clock, log, { ...timings, releaseOnStop: false }).start();
        await settle();
        const b = elector('b', leases, clock, log, timings).start();
        await clock.advance(crashAt);
        await a.stop(); // like a crash: the Lease still names 'a'
        const lastRenewal = Number(
          leases.calls
            .filter((c) => c.endsWith('a'))
            .at(-1)
            ?.split(' ')[0],
        );
        await clock.advance(30_000);
        expect(b.isLeader()).toBe(true);
        const tookOver = Number(leases.calls.find((c) => c.endsWith('replace b'))?.split(' ')[0]);
        // Never before leaseDuration after the last renewal it saw; within one more retry period.
        expect(tookOver - lastRenewal).toBeGreaterThanOrEqual(15_000);
        expect(tookOver - lastRenewal).toBeLessThanOrEqual(15_000 + 2_000);
        // So from the crash, never later than with client-go's cadence.
        expect(tookOver - crashAt).toBeLessThanOrEqual(15_000 + 2_000);
        await b.stop();
      }
    },
  );
});

/**
 * The Lease over HTTP the way the API server answers: 404 until created, 409 AlreadyExists on a
 * second create, 409 Conflict on a replace with a stale resourceVersion.
 */
async function leaseServer() {
  let lease: Lease | undefined;
  let rv = 100;
  const calls: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      calls.push(`${req.method} ${req.url}`);
      const send = (code: number, obj: unknown) => {
        res.writeHead(code, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(obj));
      };
      const status = (code: number, reason: string) =>
        send(code, { kind: 'Status', code, reason, message: reason });
      const sent = body ? (JSON.parse(body) as Lease) : undefined;
      if (req.method === 'GET') return lease ? send(200, lease) : status(404, 'NotFound');
      if (req.method === 'POST') {
        if (lease) return status(409, 'AlreadyExists');
        lease = { ...sent, metadata: { ...sent?.metadata, resourceVersion: String(++rv) } };
        return send(201, lease);
      }
      if (req.method === 'PUT') {
        if (sent?.metadata?.resourceVersion !== lease?.metadata?.resourceVersion)
          return status(409, 'Conflict');
        lease = { ...sent, metadata: { ...sent?.metadata, resourceVersion: String(++rv) } };
        return send(200, lease);
      }
      status(405, 'MethodNotAllowed');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    access: {
      getCurrentCluster: () => ({ server: url }),
      applyToHTTPSOptions: () => Promise.resolve(),
    },
    calls,
    lease: () => lease,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('LeaderElector over the REST client (a KubeAccess, no client-node)', () => {
  it('creates, renews with the resourceVersion it read, and releases the Lease', async () => {
    const api = await leaseServer();
    const started: string[] = [];
    const a = new LeaderElector({
      namespace: 'ns',
      name: 'hub',
      identity: 'a',
      kubeConfig: api.access,
      leaseDurationMs: 1_000,
      renewDeadlineMs: 600,
      retryPeriodMs: 100,
      onStartedLeading: () => void started.push('a'),
    }).start();
    try {
      const deadline = Date.now() + 5_000;
      while (!api.calls.some((c) => c.startsWith('PUT')) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(a.isLeader()).toBe(true);
      expect(started).toEqual(['a']);
      const path = '/apis/coordination.k8s.io/v1/namespaces/ns/leases';
      expect(api.calls.slice(0, 4)).toEqual([
        `GET ${path}/hub`,
        `POST ${path}`,
        `GET ${path}/hub`,
        `PUT ${path}/hub`,
      ]);
      expect(api.lease()?.spec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 1 });
      expect(api.lease()?.spec?.renewTime).toMatch(/\.\d{6}Z$/);
    } finally {
      await a.stop();
      await api.close();
    }
    expect(api.lease()?.spec?.holderIdentity).toBe('');
  });
});
