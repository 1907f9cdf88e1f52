// Chromium from the OS (Debian's `chromium` package, apt-get installed once when missing and
// allowed), for the headless browser tests of the dashboard.

import { constants as fsConstants } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { aptInstall, isExecutableFile } from './apt.js';

const ENV_VAR = 'MIRRORHUB_CHROMIUM';
/** Where Debian's `chromium` package puts its launcher. */
export const DEBIAN_CHROMIUM = '/usr/bin/chromium';
const PACKAGE = 'chromium';

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

  const logFile = await aptInstall({
    pkg: PACKAGE,
    name: 'Chromium',
    envVar: ENV_VAR,
    missing: `Chromium not found at ${systemPath}`,
    manual: `install Chromium (or Chrome) and set ${ENV_VAR} to its executable`,
    envTarget: 'a Chromium or Chrome executable',
    installed: () => isExecutableFile(systemPath),
    base: 'chromium',
  });
  if (!(await isExecutableFile(systemPath))) {
    throw new Error(
      `apt-get installed ${PACKAGE} but ${systemPath} is not an executable: see ${logFile} or set ${ENV_VAR}`,
    );
  }
  return systemPath;
}
