import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  OPENBAO_VERSION,
  devServerArgs,
  ensureBao,
  persistentServerArgs,
  persistentServerConfig,
} from './openbao.js';

const savedEnv = { ...process.env };
let cache: string;
beforeAll(async () => {
  cache = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-bao-test-'));
});
afterAll(async () => {
  await fs.rm(cache, { recursive: true, force: true });
});
afterEach(() => {
  process.env = { ...savedEnv };
  vi.restoreAllMocks();
});

describe('ensureBao', () => {
  it('pins a 2.x OpenBao', () => {
    expect(OPENBAO_VERSION).toMatch(/^2\.\d+\.\d+$/);
  });

  it('returns $MIRRORHUB_BAO without installing anything', async () => {
    process.env.MIRRORHUB_CACHE = cache;
    process.env.MIRRORHUB_BAO = '/bin/true';
    expect(await ensureBao()).toBe('/bin/true');
  });

  it('says in one line what to do when python3 is missing', async () => {
    process.env.MIRRORHUB_CACHE = cache;
    delete process.env.MIRRORHUB_BAO;
    delete process.env.MIRRORHUB_PYTHON;
    process.env.PATH = path.join(cache, 'empty-path');
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    const err = await ensureBao().catch((e: Error) => e);
    expect(String(err)).toBe(
      `Error: python3 not found on PATH: OpenBao ${OPENBAO_VERSION} is installed into a venv, so install Python >= 3.9 with its venv module (Debian/Ubuntu: apt-get install python3 python3-venv) or set MIRRORHUB_BAO to a bao binary`,
    );
  });
});

describe('devServerArgs', () => {
  it('serves plain HTTP on the given loopback port with the given root token', () => {
    expect(devServerArgs({ port: 8200, rootToken: 'r' })).toEqual([
      'server',
      '-dev',
      '-dev-listen-address=127.0.0.1:8200',
      '-dev-root-token-id=r',
      '-dev-no-store-token',
      '-log-level=info',
    ]);
  });

  it('with a cert dir, serves HTTPS with the dev CA written there', () => {
    const args = devServerArgs({ port: 8200, rootToken: 'r', tlsCertDir: '/tmp/x/tls' });
    expect(args).toContain('-dev-tls');
    expect(args).toContain('-dev-tls-cert-dir=/tmp/x/tls');
  });
});

describe('persistentServerArgs', () => {
  it('runs a non-dev server from the config file', () => {
    expect(persistentServerArgs('/tmp/x/bao.hcl')).toEqual([
      'server',
      '-config=/tmp/x/bao.hcl',
      '-log-level=info',
    ]);
  });
});

describe('persistentServerConfig', () => {
  it('keeps raft data in the given dir, listens on loopback over HTTP, cluster on port+1', () => {
    expect(persistentServerConfig({ port: 8200, dataDir: '/tmp/x/data' })).toBe(
      [
        'storage "raft" {',
        '  path = "/tmp/x/data"',
        '  node_id = "mirrorhub-test"',
        '  performance_multiplier = 1',
        '}',
        'listener "tcp" {',
        '  address = "127.0.0.1:8200"',
        '  cluster_address = "127.0.0.1:8201"',
        '  tls_disable = true',
        '}',
        'api_addr = "http://127.0.0.1:8200"',
        'cluster_addr = "https://127.0.0.1:8201"',
        'ui = false',
        '',
      ].join('\n'),
    );
  });

  it('with TLS files, serves HTTPS with them', () => {
    const text = persistentServerConfig({
      port: 8200,
      dataDir: '/tmp/x/data',
      tls: { certFile: '/tmp/x/tls/server.crt', keyFile: '/tmp/x/tls/server.key' },
    });
    expect(text).toContain('  tls_cert_file = "/tmp/x/tls/server.crt"\n');
    expect(text).toContain('  tls_key_file = "/tmp/x/tls/server.key"\n');
    expect(text).not.toContain('tls_disable');
    expect(text).toContain('api_addr = "https://127.0.0.1:8200"');
  });

  it('quotes paths as HCL strings', () => {
    expect(persistentServerConfig({ port: 1, dataDir: '/tmp/a "b"\\c' })).toContain(
      '  path = "/tmp/a \\"b\\"\\\\c"\n',
    );
  });
});
