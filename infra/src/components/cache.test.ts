import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  binaryDir,
  cacheDir,
  ensureBinary,
  findFreePort,
  isPortFree,
  lastLine,
  runCapture,
  runLogged,
  startService,
  waitFor,
  which,
} from './cache.js';

let scratch: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  scratch = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-cache-test-'));
});
afterAll(async () => {
  await fs.rm(scratch, { recursive: true, force: true });
});
afterEach(() => {
  process.env = { ...savedEnv };
  vi.restoreAllMocks();
});

function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

async function until(fn: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('cacheDir', () => {
  it('prefers MIRRORHUB_CACHE, then XDG_CACHE_HOME, then ~/.cache', () => {
    process.env.MIRRORHUB_CACHE = '/x/mh';
    process.env.XDG_CACHE_HOME = '/x/xdg';
    expect(cacheDir()).toBe('/x/mh');
    delete process.env.MIRRORHUB_CACHE;
    expect(cacheDir()).toBe('/x/xdg/mirrorhub');
    delete process.env.XDG_CACHE_HOME;
    expect(cacheDir()).toBe(path.join(homedir(), '.cache', 'mirrorhub'));
    process.env.MIRRORHUB_CACHE = '/x/mh';
    expect(binaryDir('helm', '3.17.4')).toBe('/x/mh/bin/helm-v3.17.4');
    expect(binaryDir('helm', 'v3.17.4')).toBe('/x/mh/bin/helm-v3.17.4');
  });
});

describe('ensureBinary', () => {
  const fakeBuild =
    (calls: { n: number }, delayMs = 0) =>
    async (dir: string) => {
      calls.n++;
      await new Promise((r) => setTimeout(r, delayMs));
      await fs.writeFile(path.join(dir, 'tool'), '#!/bin/sh\necho tool\n', { mode: 0o755 });
    };

  it('builds once into the versioned folder and reuses it, even when asked concurrently', async () => {
    process.env.MIRRORHUB_CACHE = path.join(scratch, 'c1');
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    const calls = { n: 0 };
    const opts = { name: 'tool', version: '1.2.3', build: fakeBuild(calls, 300) };
    const [a, b] = await Promise.all([ensureBinary(opts), ensureBinary(opts)]);
    expect(a).toBe(path.join(scratch, 'c1', 'bin', 'tool-v1.2.3', 'tool'));
    expect(b).toBe(a);
    expect(await ensureBinary(opts)).toBe(a);
    expect(calls.n).toBe(1);
    expect(existsSync(`${path.dirname(a)}.lock`)).toBe(false);
  });

  it('uses the env var when set and refuses one that is not executable, in one line', async () => {
    process.env.MIRRORHUB_CACHE = path.join(scratch, 'c2');
    const calls = { n: 0 };
    process.env.MIRRORHUB_TOOL = '/bin/sh';
    const opts = { name: 'tool', version: '1', envVar: 'MIRRORHUB_TOOL', build: fakeBuild(calls) };
    expect(await ensureBinary(opts)).toBe('/bin/sh');
    process.env.MIRRORHUB_TOOL = path.join(scratch, 'missing');
    const err = await ensureBinary(opts).catch((e: Error) => e);
    expect(String(err)).toMatch(
      /MIRRORHUB_TOOL=.*missing is not an executable file: point it at a tool binary or unset it/,
    );
    expect(String(err)).not.toContain('\n');
    expect(calls.n).toBe(0);
  });

  it('cleans up after a failed build and retries on the next call', async () => {
    process.env.MIRRORHUB_CACHE = path.join(scratch, 'c3');
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    let fail = true;
    const calls = { n: 0 };
    const ok = fakeBuild(calls);
    const opts = {
      name: 'tool',
      version: '2',
      build: async (dir: string) => {
        if (fail) {
          await fs.writeFile(path.join(dir, 'half'), '');
          throw new Error('compiler exploded: install a better one');
        }
        await ok(dir);
      },
    };
    await expect(ensureBinary(opts)).rejects.toThrow('compiler exploded');
    expect(existsSync(binaryDir('tool', '2'))).toBe(false);
    fail = false;
    expect(await ensureBinary(opts)).toBe(path.join(binaryDir('tool', '2'), 'tool'));
  });

  it('says so when the build produced no binary', async () => {
    process.env.MIRRORHUB_CACHE = path.join(scratch, 'c4');
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    const err = await ensureBinary({
      name: 'tool',
      version: '3',
      envVar: 'X_TOOL',
      build: async () => {},
    }).catch((e: Error) => e);
    expect(String(err)).toMatch(
      /finished but .*tool-v3\/tool is missing or not executable: delete .* and retry, or set X_TOOL/,
    );
  });

  it('takes over a lock left by a dead process', async () => {
    process.env.MIRRORHUB_CACHE = path.join(scratch, 'c5');
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    const dead = spawn('true');
    await new Promise((r) => dead.once('exit', r));
    await fs.mkdir(path.join(scratch, 'c5', 'bin'), { recursive: true });
    const lock = `${binaryDir('tool', '4')}.lock`;
    await fs.writeFile(
      lock,
      JSON.stringify({ pid: dead.pid, host: (await import('node:os')).hostname(), since: '' }),
    );
    const calls = { n: 0 };
    await ensureBinary({ name: 'tool', version: '4', build: fakeBuild(calls) });
    expect(calls.n).toBe(1);
    expect(existsSync(lock)).toBe(false);
  });
});

describe('ports and waiting', () => {
  it('finds a free loopback port and tells a taken one apart', async () => {
    const port = await findFreePort();
    expect(port).toBeGreaterThan(0);
    expect(await isPortFree(port)).toBe(true);
    const server = createServer();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    try {
      expect(await isPortFree(port)).toBe(false);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('waitFor returns the first truthy value', async () => {
    let n = 0;
    const value = await waitFor(() => (++n >= 3 ? `ok-${n}` : undefined), {
      timeoutMs: 2_000,
      what: 'x',
      intervalMs: 5,
    });
    expect(value).toBe('ok-3');
  });

  it('waitFor times out with what it waited for and the last error', async () => {
    const err = await waitFor(
      () => {
        throw new Error('connection refused\nsecond line');
      },
      { timeoutMs: 100, intervalMs: 10, what: 'the thing to answer', hint: 'see /tmp/log' },
    ).catch((e: Error) => e);
    expect(String(err)).toBe(
      'Error: timed out after 0s waiting for the thing to answer; last error: second line; see /tmp/log',
    );
  });

  it('waitFor stops at once when abort says so', async () => {
    const started = Date.now();
    await expect(
      waitFor(() => false, { timeoutMs: 10_000, what: 'x', abort: () => 'it died: see log' }),
    ).rejects.toThrow('it died: see log');
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('commands', () => {
  it('runLogged appends output to the log and fails in one line with the log path', async () => {
    const log = path.join(scratch, 'run.log');
    await runLogged('sh', ['-c', 'echo hello'], { logFile: log });
    expect(await fs.readFile(log, 'utf8')).toContain('hello');
    const err = await runLogged('sh', ['-c', 'echo step one; echo "it broke" >&2; exit 3'], {
      logFile: log,
      hint: 'fix it',
    }).catch((e: Error) => e);
    expect(String(err)).toBe(
      `Error: sh -c echo step one; echo "it broke" >&2; exit 3 failed with exit code 3: it broke (full log: ${log}); fix it`,
    );
  });

  it('runLogged reports a missing command and kills one that runs too long', async () => {
    const log = path.join(scratch, 'run2.log');
    await expect(
      runLogged('no-such-cmd-xyz', [], { logFile: log, hint: 'install it' }),
    ).rejects.toThrow('no-such-cmd-xyz not found on PATH: install it');
    await expect(runLogged('sleep', ['30'], { logFile: log, timeoutMs: 200 })).rejects.toThrow(
      /sleep 30 was killed after 0s/,
    );
  });

  it('runCapture returns stdout', async () => {
    expect(await runCapture('sh', ['-c', 'echo out; echo err >&2'])).toBe('out\n');
    await expect(runCapture('sh', ['-c', 'echo nope >&2; exit 1'])).rejects.toThrow(
      'sh -c echo nope >&2; exit 1 failed with exit code 1: nope',
    );
  });

  it('which finds commands on PATH', () => {
    expect(which('sh')).toMatch(/\/sh$/);
    expect(which('no-such-cmd-xyz')).toBeUndefined();
  });

  it('lastLine keeps the last meaningful line, shortened', () => {
    expect(lastLine('a\n\nb  \n\n')).toBe('b');
    expect(lastLine('x'.repeat(20), 5)).toBe('xxxxx...');
  });
});

describe('services', () => {
  it('stop() ends the whole process group, forked children included', async () => {
    const log = path.join(scratch, 'svc.log');
    const pidFile = path.join(scratch, 'grandchild.pid');
    const svc = await startService({
      name: 'sleeper',
      cmd: 'sh',
      args: ['-c', `sleep 300 & echo $! > ${pidFile}; wait`],
      logFile: log,
    });
    await until(() => existsSync(pidFile));
    const grandchild = Number((await fs.readFile(pidFile, 'utf8')).trim());
    expect(gone(grandchild)).toBe(false);
    await svc.stop();
    await svc.stop(); // idempotent
    expect(svc.exitReason()).toBeDefined();
    await until(() => gone(svc.pid) && gone(grandchild));
  });

  it('stop() escalates to SIGKILL when the service ignores its stop signal', async () => {
    const svc = await startService({
      name: 'stubborn',
      cmd: 'sh',
      args: ['-c', "trap '' TERM; echo ready; while :; do sleep 0.1; done"],
      logFile: path.join(scratch, 'stubborn.log'),
      stopTimeoutMs: 300,
    });
    await until(() => existsSync(path.join(scratch, 'stubborn.log')));
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    await svc.stop();
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(gone(svc.pid)).toBe(true);
  });

  it('reports a command that does not exist', async () => {
    await expect(
      startService({
        name: 'x',
        cmd: '/no/such/binary',
        args: [],
        logFile: path.join(scratch, 'x.log'),
      }),
    ).rejects.toThrow('/no/such/binary not found');
  });
});

// The exit handlers and the lock across processes need real separate Node processes. cache.ts
// imports only node: builtins, so a plain transpile makes it runnable by `node` directly.
describe('across processes', () => {
  let moduleUrl: string;
  beforeAll(async () => {
    const source = await fs.readFile(fileURLToPath(new URL('./cache.ts', import.meta.url)), 'utf8');
    const out = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    const file = path.join(scratch, 'cache.mjs');
    await fs.writeFile(file, out.outputText);
    moduleUrl = `file://${file}`;
  });

  /** Runs a Node script that starts `sleep 300` as a service, prints its pid, then `then`. */
  async function childWithService(
    then: string,
  ): Promise<{ servicePid: number; child: ReturnType<typeof spawn> }> {
    const script = `
      import { startService } from ${JSON.stringify(moduleUrl)};
      const svc = await startService({ name: 'sleeper', cmd: 'sleep', args: ['300'], logFile: ${JSON.stringify(path.join(scratch, 'child.log'))} });
      process.stdout.write(svc.pid + '\\n');
      ${then}
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const servicePid = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(Number(out.trim()));
      });
      child.once('exit', (code) => reject(new Error(`child exited early (${code})`)));
    });
    return { servicePid, child };
  }

  it('kills services when the parent exits normally', async () => {
    const { servicePid, child } = await childWithService('process.exit(0);');
    await new Promise((r) => child.once('exit', r));
    await until(() => gone(servicePid));
  });

  it('kills services on SIGTERM and still dies by the signal', async () => {
    const { servicePid, child } = await childWithService('setInterval(() => {}, 1000);');
    expect(gone(servicePid)).toBe(false);
    const exit = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_c, s) => r(s)));
    child.kill('SIGTERM');
    expect(await exit).toBe('SIGTERM');
    await until(() => gone(servicePid));
  });

  it.runIf(process.platform === 'linux' && which('setpriv'))(
    'kills services even when the parent is SIGKILLed (parent-death signal)',
    async () => {
      const { servicePid, child } = await childWithService('setInterval(() => {}, 1000);');
      child.kill('SIGKILL');
      await until(() => gone(servicePid));
    },
  );

  it('lets only one of two processes build the same binary', async () => {
    const cache = path.join(scratch, 'shared-cache');
    const counter = path.join(scratch, 'builds.txt');
    const script = `
      import { ensureBinary } from ${JSON.stringify(moduleUrl)};
      import { appendFileSync, writeFileSync } from 'node:fs';
      const file = await ensureBinary({ name: 'tool', version: '9', build: async (dir) => {
        appendFileSync(${JSON.stringify(counter)}, 'build\\n');
        await new Promise((r) => setTimeout(r, 700));
        writeFileSync(dir + '/tool', '#!/bin/sh\\n', { mode: 0o755 });
      } });
      process.stdout.write(file);
    `;
    const runOne = () =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
          env: { ...process.env, MIRRORHUB_CACHE: cache },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.once('exit', (code) =>
          code === 0 ? resolve(out) : reject(new Error(`exit ${code}`)),
        );
      });
    const [a, b] = await Promise.all([runOne(), runOne()]);
    expect(a).toBe(path.join(cache, 'bin', 'tool-v9', 'tool'));
    expect(b).toBe(a);
    expect((await fs.readFile(counter, 'utf8')).trim().split('\n')).toEqual(['build']);
  });
});
