// The kit's optional real components, started for real: helm (built from source once),
// OpenBao (dev server) and PostgreSQL. Each is proven to work, stopped, and checked gone.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import {
  HELM_VERSION,
  OPENBAO_VERSION,
  ensureBao,
  ensureHelm,
  ensurePostgres,
  pgAcceptsConnections,
  progress,
  startOpenBao,
  startPostgres,
} from '@mirrorhub/infra/components/index';

const run = promisify(execFile);

/** Logs how long a step took (docs/components.md quotes these lines). */
async function timed<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const value = await fn();
  progress(`timing: ${what} took ${((performance.now() - started) / 1000).toFixed(2)}s`);
  return value;
}

/** True when no process of the group (the service and anything it forked) is left. */
function groupGone(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

describe('helm', () => {
  it(
    `is built once and reports ${HELM_VERSION} and the Kubernetes version of its client`,
    async () => {
      const helm = await timed('ensureHelm()', ensureHelm);
      expect(await timed('ensureHelm() again', ensureHelm)).toBe(helm);

      const { stdout } = await run(helm, ['version', '--short']);
      expect(stdout.trim()).toMatch(new RegExp(`^${HELM_VERSION.replace(/\./g, '\\.')}\\b`));

      // A release-equivalent build: .Capabilities.KubeVersion comes from helm's client-go (1.32),
      // not the v1.20.0 fallback of a plain `go install`.
      const chart = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-chart-'));
      cleanups.push(() => fs.rm(chart, { recursive: true, force: true }));
      await fs.mkdir(path.join(chart, 'templates'));
      await fs.writeFile(
        path.join(chart, 'Chart.yaml'),
        'apiVersion: v2\nname: probe\nversion: 0.1.0\nkubeVersion: ">=1.25.0-0"\n',
      );
      await fs.writeFile(
        path.join(chart, 'templates', 'cm.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe}\ndata:\n  kube: "{{ .Capabilities.KubeVersion.Version }}"\n',
      );
      const rendered = await run(helm, ['template', 'probe', chart]);
      expect(rendered.stdout).toContain('kube: "v1.32.0"');
    },
    20 * 60_000,
  ); // the first run builds helm from source
});

describe('OpenBao', () => {
  it(
    `${OPENBAO_VERSION} dev server stores and returns a KV v2 secret over HTTP, then leaves nothing behind`,
    async () => {
      await timed('ensureBao()', ensureBao);
      const bao = await timed('startOpenBao()', () =>
        startOpenBao({ rootToken: 'mirrorhub-root' }),
      );
      cleanups.push(() => bao.stop());
      expect(bao.address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(bao.rootToken).toBe('mirrorhub-root');

      const headers = { 'X-Vault-Token': bao.rootToken, 'Content-Type': 'application/json' };
      const write = await fetch(`${bao.address}/v1/secret/data/team-a/db`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ data: { username: 'app', password: 's3cr3t' } }),
      });
      expect(write.status).toBe(200);
      const written = (await write.json()) as { data: { version: number } };
      expect(written.data.version).toBe(1);

      const read = await fetch(`${bao.address}/v1/secret/data/team-a/db`, { headers });
      expect(read.status).toBe(200);
      const body = (await read.json()) as {
        data: { data: Record<string, string>; metadata: { version: number } };
      };
      expect(body.data.data).toEqual({ username: 'app', password: 's3cr3t' });
      expect(body.data.metadata.version).toBe(1);

      const denied = await fetch(`${bao.address}/v1/secret/data/team-a/db`, {
        headers: { 'X-Vault-Token': 'wrong' },
      });
      expect(denied.status).toBe(403);
      await denied.body?.cancel();

      // The CLI talks to the same server (what later Vault tests will script against).
      const { stdout } = await run(
        await ensureBao(),
        ['kv', 'get', '-field=username', 'secret/team-a/db'],
        {
          env: { ...process.env, BAO_ADDR: bao.address, BAO_TOKEN: bao.rootToken, HOME: bao.dir },
        },
      );
      expect(stdout.trim()).toBe('app');

      await timed('OpenBao stop()', () => bao.stop());
      expect(groupGone(bao.pid)).toBe(true);
      expect(existsSync(bao.dir)).toBe(false);
      await expect(fetch(`${bao.address}/v1/sys/health`)).rejects.toThrow();
    },
    10 * 60_000,
  ); // the first run downloads OpenBao (~75 MB)

  it('two servers run side by side on their own ports', async () => {
    const [a, b] = await Promise.all([startOpenBao(), startOpenBao()]);
    cleanups.push(
      () => a.stop(),
      () => b.stop(),
    );
    expect(a.address).not.toBe(b.address);
    for (const s of [a, b]) {
      const res = await fetch(`${s.address}/v1/sys/health`);
      expect(res.status).toBe(200);
      await res.body?.cancel();
    }
    await Promise.all([a.stop(), b.stop()]);
    expect(groupGone(a.pid) && groupGone(b.pid)).toBe(true);
  });
});

describe('PostgreSQL', () => {
  it('answers select 1 to psql over TCP with the password, then leaves nothing behind', async () => {
    const bins = await timed('ensurePostgres()', ensurePostgres);
    expect(bins.version).toMatch(/^\d+$/);
    const pg = await timed('startPostgres()', () => startPostgres());
    cleanups.push(() => pg.stop());
    expect(pg.host).toBe('127.0.0.1');
    expect(pg.url).toBe(
      `postgresql://${pg.user}:${pg.password}@127.0.0.1:${pg.port}/${pg.database}`,
    );
    expect(await pgAcceptsConnections({ host: pg.host, port: pg.port, user: pg.user })).toBe(true);

    const psql = bins.psql ?? 'psql';
    const { stdout } = await run(psql, [
      pg.url,
      '-X',
      '-A',
      '-t',
      '-c',
      'select 1, current_database(), current_user',
    ]);
    expect(stdout.trim()).toBe(`1|${pg.database}|${pg.user}`);

    // The password is really checked on TCP.
    const wrong = pg.url.replace(`:${pg.password}@`, ':not-the-password@');
    await expect(run(psql, [wrong, '-X', '-c', 'select 1'])).rejects.toThrow(
      /password authentication failed/,
    );

    await timed('PostgreSQL stop()', () => pg.stop());
    expect(groupGone(pg.pid)).toBe(true);
    expect(existsSync(pg.dir)).toBe(false);
    expect(await pgAcceptsConnections({ host: pg.host, port: pg.port, user: pg.user })).toBe(false);
  });
});
