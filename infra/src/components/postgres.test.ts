import * as fs from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findFreePort } from './cache.js';
import { ensurePostgres, findDebianPostgres, pgAcceptsConnections } from './postgres.js';

const savedEnv = { ...process.env };
afterEach(() => {
  process.env = { ...savedEnv };
});

async function fakeInstall(root: string, version: string, bins: string[]): Promise<string> {
  const dir = path.join(root, version, 'bin');
  await fs.mkdir(dir, { recursive: true });
  for (const b of bins) await fs.writeFile(path.join(dir, b), '#!/bin/sh\n', { mode: 0o755 });
  return dir;
}

describe('findDebianPostgres', () => {
  it('picks the newest version that has initdb, postgres and pg_ctl', async () => {
    const root = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-pg-test-'));
    await fakeInstall(root, '9.6', ['initdb', 'postgres', 'pg_ctl']);
    const v15 = await fakeInstall(root, '15', ['initdb', 'postgres', 'pg_ctl']);
    await fakeInstall(root, '16', ['psql']); // client only
    await fs.mkdir(path.join(root, 'notes'));
    expect(findDebianPostgres(root)).toBe(v15);
    expect(findDebianPostgres(path.join(root, 'none'))).toBeUndefined();
    await fs.rm(root, { recursive: true, force: true });
  });
});

describe('ensurePostgres', () => {
  it('refuses a MIRRORHUB_PG_BIN without the server binaries, in one line', async () => {
    const root = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-pg-test-'));
    process.env.MIRRORHUB_PG_BIN = await fakeInstall(root, '15', ['postgres']);
    await expect(ensurePostgres()).rejects.toThrow(
      /^MIRRORHUB_PG_BIN=.* has no initdb, pg_ctl: point it at the bin directory of a PostgreSQL server install or unset it$/,
    );
    await fs.rm(root, { recursive: true, force: true });
  });

  it('reads the major version from MIRRORHUB_PG_BIN', async () => {
    const root = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-pg-test-'));
    const bin = await fakeInstall(root, '17', ['initdb', 'pg_ctl']);
    await fs.writeFile(
      path.join(bin, 'postgres'),
      '#!/bin/sh\necho "postgres (PostgreSQL) 17.2 (Debian 17.2-1)"\n',
      { mode: 0o755 },
    );
    process.env.MIRRORHUB_PG_BIN = bin;
    const bins = await ensurePostgres();
    expect(bins).toMatchObject({ version: '17', binDir: bin, initdb: path.join(bin, 'initdb') });
    await fs.rm(root, { recursive: true, force: true });
  });
});

describe('pgAcceptsConnections', () => {
  async function fakeServer(reply: Buffer): Promise<{ server: Server; port: number }> {
    const server = createServer((socket) => socket.once('data', () => socket.end(reply)));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const address = server.address();
    return { server, port: typeof address === 'object' && address ? address.port : 0 };
  }

  it('is true when the server asks for authentication', async () => {
    // AuthenticationSASL: 'R', length, 10, "SCRAM-SHA-256\0\0"
    const { server, port } = await fakeServer(
      Buffer.from('R\0\0\0\x17\0\0\0\x0aSCRAM-SHA-256\0\0', 'latin1'),
    );
    expect(await pgAcceptsConnections({ host: '127.0.0.1', port, user: 'u' })).toBe(true);
    server.close();
  });

  it('is false while the server is starting up, and when nothing listens', async () => {
    const { server, port } = await fakeServer(
      Buffer.from('E\0\0\0\x10SFATAL\0C57P03\0\0', 'latin1'),
    );
    expect(await pgAcceptsConnections({ host: '127.0.0.1', port, user: 'u' })).toBe(false);
    server.close();
    const free = await findFreePort();
    expect(await pgAcceptsConnections({ host: '127.0.0.1', port: free, user: 'u' })).toBe(false);
  });
});
