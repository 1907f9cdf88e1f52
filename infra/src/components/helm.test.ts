import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { HELM_VERSION, ensureHelm } from './helm.js';

const savedEnv = { ...process.env };
let cache: string;
beforeAll(async () => {
  cache = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-helm-test-'));
});
afterAll(async () => {
  await fs.rm(cache, { recursive: true, force: true });
});
afterEach(() => {
  process.env = { ...savedEnv };
  vi.restoreAllMocks();
});

describe('ensureHelm', () => {
  it('pins helm v3.17.4', () => {
    expect(HELM_VERSION).toBe('v3.17.4');
  });

  it('returns $MIRRORHUB_HELM without building anything', async () => {
    process.env.MIRRORHUB_CACHE = cache;
    process.env.MIRRORHUB_HELM = '/bin/true';
    expect(await ensureHelm()).toBe('/bin/true');
  });

  it('says in one line what to do when Go is missing', async () => {
    process.env.MIRRORHUB_CACHE = cache;
    delete process.env.MIRRORHUB_HELM;
    process.env.PATH = path.join(cache, 'empty-path');
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    const err = await ensureHelm().catch((e: Error) => e);
    expect(String(err)).toBe(
      'Error: go not found on PATH: install Go >= 1.23 (https://go.dev/dl) or set MIRRORHUB_HELM to a helm binary',
    );
  });
});
