// Prometheus and promtool from the OS (Debian's `prometheus` package, apt-get installed once when
// missing and allowed): promtool checks and unit-tests the charts' alert rules, and a real
// Prometheus scrapes a hub and an agent in the alerting e2e test.

import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { aptInstall, isExecutableFile } from './apt.js';
import { findFreePort, startService, waitFor, type ServiceProcess } from './cache.js';

const ENV_VAR = 'MIRRORHUB_PROMETHEUS';
/** Where Debian's `prometheus` package puts its binaries. */
export const DEBIAN_PROMETHEUS = '/usr/bin/prometheus';
const PACKAGE = 'prometheus';

export interface PrometheusBins {
  prometheus: string;
  promtool: string;
}

function binsBeside(prometheus: string): PrometheusBins {
  return { prometheus, promtool: path.join(path.dirname(prometheus), 'promtool') };
}

async function usable(bins: PrometheusBins): Promise<boolean> {
  return (await isExecutableFile(bins.prometheus)) && (await isExecutableFile(bins.promtool));
}

export interface EnsurePrometheusOptions {
  /** The prometheus binary looked for (and installed) when the env var is unset; for tests. */
  systemPath?: string;
}

/**
 * prometheus and promtool: `$MIRRORHUB_PROMETHEUS` (a prometheus binary with promtool beside it),
 * else Debian's `/usr/bin/prometheus`, else installs the `prometheus` package with apt-get (root
 * only, once, under a lock in the cache dir).
 */
export async function ensurePrometheus(
  opts: EnsurePrometheusOptions = {},
): Promise<PrometheusBins> {
  const fromEnv = process.env[ENV_VAR];
  if (fromEnv) {
    const bins = binsBeside(path.resolve(fromEnv));
    if (!(await usable(bins))) {
      throw new Error(
        `${ENV_VAR}=${fromEnv} is not an executable prometheus with an executable promtool beside it: point it at one or unset it`,
      );
    }
    return bins;
  }
  const bins = binsBeside(opts.systemPath ?? DEBIAN_PROMETHEUS);
  if (await usable(bins)) return bins;

  const logFile = await aptInstall({
    pkg: PACKAGE,
    name: 'Prometheus',
    envVar: ENV_VAR,
    missing: `Prometheus not found at ${bins.prometheus}`,
    manual: `install Prometheus (prometheus and promtool) and set ${ENV_VAR} to its prometheus binary`,
    envTarget: 'a prometheus binary with promtool beside it',
    installed: () => usable(bins),
    base: 'prometheus',
  });
  if (!(await usable(bins))) {
    throw new Error(
      `apt-get installed ${PACKAGE} but ${bins.prometheus} or ${bins.promtool} is not an executable: see ${logFile} or set ${ENV_VAR}`,
    );
  }
  return bins;
}

export interface PrometheusOptions {
  /** Folder for the config, the TSDB and the log (the caller removes it). */
  dir: string;
  /** prometheus.yml, written into `dir`; rule files it names are resolved from `dir` too. */
  config: string;
  /** Other files to write into `dir` (rule files), by name. */
  files?: Record<string, string>;
}

export interface Prometheus {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly process: ServiceProcess;
  /** GET /api/v1/<path> and return its `data`; throws on an error status. */
  api<T = unknown>(pathAndQuery: string): Promise<T>;
  stop(): Promise<void>;
}

/** Starts a real Prometheus on a free local port and waits until it is ready. */
export async function startPrometheus(opts: PrometheusOptions): Promise<Prometheus> {
  const bins = await ensurePrometheus();
  await fs.mkdir(opts.dir, { recursive: true });
  for (const [name, text] of Object.entries(opts.files ?? {})) {
    await fs.writeFile(path.join(opts.dir, name), text);
  }
  const configFile = path.join(opts.dir, 'prometheus.yml');
  await fs.writeFile(configFile, opts.config);
  const port = await findFreePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = await startService({
    name: 'Prometheus',
    cmd: bins.prometheus,
    args: [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${path.join(opts.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // Debian's binary defaults to its packaged console files, absent outside /etc/prometheus.
      `--web.console.templates=${opts.dir}`,
      `--web.console.libraries=${opts.dir}`,
    ],
    logFile: path.join(opts.dir, 'prometheus.log'),
    cwd: opts.dir,
  });
  await waitFor(
    async () => {
      const res = await fetch(`${url}/-/ready`);
      return res.ok;
    },
    {
      what: 'Prometheus to answer /-/ready',
      timeoutMs: 120_000,
      intervalMs: 250,
      abort: () => {
        const why = proc.exitReason();
        return why && `Prometheus exited (${why}): see ${proc.logFile}`;
      },
      hint: `see ${proc.logFile}`,
    },
  );
  return {
    url,
    process: proc,
    async api<T>(pathAndQuery: string): Promise<T> {
      const res = await fetch(`${url}/api/v1/${pathAndQuery}`);
      const body = (await res.json()) as { status: string; data: T; error?: string };
      if (body.status !== 'success') {
        throw new Error(`Prometheus /api/v1/${pathAndQuery}: ${body.error ?? res.status}`);
      }
      return body.data;
    },
    stop: () => proc.stop(),
  };
}
