import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';

import { startMoto } from '@mirrorhub/infra/aws/moto';
import { ensureKubeBinaries, KitError, startKit } from '@mirrorhub/infra/kit/index';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const cli = join(root, 'infra/dist/cli.js');

/** Runs `fn` with PATH reduced to directories that do not hold `tool`. */
async function withoutOnPath<T>(tool: string, fn: () => Promise<T>): Promise<T> {
  const saved = process.env.PATH;
  process.env.PATH = (saved ?? '')
    .split(':')
    .filter((d) => d && !existsSync(join(d, tool)))
    .join(':');
  try {
    return await fn();
  } finally {
    process.env.PATH = saved;
  }
}

async function kitCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { cwd: root });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('kit input errors are one line that says what to do', () => {
  let busy: Server;
  let busyPort: number;

  beforeAll(async () => {
    busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    busyPort = (busy.address() as { port: number }).port;
    if (!existsSync(cli)) await run('npx', ['tsc', '-b', 'infra'], { cwd: root });
  });

  afterAll(() => busy.close());

  it.each([
    ['an invalid cluster name', ['Hub_1'], /^invalid cluster name "Hub_1": use lowercase letters/],
    ['a duplicate cluster', ['hub', 'hub'], /^cluster "hub" is named twice$/],
    ['no cluster at all', [], /^no clusters given/],
  ])('refuses %s', async (_what, clusters, message) => {
    const err = await startKit({ clusters, aws: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KitError);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain('\n');
  });

  it('names the port that is in use and how to free it', async () => {
    const err = await startKit({ clusters: ['hub'], aws: false, portBase: busyPort }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KitError);
    expect((err as Error).message).toBe(
      `port ${busyPort} for cluster hub is already in use: stop what listens there (ss -ltnp 'sport = :${busyPort}') or pick another --port-base`,
    );
  });

  it('says how to get Go when the binaries must be built and go is missing', async () => {
    const saved = process.env.MIRRORHUB_CACHE;
    const empty = await mkdtemp(join(tmpdir(), 'mirrorhub-empty-cache-'));
    process.env.MIRRORHUB_CACHE = empty;
    try {
      const err = await withoutOnPath('go', () => ensureKubeBinaries()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KitError);
      expect((err as Error).message).toMatch(
        /^go not found on PATH: install Go >= 1\.24 .* or set MIRRORHUB_KUBE_BIN/,
      );
    } finally {
      if (saved === undefined) delete process.env.MIRRORHUB_CACHE;
      else process.env.MIRRORHUB_CACHE = saved;
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('says how to get moto when no venv can be made and moto_server is missing', async () => {
    // moto comes from a venv in the cache (infra/src/components/moto.ts): with an empty cache,
    // no python3 and no moto_server on PATH, there is no way to get it.
    const saved = { ...process.env };
    const empty = await mkdtemp(join(tmpdir(), 'mirrorhub-empty-cache-'));
    process.env.MIRRORHUB_CACHE = empty;
    delete process.env.MIRRORHUB_MOTO;
    delete process.env.MIRRORHUB_PYTHON;
    try {
      const err = await withoutOnPath('python3', () =>
        withoutOnPath('moto_server', () => startMoto()),
      ).catch((e: unknown) => e);
      expect((err as Error).message).toBe(
        'python3 not found on PATH: moto 5.2.1 is installed into a venv, so install Python >= 3.9 with its venv module (Debian/Ubuntu: apt-get install python3 python3-venv) or set MIRRORHUB_MOTO to a moto_server (moto 5.2.1)',
      );
    } finally {
      for (const k of ['PATH', 'MIRRORHUB_CACHE', 'MIRRORHUB_MOTO', 'MIRRORHUB_PYTHON']) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('CLI: unknown cluster, unknown command and bad --port-base exit non-zero with one line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mirrorhub-kit-cli-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const noKit = await kitCli(['kubeconfig', 'nope', '--dir', dir]);
    expect(noKit.code).toBe(1);
    expect(noKit.stderr.trim()).toBe(
      `kit: no kit running in ${dir}: start one with \`pnpm kit up\``,
    );

    const badPort = await kitCli(['up', '--port-base', 'abc', '--dir', dir]);
    expect(badPort.code).toBe(1);
    expect(badPort.stderr.trim()).toBe(
      'kit: --port-base must be a port number between 1024 and 65000, got "abc"',
    );

    const badName = await kitCli(['up', '--clusters', 'hub,Bad', '--dir', dir]);
    expect(badName.stderr.trim()).toMatch(/^kit: invalid cluster name "Bad"/);

    const unknown = await kitCli(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toMatch(/^usage: kit up/);
  });
});

describe('kit CLI up/status/kubeconfig/down', () => {
  it('keeps a kit running in the background and stops it with nothing left over', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mirrorhub-kit-cli-'));
    // A failed assertion below must not leave the supervisor and its clusters running: `down` is
    // idempotent, so this runs whether or not the test got to its own `down`.
    onTestFinished(async () => {
      await kitCli(['down', '--dir', dir]);
      await rm(dir, { recursive: true, force: true });
    });
    const up = await kitCli(['up', '--clusters', 'hub,follower-a', '--dir', dir]);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toMatch(/^hub +https:\/\/127\.0\.0\.1:\d+ +account 111111111111/m);
    expect(up.stdout).toMatch(/^follower-a +https:\/\/127\.0\.0\.1:\d+ +account 222222222222/m);

    const again = await kitCli(['up', '--clusters', 'hub,follower-a', '--dir', dir]);
    expect(again.stdout).toMatch(/^kit already up/);

    const status = await kitCli(['status', '--dir', dir]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^kit ready in /);

    const kc = await kitCli(['kubeconfig', 'follower-a', '--dir', dir]);
    expect(kc.stdout.trim()).toBe(join(dir, 'follower-a', 'kubeconfig'));
    const unknown = await kitCli(['kubeconfig', 'follower-z', '--dir', dir]);
    expect(unknown.stderr.trim()).toBe(
      'kit: unknown cluster "follower-z": this kit has hub, follower-a',
    );

    // The kubeconfig works with the kit's own kubectl, as the demo tells people to use it.
    const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as {
      kubectl: string;
      aws: object;
    };
    const { stdout: ns } = await run(state.kubectl, [
      '--kubeconfig',
      kc.stdout.trim(),
      'get',
      'namespace',
      'default',
      '-o',
      'name',
    ]);
    expect(ns.trim()).toBe('namespace/default');
    expect(state.aws).toMatchObject({
      sts: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      eks: expect.stringMatching(/^http/),
    });

    const down = await kitCli(['down', '--dir', dir]);
    expect(down.stdout.trim()).toBe(`kit in ${dir} stopped`);
    const after = await kitCli(['status', '--dir', dir]);
    expect(after.code).toBe(1);
    await rm(dir, { recursive: true, force: true });
    const { stdout: ps } = await run('ps', ['-eo', 'args=']);
    expect(ps.split('\n').filter((l) => l.includes(dir))).toEqual([]);
  });
});
