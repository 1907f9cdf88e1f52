// PostgreSQL from the OS (Debian's server binaries, apt-get installed once when missing and
// allowed), run as a throwaway cluster in a temp dir on a free loopback port.

import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { aptInstall } from './apt.js';
import {
  findFreePort,
  onExit,
  pickEnv,
  removeDirSync,
  runCapture,
  runLogged,
  startService,
  waitFor,
  which,
} from './cache.js';

const ENV_VAR = 'MIRRORHUB_PG_BIN';
const DEBIAN_ROOT = '/usr/lib/postgresql';
const REQUIRED = ['initdb', 'postgres', 'pg_ctl'] as const;

export interface PostgresBins {
  /** Major version, e.g. `15`. */
  version: string;
  binDir: string;
  initdb: string;
  postgres: string;
  pgCtl: string;
  /** Client tools next to the server when present (Debian ships them in the same dir). */
  psql?: string;
  createdb?: string;
}

/** The newest `/usr/lib/postgresql/<ver>/bin` holding initdb, postgres and pg_ctl. */
export function findDebianPostgres(root = DEBIAN_ROOT): string | undefined {
  let versions: string[];
  try {
    versions = readdirSync(root).filter((v) => /^\d+(\.\d+)?$/.test(v));
  } catch {
    return undefined;
  }
  versions.sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = path.join(root, v, 'bin');
    if (REQUIRED.every((b) => existsSync(path.join(bin, b)))) return bin;
  }
  return undefined;
}

async function describe(binDir: string): Promise<PostgresBins> {
  const out = await runCapture(path.join(binDir, 'postgres'), ['--version'], { timeoutMs: 30_000 });
  // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
  const version = /PostgreSQL\)?\s+(\d+)/.exec(out)?.[1] ?? 'unknown';
  const optional = (name: string): string | undefined => {
    const local = path.join(binDir, name);
    return existsSync(local) ? local : which(name);
  };
  return {
    version,
    binDir,
    initdb: path.join(binDir, 'initdb'),
    postgres: path.join(binDir, 'postgres'),
    pgCtl: path.join(binDir, 'pg_ctl'),
    psql: optional('psql'),
    createdb: optional('createdb'),
  };
}

/**
 * PostgreSQL server binaries: `$MIRRORHUB_PG_BIN`, else Debian's newest
 * `/usr/lib/postgresql/<ver>/bin`, else installs the `postgresql` package with apt-get (root only).
 */
export async function ensurePostgres(): Promise<PostgresBins> {
  const fromEnv = process.env[ENV_VAR];
  if (fromEnv) {
    const missing = REQUIRED.filter((b) => !existsSync(path.join(fromEnv, b)));
    if (missing.length > 0) {
      throw new Error(
        `${ENV_VAR}=${fromEnv} has no ${missing.join(', ')}: point it at the bin directory of a PostgreSQL server install or unset it`,
      );
    }
    return describe(path.resolve(fromEnv));
  }
  const found = findDebianPostgres();
  if (found) return describe(found);

  const logFile = await aptInstall({
    pkg: 'postgresql',
    name: 'PostgreSQL',
    envVar: ENV_VAR,
    missing: `PostgreSQL server binaries not found in ${DEBIAN_ROOT}/<version>/bin`,
    manual: `install a PostgreSQL server and set ${ENV_VAR} to the directory holding initdb and postgres`,
    envTarget: 'the directory holding initdb and postgres',
    userInstall: 'apt-get install -y --no-install-recommends postgresql',
    installed: () => findDebianPostgres() !== undefined,
    base: 'postgresql',
  });
  const installed = findDebianPostgres();
  if (!installed) {
    throw new Error(
      `apt-get installed postgresql but ${DEBIAN_ROOT}/<version>/bin has no ${REQUIRED.join('/')}: see ${logFile} or set ${ENV_VAR}`,
    );
  }
  return describe(installed);
}

// ---------------------------------------------------------------------------------------------

export interface PostgresOptions {
  /** Superuser created by initdb (default `mirrorhub`). */
  user?: string;
  /** Its password, checked (SCRAM) on TCP connections (default: random). */
  password?: string;
  /** Database created for the caller (default `mirrorhub`). */
  database?: string;
  /** Deadline for initdb + start-up (default 60 s). */
  timeoutMs?: number;
  /** Keep the temp dir (data + log) after stop(), for debugging. */
  keepDir?: boolean;
}

export interface Postgres {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** `postgresql://user:password@127.0.0.1:port/database` */
  url: string;
  /** postmaster pid (also its process group). */
  pid: number;
  /** Temp dir: `data/`, `sock/` (unix socket), `postgres.log`. */
  dir: string;
  socketDir: string;
  logFile: string;
  bins: PostgresBins;
  /** Fast shutdown, then removes the temp dir. Idempotent. */
  stop(): Promise<void>;
}

interface RunAs {
  uid: number;
  gid: number;
  name: string;
}

/** PostgreSQL refuses to run as root: as root, run it as the `postgres` system user. */
async function runAsUser(): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const hint = `running as root needs a 'postgres' system user to run PostgreSQL as: create one (useradd --system --user-group postgres) or run as a non-root user`;
  try {
    const uid = Number((await runCapture('id', ['-u', 'postgres'])).trim());
    const gid = Number((await runCapture('id', ['-g', 'postgres'])).trim());
    if (!Number.isInteger(uid) || !Number.isInteger(gid) || uid === 0) throw new Error(hint);
    return { uid, gid, name: 'postgres' };
  } catch {
    throw new Error(`no usable 'postgres' user: ${hint}`);
  }
}

/**
 * Starts a throwaway PostgreSQL: initdb into a temp dir, `postgres` on a free 127.0.0.1 port
 * with its unix socket in the temp dir, fsync off (the data is disposable). Ready when it
 * accepts connections; the requested database exists.
 */
export async function startPostgres(opts: PostgresOptions = {}): Promise<Postgres> {
  const bins = await ensurePostgres();
  const user = opts.user ?? 'mirrorhub';
  const password = opts.password ?? randomBytes(12).toString('hex');
  const database = opts.database ?? 'mirrorhub';
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const runAs = await runAsUser();

  const dir = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-postgres-'));
  const forgetDir = opts.keepDir ? () => false : onExit(() => removeDirSync(dir));
  const dataDir = path.join(dir, 'data');
  const socketDir = path.join(dir, 'sock');
  const logFile = path.join(dir, 'postgres.log');
  const pwFile = path.join(dir, 'pwfile');
  const ids = runAs ? { uid: runAs.uid, gid: runAs.gid } : {};
  const env = { ...pickEnv(['PATH', 'TZ']), LC_ALL: 'C', LANG: 'C', HOME: dir };

  let started = false;
  try {
    await fs.mkdir(socketDir, { mode: 0o700 });
    await fs.writeFile(pwFile, `${password}\n`, { mode: 0o600 });
    await fs.writeFile(logFile, '');
    if (runAs) {
      for (const p of [dir, socketDir, pwFile, logFile]) await fs.chown(p, runAs.uid, runAs.gid);
      await runCapture('test', ['-w', dir], { ...ids, env }).catch(() => {
        throw new Error(
          `the ${runAs.name} user cannot write ${dir}: set TMPDIR to a directory every user can traverse (e.g. /tmp)`,
        );
      });
    }
    await runLogged(
      bins.initdb,
      [
        `--pgdata=${dataDir}`,
        `--username=${user}`,
        `--pwfile=${pwFile}`,
        '--auth-local=trust',
        '--auth-host=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ],
      { logFile, env, cwd: dir, ...ids, timeoutMs: Math.max(1_000, deadline - Date.now()) },
    );
    await fs.rm(pwFile, { force: true });

    for (let attempt = 1; ; attempt++) {
      const port = await findFreePort();
      const service = await startService({
        name: 'PostgreSQL',
        cmd: bins.postgres,
        args: [
          '-D',
          dataDir,
          '-p',
          String(port),
          '-k',
          socketDir,
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          'fsync=off',
          '-c',
          'synchronous_commit=off',
          '-c',
          'full_page_writes=off',
          '-c',
          'max_connections=100',
        ],
        logFile,
        env,
        cwd: dir,
        ...ids,
        stopSignal: 'SIGINT', // "fast" shutdown: roll back clients, no waiting for them to leave
        stopTimeoutMs: 10_000,
      });
      try {
        await waitFor(() => pgAcceptsConnections({ host: '127.0.0.1', port, user }), {
          timeoutMs: Math.max(1_000, deadline - Date.now()),
          what: `PostgreSQL to accept connections on 127.0.0.1:${port}`,
          abort: () => {
            const reason = service.exitReason();
            return reason
              ? `PostgreSQL exited during start-up (${reason}): see ${logFile}`
              : undefined;
          },
          hint: `see ${logFile}`,
        });
      } catch (err) {
        await service.stop();
        const log = await fs.readFile(logFile, 'utf8').catch(() => '');
        if (attempt < 3 && /could not bind|address already in use/i.test(log)) {
          await fs.appendFile(logFile, '--- port taken, retrying with another one ---\n');
          continue;
        }
        throw err;
      }

      if (database !== 'postgres') {
        const createdb = bins.createdb;
        if (!createdb) {
          await service.stop();
          throw new Error(
            `createdb not found next to ${bins.postgres} or on PATH: install the PostgreSQL client (apt-get install postgresql-client) or pass database: 'postgres'`,
          );
        }
        try {
          await runLogged(createdb, ['-h', socketDir, '-p', String(port), '-U', user, database], {
            logFile,
            env,
            timeoutMs: Math.max(5_000, deadline - Date.now()),
          });
        } catch (err) {
          await service.stop();
          throw err;
        }
      }

      started = true;
      let stopped: Promise<void> | undefined;
      const host = '127.0.0.1';
      return {
        host,
        port,
        user,
        password,
        database,
        url: `postgresql://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}/${encodeURIComponent(database)}`,
        pid: service.pid,
        dir,
        socketDir,
        logFile,
        bins,
        stop: () => {
          stopped ??= (async () => {
            await service.stop();
            if (!opts.keepDir) {
              await fs.rm(dir, { recursive: true, force: true });
              forgetDir();
            }
          })();
          return stopped;
        },
      };
    }
  } finally {
    if (!started) forgetDir(); // keep data + log for the error that points at them
  }
}

/**
 * Minimal wire-protocol probe: sends a StartupMessage and reports whether the server is
 * accepting connections (it asks for authentication, or lets us in) rather than answering
 * "the database system is starting up". No password is sent.
 */
export function pgAcceptsConnections(opts: {
  host: string;
  port: number;
  user: string;
  database?: string;
  timeoutMs?: number;
}): Promise<boolean> {
  return new Promise((resolve) => {
    const params = ['user', opts.user, 'database', opts.database ?? 'postgres'];
    const body = Buffer.concat([
      Buffer.from([0, 3, 0, 0]), // protocol 3.0
      ...params.map((p) => Buffer.from(`${p}\0`, 'utf8')),
      Buffer.from([0]),
    ]);
    const length = Buffer.alloc(4);
    length.writeInt32BE(body.length + 4);
    const socket = connect({ host: opts.host, port: opts.port });
    const finish = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(opts.timeoutMs ?? 2_000, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write(Buffer.concat([length, body])));
    socket.once('data', (data: Buffer) => finish(data[0] === 0x52 /* 'R': Authentication* */));
  });
}
