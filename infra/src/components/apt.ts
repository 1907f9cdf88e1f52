// Installing a Debian package with apt-get, once: root only, under a lock in the cache dir.

import { constants as fsConstants } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { cacheDir, progress, runLogged, which, withFileLock } from './cache.js';

export interface AptInstallOptions {
  /** The Debian package, e.g. `chromium`. */
  pkg: string;
  /** Its human name for progress lines, e.g. `Chromium`, `PostgreSQL`. */
  name: string;
  /** The env var that overrides the system install, named in errors. */
  envVar: string;
  /** What is missing, opening the errors: `Chromium not found at /usr/bin/chromium`. */
  missing: string;
  /** What to do without apt-get: `install Chromium (or Chrome) and set MIRRORHUB_CHROMIUM to its executable`. */
  manual: string;
  /** What the env var should point at: `a Chromium or Chrome executable`. */
  envTarget: string;
  /** The install command suggested to a non-root user, sudo-prefixed (default `apt-get install -y <pkg>`). */
  userInstall?: string;
  /** Whether it is installed now: checked again inside the lock, another process may have done it. */
  installed: () => boolean | Promise<boolean>;
  /** Base name of the lock and log files in the cache dir: `<base>-apt.lock`, `<base>-apt.log`. */
  base: string;
}

/**
 * Installs `opts.pkg` with apt-get (`--no-install-recommends`; `apt-get update` and a retry only
 * when the install fails with the current package lists). Throws, saying what to do instead,
 * without apt-get or root. Returns the log file, for the caller's errors.
 */
export async function aptInstall(opts: AptInstallOptions): Promise<string> {
  const { pkg, name, envVar } = opts;
  const install = `apt-get install -y --no-install-recommends ${pkg}`;
  const aptGet = which('apt-get');
  if (!aptGet) {
    throw new Error(`${opts.missing} and apt-get is not available: ${opts.manual}`);
  }
  if (process.getuid?.() !== 0) {
    const userInstall = opts.userInstall ?? `apt-get install -y ${pkg}`;
    throw new Error(
      `${opts.missing}: run \`sudo apt-get update && sudo ${userInstall}\` or set ${envVar} to ${opts.envTarget}`,
    );
  }
  await fs.mkdir(cacheDir(), { recursive: true });
  const logFile = path.join(cacheDir(), `${opts.base}-apt.log`);
  await withFileLock(
    path.join(cacheDir(), `${opts.base}-apt.lock`),
    `installing ${name}`,
    async () => {
      if (await opts.installed()) return;
      progress(`installing ${name} with apt-get (once, ~1 min; log: ${logFile})...`);
      const started = Date.now();
      const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
      const hint = `run \`apt-get update && ${install}\` yourself or set ${envVar}`;
      const installArgs = ['install', '-y', '--no-install-recommends', pkg];
      try {
        // The package lists are usually fresh enough; only refresh them when that is not so.
        await runLogged(aptGet, installArgs, { logFile, env, timeoutMs: 15 * 60_000, hint });
      } catch {
        progress('apt-get install failed with the current package lists: running apt-get update');
        await runLogged(aptGet, ['update'], { logFile, env, timeoutMs: 10 * 60_000, hint });
        await runLogged(aptGet, installArgs, { logFile, env, timeoutMs: 15 * 60_000, hint });
      }
      progress(`${name} installed in ${((Date.now() - started) / 1000).toFixed(0)}s`);
    },
  );
  return logFile;
}

/** Whether `file` is an executable regular file: a system package's binary is installed. */
export async function isExecutableFile(file: string): Promise<boolean> {
  try {
    const stat = await fs.stat(file);
    if (!stat.isFile()) return false;
    await fs.access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}
