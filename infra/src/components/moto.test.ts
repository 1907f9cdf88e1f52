// moto comes from the project's own venv in the cache, not from the system Python or PATH.
// The install itself is real (PyPI, once per machine; `npm test` does it before the suites),
// the error paths use stub `python3`/`moto_server` scripts on an otherwise empty PATH.
import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startMoto } from '../aws/moto.js';
import { cacheDir } from './cache.js';
import { MOTO_VERSION, ensureMoto, motoDir } from './moto.js';

const savedEnv = { ...process.env };
let tmp: string;
beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-moto-test-'));
});
afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});
afterEach(() => {
  process.env = { ...savedEnv };
  vi.restoreAllMocks();
});

/** A directory holding executable shell scripts: name -> script body. */
async function stubs(name: string, scripts: Record<string, string>): Promise<string> {
  const dir = path.join(tmp, name);
  await fs.mkdir(dir, { recursive: true });
  for (const [file, body] of Object.entries(scripts)) {
    await fs.writeFile(path.join(dir, file), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  }
  return dir;
}

describe('ensureMoto', () => {
  it('pins moto 5.2.1, the version the STS gate and EKS emulator are verified against', () => {
    expect(MOTO_VERSION).toBe('5.2.1');
  });

  it(
    'installs into the cached venv once and returns the same path again without reinstalling',
    async () => {
      delete process.env.MIRRORHUB_MOTO;
      // A moto_server on PATH does not win over the venv.
      const onPath = await stubs('path-moto', { moto_server: 'exit 0' });
      process.env.PATH = `${onPath}${path.delimiter}${savedEnv.PATH ?? ''}`;
      const first = await ensureMoto();
      expect(first).toBe(path.join(cacheDir(), 'bin', `moto-v${MOTO_VERSION}`, 'moto_server'));
      expect(path.dirname(first)).toBe(motoDir());
      expect(await fs.realpath(first)).toBe(
        await fs.realpath(path.join(motoDir(), 'venv', 'bin', 'moto_server')),
      );
      const marker = await fs.stat(path.join(motoDir(), '.complete'));
      const venv = await fs.stat(path.join(motoDir(), 'venv'));
      const progress = vi.spyOn(process.stderr, 'write').mockReturnValue(true);
      expect(await ensureMoto()).toBe(first);
      expect(progress).not.toHaveBeenCalled(); // no "installing" line
      expect((await fs.stat(path.join(motoDir(), '.complete'))).mtimeMs).toBe(marker.mtimeMs);
      expect((await fs.stat(path.join(motoDir(), 'venv'))).ino).toBe(venv.ino);
    },
    10 * 60_000,
  );

  it(
    "startMoto runs the venv's moto_server",
    async () => {
      delete process.env.MIRRORHUB_MOTO;
      const moto = await startMoto();
      try {
        const cmdline = (await fs.readFile(`/proc/${moto.pid}/cmdline`, 'utf8')).split('\0');
        // moto_server is a console script: the venv's python running the venv's script.
        expect(cmdline).toContain(path.join(motoDir(), 'moto_server'));
        expect(cmdline.some((a) => a.startsWith(path.join(motoDir(), 'venv')))).toBe(true);
      } finally {
        await moto.stop();
      }
    },
    10 * 60_000,
  );

  it('returns $MIRRORHUB_MOTO without installing anything', async () => {
    process.env.MIRRORHUB_CACHE = path.join(tmp, 'cache-env');
    process.env.MIRRORHUB_MOTO = '/bin/true';
    expect(await ensureMoto()).toBe('/bin/true');
    await expect(fs.access(path.join(tmp, 'cache-env', 'bin'))).rejects.toThrow();
  });

  it('says in one line what to do when python3 is missing', async () => {
    process.env.MIRRORHUB_CACHE = path.join(tmp, 'cache-nopy');
    delete process.env.MIRRORHUB_MOTO;
    delete process.env.MIRRORHUB_PYTHON;
    process.env.PATH = await stubs('empty', {});
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    const err = await ensureMoto().catch((e: Error) => e);
    expect(String(err)).toBe(
      `Error: python3 not found on PATH: moto ${MOTO_VERSION} is installed into a venv, so install Python >= 3.9 with its venv module (Debian/Ubuntu: apt-get install python3 python3-venv) or set MIRRORHUB_MOTO to a moto_server (moto ${MOTO_VERSION})`,
    );
  });

  it('says to install python3-venv when the venv module is missing', async () => {
    process.env.MIRRORHUB_CACHE = path.join(tmp, 'cache-novenv');
    delete process.env.MIRRORHUB_MOTO;
    delete process.env.MIRRORHUB_PYTHON;
    // Debian's python3 without python3-venv: `import ensurepip` fails.
    const dir = await stubs('novenv', {
      python3: 'echo "ModuleNotFoundError: No module named ensurepip" >&2; exit 1',
    });
    process.env.PATH = dir;
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    const err = await ensureMoto().catch((e: Error) => e);
    expect(String(err)).toBe(
      `Error: ${path.join(dir, 'python3')} has no venv module (or no ensurepip): install it (Debian/Ubuntu: apt-get install python3-venv) or set MIRRORHUB_MOTO to a moto_server (moto ${MOTO_VERSION})`,
    );
    // Nothing half-made is left to be mistaken for an install.
    await expect(fs.access(path.join(motoDir(), '.complete'))).rejects.toThrow();
  });

  it('falls back to a moto_server on PATH, with a warning, when no venv can be made', async () => {
    process.env.MIRRORHUB_CACHE = path.join(tmp, 'cache-fallback');
    delete process.env.MIRRORHUB_MOTO;
    delete process.env.MIRRORHUB_PYTHON;
    const dir = await stubs('fallback', { moto_server: 'exit 0' });
    process.env.PATH = dir;
    const progress = vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    expect(await ensureMoto()).toBe(path.join(dir, 'moto_server'));
    expect(String(progress.mock.calls.at(-1)?.[0])).toMatch(
      /^\[mirrorhub\] using .*moto_server from PATH: the moto 5\.2\.1 venv could not be made \(python3 not found on PATH/,
    );
  });
});
