import { describe, expect, it } from 'vitest';
import type { Lease, LeaseClient } from './leader.js';
import { createManager, type Manager, type ManagerElection, type Runnable } from './manager.js';

/** One Lease in memory, refusing a replace from a stale read (409) as the API server does. */
function memoryLease(): LeaseClient & { holder(): string | undefined } {
  let lease: Lease | undefined;
  let rv = 0;
  const conflict = () => Object.assign(new Error('conflict'), { code: 409 });
  const store = (l: Lease): Lease => {
    lease = JSON.parse(
      JSON.stringify({ ...l, metadata: { ...l.metadata, resourceVersion: String(++rv) } }),
    ) as Lease;
    return lease;
  };
  return {
    get: () => Promise.resolve(lease),
    create: (_ns, l) => (lease ? Promise.reject(conflict()) : Promise.resolve(store(l))),
    replace: (_ns, _name, l) =>
      l.metadata?.resourceVersion === lease?.metadata?.resourceVersion
        ? Promise.resolve(store(l))
        : Promise.reject(conflict()),
    holder: () => lease?.spec?.holderIdentity || undefined,
  };
}

function election(client: LeaseClient, identity: string): ManagerElection {
  return {
    client,
    identity,
    namespace: 'ns',
    name: 'lease',
    leaseDurationMs: 1_500,
    renewDeadlineMs: 1_000,
    retryPeriodMs: 50,
  };
}

/** A runnable that records its calls in `log`; `gate` holds its start until opened. */
function recorder(
  name: string,
  log: string[],
  opts: { leader?: boolean; synced?: () => boolean; gate?: Promise<void> } = {},
): Runnable {
  return {
    name,
    needLeaderElection: opts.leader ?? false,
    async start() {
      log.push(`start ${name}`);
      await opts.gate;
    },
    stop: () => void log.push(`stop ${name}`),
    ...(opts.synced ? { ready: () => opts.synced!() || `${name} not synced` } : {}),
  };
}

async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
}

async function readyz(m: Manager): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${m.port}/readyz?verbose`);
  return { status: res.status, body: await res.text() };
}

describe('Manager', () => {
  it('starts the always runnables in order, then the leader-only ones; stops them last first', async () => {
    const log: string[] = [];
    const m = createManager()
      .add(recorder('caches', log))
      .add(recorder('hash key', log, { leader: true }))
      .add(recorder('controllers', log, { leader: true }))
      .add(recorder('dashboard', log));
    await m.start();
    await m.settled;
    expect(m.isLeader()).toBe(true); // one replica: no election, always leading
    await m.stop();
    expect(log).toEqual([
      'start caches',
      'start dashboard',
      'start hash key',
      'start controllers',
      'stop controllers',
      'stop hash key',
      'stop dashboard',
      'stop caches',
    ]);
  });

  it('is ready once the always runnables have synced, and the leader-only ones while it leads', async () => {
    let cachesSynced = false;
    let controllersSynced = false;
    const m = createManager({
      health: { port: 0, host: '127.0.0.1' },
      readinessChecks: { extra: () => true },
    })
      .add(recorder('caches', [], { synced: () => cachesSynced }))
      .add(recorder('controllers', [], { leader: true, synced: () => controllersSynced }));
    try {
      await m.start();
      await m.settled;
      expect(await readyz(m)).toEqual({
        status: 503,
        body: '[+]extra ok\n[-]caches failed: caches not synced\nreadyz check failed\n',
      });
      cachesSynced = true;
      expect((await readyz(m)).body).toContain('[-]caches failed: controllers not synced');
      controllersSynced = true;
      expect(await readyz(m)).toEqual({ status: 200, body: '[+]extra ok\n[+]caches ok\nok\n' });
    } finally {
      await m.stop();
    }
  });

  it('runs one election: the standby starts only its always runnables, and leads when the leader stops', async () => {
    const lease = memoryLease();
    const log: string[] = [];
    const manager = (id: string) =>
      createManager({
        leaderElection: election(lease, id),
        health: { port: 0, host: '127.0.0.1' },
      })
        .add(recorder(`${id} caches`, log))
        .add(recorder(`${id} controllers`, log, { leader: true, synced: () => false }));
    const a = manager('a');
    const b = manager('b');
    try {
      await a.start();
      await a.settled;
      expect(a.isLeader()).toBe(true);
      await b.start();
      await b.settled; // standing by behind a
      expect(b.isLeader()).toBe(false);
      expect(log).toEqual(['start a caches', 'start a controllers', 'start b caches']);
      // A standby has nothing to sync; the leader waits for its controllers.
      expect(await readyz(b)).toMatchObject({ status: 200 });
      expect((await readyz(a)).body).toContain('[-]caches failed: a controllers not synced');

      await a.stop();
      expect(log.slice(3, 5)).toEqual(['stop a controllers', 'stop a caches']);
      await eventually(() => b.isLeader() && log.includes('start b controllers'));
      expect(lease.holder()).toBe('b');
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it("lets a second manager of the process lead in the first one's terms, on its Lease", async () => {
    const lease = memoryLease();
    const log: string[] = [];
    const hub = createManager({ leaderElection: election(lease, 'pod-0') }).add(
      recorder('hub controllers', log, { leader: true }),
    );
    const agent = createManager({ leaderElection: { follow: hub } })
      .add(recorder('agent caches', log))
      .add(recorder('agent controllers', log, { leader: true }));
    try {
      await Promise.all([agent.start(), hub.start()]);
      await hub.settled;
      await eventually(() => log.includes('start agent controllers'));
      expect(agent.isLeader()).toBe(true);
      expect(lease.holder()).toBe('pod-0');
      await hub.stop(); // the term ends for both halves; the agent's caches stay
      expect(log).toContain('stop agent controllers');
      expect(log).not.toContain('stop agent caches');
      expect(agent.isLeader()).toBe(false);
      expect(lease.holder()).toBeUndefined(); // released after both halves stopped
    } finally {
      await hub.stop();
      await agent.stop();
    }
    expect(log.at(-1)).toBe('stop agent caches');
  });

  it('ends a start still waiting for caches when stopped', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const log: string[] = [];
    const m = createManager().add({
      ...recorder('caches', log, { gate }),
      stop: () => {
        log.push('stop caches');
        release();
      },
    });
    const started = m.start();
    await eventually(() => log.includes('start caches'));
    await m.stop();
    await started;
    expect(log).toEqual(['start caches', 'stop caches']);
  });

  it('ends the term when a leader-only runnable fails after it started, and leads again', async () => {
    const lease = memoryLease();
    let terms = 0;
    let failNow: ((err: unknown) => void) | undefined;
    const m = createManager({ leaderElection: election(lease, 'a') }).add({
      name: 'controllers',
      needLeaderElection: true,
      start: (_signal, fail) => {
        terms++;
        failNow = fail;
      },
      stop() {},
    });
    try {
      await m.start();
      await m.settled;
      expect(terms).toBe(1);
      failNow?.(new Error('reconciles stopped'));
      await eventually(() => terms === 2 && m.isLeader());
    } finally {
      await m.stop();
    }
  });

  it('begins a new term only once the last one stopped everything, however long that takes', async () => {
    // A leader that cannot renew steps down, and its elector waits for the term's work only up
    // to renewDeadline (1 s here) before it campaigns again. Had the next term started
    // meanwhile, the old term's stops would stop what the new one started: the hub's peers
    // keep one current controller each (seen at 250 followers under load).
    const lease = memoryLease();
    let down = false;
    const flaky: LeaseClient = {
      get: (ns, name) => lease.get(ns, name),
      create: (ns, l) => lease.create(ns, l),
      replace: (ns, name, l) =>
        down ? Promise.reject(new Error('timeout')) : lease.replace(ns, name, l),
    };
    const log: string[] = [];
    const m = createManager({ leaderElection: election(flaky, 'a') }).add({
      name: 'controllers',
      needLeaderElection: true,
      start: () => void log.push('start'),
      async stop() {
        log.push('stopping');
        down = false; // the API server answers again; the elector may lead at once
        await new Promise((r) => setTimeout(r, 2_000));
        log.push('stopped');
      },
    });
    try {
      await m.start();
      await m.settled;
      down = true;
      await eventually(() => log.length === 4);
      expect(log).toEqual(['start', 'stopping', 'stopped', 'start']);
      await eventually(() => m.isLeader());
    } finally {
      await m.stop();
    }
  });

  it("begins a new term for both when the follower's leader-only work fails", async () => {
    const lease = memoryLease();
    const log: string[] = [];
    let failAgent: ((err: unknown) => void) | undefined;
    const hub = createManager({ leaderElection: election(lease, 'pod-0') }).add(
      recorder('hub controllers', log, { leader: true }),
    );
    const agent = createManager({ leaderElection: { follow: hub } }).add({
      name: 'agent controllers',
      needLeaderElection: true,
      start: (_signal, fail) => {
        log.push('start agent controllers');
        failAgent = fail;
      },
      stop: () => void log.push('stop agent controllers'),
    });
    try {
      await agent.start();
      await hub.start();
      await eventually(() => failAgent !== undefined);
      failAgent?.(new Error('reconciles stopped'));
      const starts = (name: string) => log.filter((l) => l === `start ${name}`).length;
      await eventually(() => starts('hub controllers') === 2 && starts('agent controllers') === 2);
      // The halves start side by side; the failure stopped both before the second term.
      expect(log.slice(0, 4).sort()).toEqual([
        'start agent controllers',
        'start hub controllers',
        'stop agent controllers',
        'stop hub controllers',
      ]);
    } finally {
      await hub.stop();
      await agent.stop();
    }
  });
});
