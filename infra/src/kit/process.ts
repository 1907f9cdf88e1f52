import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

import { KitError } from './errors.js';

/** Every process group the kit started in this Node process, so none outlives it. */
const live = new Set<number>();
let hooked = false;

function killAllNow(): void {
  for (const pgid of live) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', killAllNow);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killAllNow();
      process.kill(process.pid, sig);
    });
  }
}

export interface Managed {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves when the process has exited (code or signal). */
  readonly exited: Promise<void>;
  exitedEarly(): boolean;
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts a child in its own process group with output to a log file. With the lifeline
 * (default) our Go-built binaries arm PR_SET_PDEATHSIG, so they die with this process even
 * when it is SIGKILLed; the exit hooks cover everything else.
 */
export function startProcess(
  name: string,
  cmd: string,
  args: string[],
  opts: { logFile: string; env?: NodeJS.ProcessEnv; lifeline?: boolean; cwd?: string },
): Managed {
  hookExit();
  const out = createWriteStream(opts.logFile, { flags: 'a' });
  const child: ChildProcess = spawn(cmd, args, {
    cwd: opts.cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      ...opts.env,
      ...(opts.lifeline === false ? {} : { MIRRORHUB_LIFELINE: '1' }),
    },
  });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  if (child.pid === undefined) {
    throw new KitError(`could not start ${name} (${cmd}): check that the file exists and is executable`);
  }
  const pid = child.pid;
  live.add(pid);
  let done = false;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      done = true;
      live.delete(pid);
      resolve();
    });
    child.once('error', () => {
      done = true;
      live.delete(pid);
      resolve();
    });
  });
  return {
    name,
    pid,
    logFile: opts.logFile,
    exited,
    exitedEarly: () => done,
    async stop(graceMs = 5_000) {
      if (done) return;
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        return;
      }
      const timer = sleep(graceMs).then(() => 'timeout' as const);
      if ((await Promise.race([exited.then(() => 'exited' as const), timer])) === 'timeout') {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
        await exited;
      }
    },
  };
}

/** Last lines of a log file, for error messages. */
export function tail(file: string, lines = 5): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join(' | ');
  } catch {
    return '(no log)';
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** Fails with a one-line KitError when a fixed port is taken. */
export async function assertPortFree(port: number, what: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const srv = createServer();
    srv.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new KitError(
              `port ${port} for ${what} is already in use: stop what listens there (ss -ltnp 'sport = :${port}') or pick another --port-base`,
            )
          : err,
      ),
    );
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve()));
  });
}

/** Polls `check` until it returns true; the error says what was awaited and where to look. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  opts: { timeoutMs: number; intervalMs?: number; proc?: Managed },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    if (opts.proc?.exitedEarly()) {
      throw new KitError(`${what}: ${opts.proc.name} exited during start-up; its log ${opts.proc.logFile} ends: ${tail(opts.proc.logFile)}`);
    }
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) {
      const hint = opts.proc ? `; see ${opts.proc.logFile}: ${tail(opts.proc.logFile)}` : '';
      throw new KitError(`timed out after ${opts.timeoutMs / 1000}s waiting for ${what}${hint}`);
    }
    await sleep(opts.intervalMs ?? 100);
  }
}
