import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { GOPHER_LUA_VERSION, argoHealthSource, ensureArgoHealth } from './argo-health.js';

const savedEnv = { ...process.env };
let cache: string;
beforeAll(async () => {
  cache = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-argo-health-test-'));
});
afterAll(async () => {
  await fs.rm(cache, { recursive: true, force: true });
});
afterEach(() => {
  process.env = { ...savedEnv };
  vi.restoreAllMocks();
});

describe('ensureArgoHealth', () => {
  it("pins the gopher-lua its go.mod requires (Argo CD's interpreter)", async () => {
    const goMod = await fs.readFile(path.join(argoHealthSource(), 'go.mod'), 'utf8');
    expect(goMod).toContain(`github.com/yuin/gopher-lua ${GOPHER_LUA_VERSION}`);
  });

  it('returns $MIRRORHUB_ARGO_HEALTH without building anything', async () => {
    process.env.MIRRORHUB_CACHE = cache;
    process.env.MIRRORHUB_ARGO_HEALTH = '/bin/true';
    expect(await ensureArgoHealth()).toBe('/bin/true');
  });

  it('says in one line what to do when Go is missing', async () => {
    process.env.MIRRORHUB_CACHE = cache;
    delete process.env.MIRRORHUB_ARGO_HEALTH;
    process.env.PATH = path.join(cache, 'empty-path');
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    const err = await ensureArgoHealth().catch((e: Error) => e);
    expect(String(err)).toBe(
      'Error: go not found on PATH: install Go >= 1.23 (https://go.dev/dl) or set MIRRORHUB_ARGO_HEALTH to an argo-health binary',
    );
  });
});
