import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureChromium } from './chromium.js';

const savedEnv = { ...process.env };
let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-chromium-test-'));
});
afterEach(async () => {
  process.env = { ...savedEnv };
  await fs.rm(root, { recursive: true, force: true });
});

describe('ensureChromium', () => {
  it('returns the executable MIRRORHUB_CHROMIUM points at', async () => {
    const exe = path.join(root, 'chrome');
    await fs.writeFile(exe, '#!/bin/sh\n', { mode: 0o755 });
    process.env.MIRRORHUB_CHROMIUM = exe;
    expect(await ensureChromium({ systemPath: path.join(root, 'none') })).toBe(exe);
  });

  it('refuses a MIRRORHUB_CHROMIUM that does not exist, in one line', async () => {
    process.env.MIRRORHUB_CHROMIUM = path.join(root, 'missing');
    await expect(ensureChromium()).rejects.toThrow(
      /^MIRRORHUB_CHROMIUM=.*\/missing does not exist: point it at a Chromium or Chrome executable or unset it$/,
    );
  });

  it('refuses a MIRRORHUB_CHROMIUM that is not an executable file', async () => {
    const plain = path.join(root, 'plain');
    await fs.writeFile(plain, 'not a program\n', { mode: 0o644 });
    process.env.MIRRORHUB_CHROMIUM = plain;
    // Root may execute nothing without an x bit either, so this holds for every user.
    await expect(ensureChromium()).rejects.toThrow(/^MIRRORHUB_CHROMIUM=.* is not executable: /);
    process.env.MIRRORHUB_CHROMIUM = root;
    await expect(ensureChromium()).rejects.toThrow(/^MIRRORHUB_CHROMIUM=.* is not a file: /);
  });

  it('uses the system launcher when present, and says what to do when it is not', async () => {
    delete process.env.MIRRORHUB_CHROMIUM;
    const system = path.join(root, 'chromium');
    await fs.writeFile(system, '#!/bin/sh\n', { mode: 0o755 });
    expect(await ensureChromium({ systemPath: system })).toBe(system);

    process.env.PATH = path.join(root, 'empty'); // no apt-get: nothing is installed
    await expect(ensureChromium({ systemPath: path.join(root, 'none') })).rejects.toThrow(
      /^Chromium not found at .*\/none and apt-get is not available: install Chromium \(or Chrome\) and set MIRRORHUB_CHROMIUM to its executable$/,
    );
  });
});
