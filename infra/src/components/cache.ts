// Shared plumbing for the local kit's real components: where binaries are cached, how a
// binary is built once (even when several test processes ask at the same time), free
// loopback ports, deadlines, logged commands and long-running processes that never outlive
// the process that started them.
//
// Every error thrown from here is one line: what is wrong, then what to do about it.

import { spawn, type ChildProcess } from 'node:child_process';
import {
  accessSync,
  closeSync,
  constants as fsConstants,
  openSync,
  readFileSync,
  rmSync,
  unlinkSync,
} from 'node:fs';
import * as fs from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, hostname } from 'node:os';
import * as path from 'node:path';

// ---------------------------------------------------------------------------------------------
// Messages

/** Progress for humans, on stderr (stdout stays clean for tools that parse it). */
export function progress(message: string): void {
  process.stderr.write(`[mirrorhub] ${message}\n`);
}

/** Collapses a multi-line text to its last meaningful line, short enough for an error. */
export function lastLine(text: string, max = 300): string {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  const line = lines[lines.length - 1] ?? '';
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

/** The named variables of this process's environment (services get a small, explicit env). */
export function pickEnv(keys: readonly string[]): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const key of keys) if (process.env[key] !== undefined) env[key] = process.env[key];
  return env;
}

function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------------------------
// Cache directory and binaries

/** `$MIRRORHUB_CACHE`, else `$XDG_CACHE_HOME/mirrorhub`, else `~/.cache/mirrorhub`. Never inside the repo. */
export function cacheDir(): string {
  const explicit = process.env.MIRRORHUB_CACHE;
  if (explicit) return path.resolve(explicit);
  const xdg = process.env.XDG_CACHE_HOME;
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, 'mirrorhub');
  return path.join(homedir(), '.cache', 'mirrorhub');
}

export interface EnsureBinaryOptions {
  /** Short name, also the default file name: `helm`. */
  name: string;
  /** Pinned version: `3.17.4` or `v3.17.4`. The cache folder is `bin/<name>-v<version>/`. */
  version: string;
  /** Environment variable that points at an existing binary and skips the build. */
  envVar?: string;
  /** Path of the binary inside the folder, when it is not simply `<name>`. */
  file?: string;
  /** Printed once before building: `building helm v3.17.4 with go install (once, ...)...` */
  message?: string;
  /** Where the build writes its output, named in the "still installing" progress lines. */
  logFile?: string;
  /** Fills `destDir` (already created and empty) so that `destDir/<file>` is executable. */
  build: (destDir: string) => Promise<void>;
}

const COMPLETE_MARKER = '.complete';

/** Absolute path of `cmd` found on PATH (or `cmd` itself when it is a path), else undefined. */
export function which(cmd: string): string | undefined {
  if (cmd.includes('/')) return isExecutable(cmd) ? path.resolve(cmd) : undefined;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, cmd);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Folder of one pinned binary: `<cacheDir>/bin/<name>-v<version>`. */
export function binaryDir(name: string, version: string): string {
  const v = version.startsWith('v') ? version : `v${version}`;
  return path.join(cacheDir(), 'bin', `${name}-${v}`);
}

/**
 * Path of a pinned binary: `envVar` when set, else the cached build, else builds it once
 * (under a lock file, so concurrent test processes wait for one build instead of racing).
 */
export async function ensureBinary(opts: EnsureBinaryOptions): Promise<string> {
  if (opts.envVar) {
    const fromEnv = process.env[opts.envVar];
    if (fromEnv) {
      const resolved = path.resolve(fromEnv);
      if (!isExecutable(resolved)) {
        throw new Error(
          `${opts.envVar}=${fromEnv} is not an executable file: point it at a ${opts.name} binary or unset it to build ${opts.name} ${opts.version} into ${cacheDir()}`,
        );
      }
      return resolved;
    }
  }

  const dir = binaryDir(opts.name, opts.version);
  const file = path.join(dir, opts.file ?? opts.name);
  const ready = (): boolean =>
    isExecutable(file) && existsSyncSafe(path.join(dir, COMPLETE_MARKER));
  if (ready()) return file;

  await fs.mkdir(path.dirname(dir), { recursive: true });
  await withFileLock(`${dir}.lock`, `installing ${opts.name} ${opts.version}`, async () => {
    if (ready()) return; // another process finished it while we waited
    await fs.rm(dir, { recursive: true, force: true }); // a half-finished earlier attempt
    await fs.mkdir(dir, { recursive: true });
    const started = Date.now();
    progress(opts.message ?? `installing ${opts.name} ${opts.version} (once)...`);
    const heartbeat = setInterval(() => {
      const secs = Math.round((Date.now() - started) / 1000);
      progress(
        `still installing ${opts.name} ${opts.version} (${secs}s so far${opts.logFile ? `; log: ${opts.logFile}` : ''})...`,
      );
    }, 30_000);
    heartbeat.unref();
    try {
      await opts.build(dir);
    } catch (err) {
      await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
      throw err;
    } finally {
      clearInterval(heartbeat);
    }
    if (!isExecutable(file)) {
      throw new Error(
        `installing ${opts.name} ${opts.version} finished but ${file} is missing or not executable: delete ${dir} and retry${opts.envVar ? `, or set ${opts.envVar}` : ''}`,
      );
    }
    await fs.writeFile(path.join(dir, COMPLETE_MARKER), `${new Date().toISOString()}\n`);
    progress(
      `${opts.name} ${opts.version} ready in ${((Date.now() - started) / 1000).toFixed(1)}s: ${file}`,
    );
  });
  return file;
}

function existsSyncSafe(file: string): boolean {
  try {
    accessSync(file, fsConstants.F_OK);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Lock file

interface LockInfo {
  pid: number;
  host: string;
  since: string;
}

/**
 * Process-wide state, shared through globalThis so that several copies of this module (test
 * isolation re-evaluating it, src and dist both loaded) still install one set of exit handlers
 * and kill every service on exit.
 */
interface ProcessState {
  heldLocks: Set<string>;
  liveServices: Set<{ pid: number }>;
  exitCleanups: Set<() => void>;
  handlersInstalled: boolean;
}
const STATE_KEY = Symbol.for('mirrorhub.components.state');
const state: ProcessState = ((globalThis as Record<symbol, unknown>)[STATE_KEY] as
  ProcessState | undefined) ?? {
  heldLocks: new Set(),
  liveServices: new Set(),
  exitCleanups: new Set(),
  handlersInstalled: false,
};
(globalThis as Record<symbol, unknown>)[STATE_KEY] = state;
const { heldLocks, liveServices, exitCleanups } = state;

/** Whether a process with this pid exists (signal 0 reaches it). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === 'EPERM';
  }
}

async function readLock(lockPath: string): Promise<{ info?: LockInfo; ageMs: number } | undefined> {
  try {
    const [text, stat] = await Promise.all([fs.readFile(lockPath, 'utf8'), fs.stat(lockPath)]);
    let info: LockInfo | undefined;
    try {
      info = JSON.parse(text) as LockInfo;
    } catch {
      info = undefined; // being written right now, or garbage
    }
    return { info, ageMs: Date.now() - stat.mtimeMs };
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

function isStale(lock: { info?: LockInfo; ageMs: number }): boolean {
  if (!lock.info) return lock.ageMs > 30_000;
  if (lock.info.host !== hostname()) return lock.ageMs > 2 * 3600_000;
  return !pidAlive(lock.info.pid);
}

/**
 * Runs `fn` while holding an exclusive lock file. A lock left by a dead process is taken over;
 * a live holder is waited for (with one progress line) up to `timeoutMs`.
 */
export async function withFileLock<T>(
  lockPath: string,
  what: string,
  fn: () => Promise<T>,
  timeoutMs = 30 * 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let announced = false;
  for (;;) {
    try {
      const handle = await fs.open(lockPath, 'wx');
      const info: LockInfo = {
        pid: process.pid,
        host: hostname(),
        since: new Date().toISOString(),
      };
      await handle.writeFile(JSON.stringify(info));
      await handle.close();
      break;
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') {
        throw new Error(
          `cannot create lock file ${lockPath} (${errnoCode(err) ?? String(err)}): make ${path.dirname(lockPath)} writable or set MIRRORHUB_CACHE to a writable directory`,
        );
      }
    }
    const lock = await readLock(lockPath);
    if (!lock) continue; // released between our attempt and the read
    if (isStale(lock)) {
      // Move it aside atomically; if what we moved turns out to be a fresh, live lock (someone
      // else took over first), put it back and keep waiting.
      const aside = `${lockPath}.stale-${process.pid}-${Date.now()}`;
      try {
        await fs.rename(lockPath, aside);
      } catch {
        continue;
      }
      const moved = await readLock(aside);
      if (moved && !isStale(moved)) await fs.link(aside, lockPath).catch(() => undefined);
      await fs.rm(aside, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${Math.round(timeoutMs / 1000)}s waiting for pid ${lock.info?.pid ?? '?'} (${what}) to release ${lockPath}: if no mirrorhub install is running, delete that file`,
      );
    }
    if (!announced) {
      progress(`waiting for another process (pid ${lock.info?.pid ?? '?'}) that is ${what}...`);
      announced = true;
    }
    await sleep(500);
  }
  heldLocks.add(lockPath);
  installExitHandlers();
  try {
    return await fn();
  } finally {
    heldLocks.delete(lockPath);
    await fs.rm(lockPath, { force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Ports and deadlines

/** A TCP port that is free on 127.0.0.1 right now (the kernel picks it). */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() =>
        port ? resolve(port) : reject(new Error('could not pick a free port on 127.0.0.1')),
      );
    });
  });
}

/** Whether a TCP port can be bound on 127.0.0.1 right now. */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () =>
      server.close(() => resolve(true)),
    );
  });
}

export interface WaitForOptions {
  /** Deadline for the whole wait. */
  timeoutMs: number;
  /** What we are waiting for, for the error: `OpenBao to answer /v1/sys/health`. */
  what: string;
  /** Pause between attempts (default 100 ms). */
  intervalMs?: number;
  /** Checked before every attempt; a string ends the wait at once with that message. */
  abort?: () => string | undefined;
  /** Appended to the timeout error: `see /tmp/x/bao.log`. */
  hint?: string;
}

/**
 * Calls `fn` until it returns something other than `undefined`, `null` or `false`, and
 * returns that. Exceptions count as "not yet" (the last one is quoted on timeout).
 */
export async function waitFor<T>(
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  opts: WaitForOptions,
): Promise<T> {
  const started = Date.now();
  const interval = opts.intervalMs ?? 100;
  let lastError: string | undefined;
  for (;;) {
    const aborted = opts.abort?.();
    if (aborted) throw new Error(aborted);
    try {
      const value = await fn();
      if (value !== undefined && value !== null && value !== false) return value as T;
    } catch (err) {
      lastError = lastLine(err instanceof Error ? err.message : String(err), 200);
    }
    if (Date.now() - started >= opts.timeoutMs) {
      const parts = [
        `timed out after ${(opts.timeoutMs / 1000).toFixed(0)}s waiting for ${opts.what}`,
      ];
      if (lastError) parts.push(`last error: ${lastError}`);
      if (opts.hint) parts.push(opts.hint);
      throw new Error(parts.join('; '));
    }
    await sleep(interval);
  }
}

// ---------------------------------------------------------------------------------------------
// Commands

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Run as this user/group (requires root). */
  uid?: number;
  gid?: number;
  /** Kill the command (its whole process group) after this long. Default: no limit. */
  timeoutMs?: number;
  /** Appended to failure messages: what the user can do instead. */
  hint?: string;
}

function commandLine(cmd: string, args: readonly string[]): string {
  return [path.basename(cmd), ...args].join(' ');
}

function notFound(cmd: string, hint?: string): Error {
  return new Error(
    `${cmd} not found${path.isAbsolute(cmd) ? '' : ' on PATH'}${hint ? `: ${hint}` : ''}`,
  );
}

/**
 * Runs a command to completion, appending its stdout and stderr to `logFile`. Rejects with one
 * line (the command, exit code, last line of output, the log path) when it fails.
 */
export async function runLogged(
  cmd: string,
  args: readonly string[],
  opts: RunOptions & { logFile: string },
): Promise<void> {
  await fs.mkdir(path.dirname(opts.logFile), { recursive: true });
  const before = await fs.stat(opts.logFile).then(
    (s) => s.size,
    () => 0,
  );
  const fd = openSync(opts.logFile, 'a');
  let child: ChildProcess;
  try {
    await fs.appendFile(opts.logFile, `$ ${[cmd, ...args].join(' ')}\n`);
    child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ['ignore', fd, fd],
      detached: true,
      uid: opts.uid,
      gid: opts.gid,
    });
  } finally {
    closeSync(fd);
  }
  const result = await waitChild(child, opts.timeoutMs);
  if (result.spawnError) {
    if (errnoCode(result.spawnError) === 'ENOENT') throw notFound(cmd, opts.hint);
    throw new Error(
      `${commandLine(cmd, args)} could not start (${result.spawnError.message})${opts.hint ? `: ${opts.hint}` : ''}`,
    );
  }
  if (result.code === 0) return;
  const output = await fs.readFile(opts.logFile, 'utf8').then(
    (t) => t.slice(before),
    () => '',
  );
  const how = result.timedOut
    ? `was killed after ${Math.round((opts.timeoutMs ?? 0) / 1000)}s`
    : result.signal
      ? `was killed by ${result.signal}`
      : `failed with exit code ${result.code}`;
  const tail = lastLine(output.replace(/^\$ .*\n/, ''));
  throw new Error(
    `${commandLine(cmd, args)} ${how}${tail ? `: ${tail}` : ''} (full log: ${opts.logFile})${opts.hint ? `; ${opts.hint}` : ''}`,
  );
}

/** Runs a short command and returns its stdout; rejects with one line on failure. */
export async function runCapture(
  cmd: string,
  args: readonly string[],
  opts: RunOptions = {},
): Promise<string> {
  const child = spawn(cmd, args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    uid: opts.uid,
    gid: opts.gid,
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const result = await waitChild(child, opts.timeoutMs ?? 60_000);
  if (result.spawnError) {
    if (errnoCode(result.spawnError) === 'ENOENT') throw notFound(cmd, opts.hint);
    throw new Error(`${commandLine(cmd, args)} could not start (${result.spawnError.message})`);
  }
  if (result.code !== 0) {
    const why = result.timedOut
      ? 'timed out'
      : `failed with exit code ${result.code ?? result.signal}`;
    const tail = lastLine(stderr) || lastLine(stdout);
    throw new Error(
      `${commandLine(cmd, args)} ${why}${tail ? `: ${tail}` : ''}${opts.hint ? `; ${opts.hint}` : ''}`,
    );
  }
  return stdout;
}

interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  spawnError?: Error;
}

function waitChild(child: ChildProcess, timeoutMs?: number): Promise<ChildResult> {
  return new Promise((resolve) => {
    let timedOut = false;
    let settled = false;
    const timer =
      timeoutMs !== undefined
        ? setTimeout(() => {
            timedOut = true;
            killGroup(child.pid, 'SIGKILL');
          }, timeoutMs)
        : undefined;
    const done = (r: ChildResult): void => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve(r);
    };
    child.once('error', (err) => done({ code: null, signal: null, timedOut, spawnError: err }));
    child.once('close', (code, signal) => done({ code, signal, timedOut }));
  });
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

// ---------------------------------------------------------------------------------------------
// Long-running processes

export interface ServiceOptions {
  /** For messages: `OpenBao`. */
  name: string;
  cmd: string;
  args: readonly string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  uid?: number;
  gid?: number;
  /** First signal on stop() (default SIGTERM); SIGKILL follows after `stopTimeoutMs`. */
  stopSignal?: NodeJS.Signals;
  stopTimeoutMs?: number;
}

export interface ServiceProcess {
  readonly name: string;
  /** Also the process group id: the service runs in its own group. */
  readonly pid: number;
  readonly logFile: string;
  /** Set once the process has exited: `exit code 1` or `signal SIGKILL`. */
  exitReason(): string | undefined;
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;
  /** Stops the whole process group: stopSignal, then SIGKILL after a grace period. Idempotent. */
  stop(): Promise<void>;
}

let setprivPath: string | null | undefined;
/** util-linux setpriv, used to tie a service's life to ours even if we are SIGKILLed. */
function pdeathsigWrapper(): string | null {
  if (setprivPath !== undefined) return setprivPath;
  setprivPath = null;
  if (process.platform !== 'linux') return setprivPath;
  setprivPath = which('setpriv') ?? (isExecutable('/usr/bin/setpriv') ? '/usr/bin/setpriv' : null);
  return setprivPath;
}

/**
 * Starts a long-running process in its own process group, output appended to `logFile`.
 * It is killed on stop(), and when this process exits (exit, SIGINT, SIGTERM; on Linux even
 * when this process is SIGKILLed, through the parent-death signal).
 */
export async function startService(opts: ServiceOptions): Promise<ServiceProcess> {
  installExitHandlers();
  await fs.mkdir(path.dirname(opts.logFile), { recursive: true });
  const fd = openSync(opts.logFile, 'a');
  const resolved = which(opts.cmd);
  if (!resolved) {
    closeSync(fd);
    throw notFound(opts.cmd);
  }
  const wrapper = pdeathsigWrapper();
  const [cmd, args] = wrapper
    ? [wrapper, ['--pdeathsig', 'SIGKILL', '--', resolved, ...opts.args]]
    : [resolved, [...opts.args]];
  let child: ChildProcess;
  try {
    child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ['ignore', fd, fd],
      detached: true,
      uid: opts.uid,
      gid: opts.gid,
    });
  } finally {
    closeSync(fd);
  }
  const spawned = await new Promise<Error | undefined>((resolve) => {
    child.once('spawn', () => resolve(undefined));
    child.once('error', (err) => resolve(err));
  });
  if (spawned || child.pid === undefined) {
    if (errnoCode(spawned) === 'ENOENT') throw notFound(opts.cmd);
    throw new Error(
      `${opts.name} could not start (${spawned?.message ?? 'no pid'}): see ${opts.logFile}`,
    );
  }
  const pid = child.pid;
  let reason: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      reason = signal ? `signal ${signal}` : `exit code ${code}`;
      resolve();
    });
  });
  let stopping: Promise<void> | undefined;
  const service: ServiceProcess = {
    name: opts.name,
    pid,
    logFile: opts.logFile,
    exited,
    exitReason: () => reason,
    stop: () => {
      stopping ??= (async () => {
        if (reason === undefined) {
          killGroup(pid, opts.stopSignal ?? 'SIGTERM');
          const graceful = await Promise.race([
            exited.then(() => true),
            sleep(opts.stopTimeoutMs ?? 10_000).then(() => false),
          ]);
          if (!graceful) killGroup(pid, 'SIGKILL');
          await exited;
        }
        killGroup(pid, 'SIGKILL'); // stragglers left in the group by the leader
        liveServices.delete(service);
      })();
      return stopping;
    },
  };
  liveServices.add(service);
  void exited.then(() => {
    if (!stopping) liveServices.delete(service);
    // The leader died on its own: make sure no child of it lingers in the group.
    if (!stopping) killGroup(pid, 'SIGKILL');
  });
  return service;
}

/** Registers synchronous cleanup to run when this process exits (after services are killed). */
export function onExit(fn: () => void): () => void {
  installExitHandlers();
  exitCleanups.add(fn);
  return () => exitCleanups.delete(fn);
}

/** Best-effort synchronous removal of a directory, for exit cleanups. */
export function removeDirSync(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // nothing more we can do while exiting
  }
}

function cleanupNow(): void {
  for (const service of liveServices) killGroup(service.pid, 'SIGKILL');
  liveServices.clear();
  for (const fn of exitCleanups) {
    try {
      fn();
    } catch {
      // keep going: every cleanup gets its chance
    }
  }
  exitCleanups.clear();
  for (const lock of heldLocks) {
    try {
      const info = JSON.parse(readFileSync(lock, 'utf8')) as LockInfo;
      if (info.pid === process.pid) unlinkSync(lock);
    } catch {
      // gone or not ours
    }
  }
  heldLocks.clear();
}

function installExitHandlers(): void {
  if (state.handlersInstalled) return;
  state.handlersInstalled = true;
  process.on('exit', cleanupNow);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const handler = (): void => {
      cleanupNow();
      // If nobody else handles the signal, behave as if we had never listened: die by it.
      process.removeListener(signal, handler);
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, handler);
  }
}
