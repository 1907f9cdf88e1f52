import { readFileSync } from 'node:fs';

import { startService, waitFor, type ServiceProcess } from '../components/cache.js';
import { KitError } from './errors.js';

/** Last lines of a log file, for error messages. */
export function tail(file: string, lines = 3): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join(' | ');
  } catch {
    return '(no log)';
  }
}

/**
 * Starts a kit server (own process group, dies with us) and waits until `ready` says so.
 * Its stop() sends SIGTERM, then SIGKILL after `stopTimeoutMs` (default 5 s).
 */
export async function startServer(
  name: string,
  cmd: string,
  args: string[],
  logFile: string,
  ready: () => Promise<boolean>,
  timeoutMs: number,
  stopTimeoutMs = 5_000,
): Promise<ServiceProcess> {
  const proc = await startService({ name, cmd, args, logFile, stopTimeoutMs });
  try {
    await waitFor(() => ready().catch(() => false), {
      what: name,
      timeoutMs,
      intervalMs: 150,
      abort: () => {
        const r = proc.exitReason();
        return r && `${name} exited during start-up (${r}); ${logFile} ends: ${tail(logFile)}`;
      },
      hint: `see ${logFile}: ${tail(logFile)}`,
    });
  } catch (err) {
    await proc.stop();
    throw new KitError((err as Error).message, { cause: err });
  }
  return proc;
}
