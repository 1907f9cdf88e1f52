// Chromium from the OS (Debian's `chromium` package, apt-get installed once when missing and
// allowed), for the headless browser tests of the dashboard.

import { constants as fsConstants } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { cacheDir, progress, runLogged, which, withFileLock } from './cache.js';

const ENV_VAR = 'MIRRORHUB_CHROMIUM';
/** Where Debian's `chromium` package puts its launcher. */
export const DEBIAN_CHROMIUM = '/usr/bin/chromium';
const PACKAGE = 'chromium';

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    const stat = await fs.stat(file);
    if (!stat.isFile()) return false;
    await fs.access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Why `$MIRRORHUB_CHROMIUM` cannot be used, or undefined when it is an executable file. */
async function refuseEnvPath(file: string): Promise<string | undefined> {
  const stat = await fs.stat(file).catch(() => undefined);
  if (!stat) return 'does not exist';
  if (!stat.isFile()) return 'is not a file';
  const executable = await fs.access(file, fsConstants.X_OK).then(
    () => true,
    () => false,
  );
  return executable ? undefined : 'is not executable';
}

export interface EnsureChromiumOptions {
  /** The system launcher looked for (and installed) when the env var is unset; for tests. */
  systemPath?: string;
}

/**
 * A Chromium executable: `$MIRRORHUB_CHROMIUM`, else Debian's `/usr/bin/chromium`, else installs
 * the `chromium` package with apt-get (root only, once, under a lock in the cache dir).
 */
export async function ensureChromium(opts: EnsureChromiumOptions = {}): Promise<string> {
  const fromEnv = process.env[ENV_VAR];
  if (fromEnv) {
    const file = path.resolve(fromEnv);
    const why = await refuseEnvPath(file);
    if (why) {
      throw new Error(
        `${ENV_VAR}=${fromEnv} ${why}: point it at a Chromium or Chrome executable or unset it`,
      );
    }
    return file;
  }
  const systemPath = opts.systemPath ?? DEBIAN_CHROMIUM;
  if (await isExecutableFile(systemPath)) return systemPath;

  const install = `apt-get install -y --no-install-recommends ${PACKAGE}`;
  const aptGet = which('apt-get');
  if (!aptGet) {
    throw new Error(
      `Chromium not found at ${systemPath} and apt-get is not available: install Chromium (or Chrome) and set ${ENV_VAR} to its executable`,
    );
  }
  if (process.getuid?.() !== 0) {
    throw new Error(
      `Chromium not found at ${systemPath}: run \`sudo apt-get update && sudo apt-get install -y ${PACKAGE}\` or set ${ENV_VAR} to a Chromium or Chrome executable`,
    );
  }
  await fs.mkdir(cacheDir(), { recursive: true });
  const logFile = path.join(cacheDir(), 'chromium-apt.log');
  await withFileLock(
    path.join(cacheDir(), 'chromium-apt.lock'),
    'installing Chromium',
    async () => {
      if (await isExecutableFile(systemPath)) return;
      progress(`installing Chromium with apt-get (once, ~1 min; log: ${logFile})...`);
      const started = Date.now();
      const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
      const hint = `run \`apt-get update && ${install}\` yourself or set ${ENV_VAR}`;
      const installArgs = ['install', '-y', '--no-install-recommends', PACKAGE];
      try {
        // The package lists are usually fresh enough; only refresh them when that is not so.
        await runLogged(aptGet, installArgs, { logFile, env, timeoutMs: 15 * 60_000, hint });
      } catch {
        progress('apt-get install failed with the current package lists: running apt-get update');
        await runLogged(aptGet, ['update'], { logFile, env, timeoutMs: 10 * 60_000, hint });
        await runLogged(aptGet, installArgs, { logFile, env, timeoutMs: 15 * 60_000, hint });
      }
      progress(`Chromium installed in ${((Date.now() - started) / 1000).toFixed(0)}s`);
    },
  );
  if (!(await isExecutableFile(systemPath))) {
    throw new Error(
      `apt-get installed ${PACKAGE} but ${systemPath} is not an executable: see ${logFile} or set ${ENV_VAR}`,
    );
  }
  return systemPath;
}
