// moto (the AWS STS/IAM emulator the kit runs) installed once into a venv in the cache, like
// OpenBao: `pip install` into the system Python is refused by current Debian/Ubuntu (PEP 668,
// "externally-managed-environment"), and a venv pins moto's version and its dependencies away
// from whatever else the machine has installed.
//
// Which moto_server runs, in order: `$MIRRORHUB_MOTO`; else the cached venv, created on first
// use; else, only when that venv cannot be made (no python3, no venv module, no PyPI), a
// `moto_server` already on PATH, with a warning.

import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { binaryDir, ensureBinary, progress, runCapture, which } from './cache.js';
import { installIntoVenv } from './pyvenv.js';

/** The moto the STS gate and the EKS emulator are verified against (infra/src/aws/). */
export const MOTO_VERSION = '5.2.1';
const PYPI_REQUIREMENT = `moto[server]==${MOTO_VERSION}`;
const ENV_VAR = 'MIRRORHUB_MOTO';

/** What to do when no venv can be made and no moto_server is on PATH. */
const OR_ELSE = `or set ${ENV_VAR} to a moto_server (moto ${MOTO_VERSION})`;

/** The cache folder holding `venv/` and the `moto_server` link into it. */
export function motoDir(): string {
  return binaryDir('moto', MOTO_VERSION);
}

function installLog(): string {
  return `${motoDir()}.install.log`;
}

/**
 * Path of the `moto_server` to run: `$MIRRORHUB_MOTO`, else `<cache>/bin/moto-v5.2.1/moto_server`
 * (a link into the venv, installed here on first use, under a lock), else a `moto_server` on
 * PATH when the venv cannot be made. Every error is one line that says what to do.
 */
export async function ensureMoto(): Promise<string> {
  try {
    return await ensureBinary({
      name: 'moto',
      version: MOTO_VERSION,
      envVar: ENV_VAR,
      file: 'moto_server',
      logFile: installLog(),
      message: `installing moto ${MOTO_VERSION} (the AWS STS/IAM emulator) from PyPI into a venv in ${motoDir()} (once, ~300 MB on disk, about a minute)...`,
      build: installMoto,
    });
  } catch (err) {
    if (process.env[ENV_VAR]) throw err;
    const onPath = which('moto_server');
    if (!onPath) throw err;
    progress(
      `using ${onPath} from PATH: the moto ${MOTO_VERSION} venv could not be made (${(err as Error).message})`,
    );
    return onPath;
  }
}

async function installMoto(destDir: string): Promise<void> {
  const venvPython = await installIntoVenv(destDir, {
    what: `moto ${MOTO_VERSION}`,
    requirement: PYPI_REQUIREMENT,
    pipFlags: ['--prefer-binary'],
    logFile: installLog(),
    orElse: OR_ELSE,
  });
  const version = (
    await runCapture(venvPython, ['-c', 'import moto; print(moto.__version__)'], {
      timeoutMs: 60_000,
    })
  ).trim();
  if (version !== MOTO_VERSION) {
    throw new Error(
      `the venv in ${destDir} holds moto ${version}, not ${MOTO_VERSION}: delete ${destDir} and retry ${OR_ELSE}`,
    );
  }
  // The console script's shebang is the venv's python: no activation or PATH change needed.
  await fs.symlink(path.join('venv', 'bin', 'moto_server'), path.join(destDir, 'moto_server'));
}
