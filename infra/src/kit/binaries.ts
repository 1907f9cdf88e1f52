import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { KitError } from './errors.js';

/** The Go module (infra/go) that pins kube-apiserver, kubectl and etcd. */
export const goModuleDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../go');

export const KUBE_VERSION = 'v1.34.4';
export const ETCD_VERSION = 'v3.6.4';

export interface KubeBinaries {
  kubeApiserver: string;
  etcd: string;
  kubectl: string;
}

/** Where built binaries are kept: outside the repo, shared by every checkout on the machine. */
export function cacheRoot(): string {
  if (process.env.MIRRORHUB_CACHE) return resolve(process.env.MIRRORHUB_CACHE);
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'mirrorhub');
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** A key that changes when the pinned versions or the mains change, so the cache rebuilds. */
async function sourceKey(): Promise<string> {
  const h = createHash('sha256');
  const files = ['go.mod', 'go.sum'];
  for (const dir of ['cmd/kube-apiserver', 'cmd/kubectl', 'cmd/etcd', 'internal/lifeline']) {
    for (const f of (await readdir(join(goModuleDir, dir))).sort()) files.push(join(dir, f));
  }
  for (const f of files) h.update(f).update(await readFile(join(goModuleDir, f)));
  return h.digest('hex').slice(0, 12);
}

function fromDir(dir: string): KubeBinaries {
  return { kubeApiserver: join(dir, 'kube-apiserver'), etcd: join(dir, 'etcd'), kubectl: join(dir, 'kubectl') };
}

/**
 * Returns runnable kube-apiserver, etcd and kubectl. MIRRORHUB_KUBE_BIN or KUBEBUILDER_ASSETS
 * may point at a directory that already has them; otherwise they are built once from the Go
 * module into the cache and reused afterwards.
 */
export async function ensureKubeBinaries(log: (line: string) => void = () => {}): Promise<KubeBinaries> {
  const given = process.env.MIRRORHUB_KUBE_BIN ?? process.env.KUBEBUILDER_ASSETS;
  if (given) {
    const bins = fromDir(resolve(given));
    for (const [name, path] of Object.entries(bins)) {
      if (name !== 'kubectl' && !(await exists(path))) {
        throw new KitError(`${path} not found: the directory in MIRRORHUB_KUBE_BIN/KUBEBUILDER_ASSETS must hold kube-apiserver and etcd (unset it to build them)`);
      }
    }
    return bins;
  }
  const dir = join(cacheRoot(), 'bin', `kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}-${await sourceKey()}`);
  const bins = fromDir(dir);
  if ((await Promise.all(Object.values(bins).map(exists))).every(Boolean)) return bins;

  await requireGo();
  await mkdir(dirname(dir), { recursive: true });
  const lock = `${dir}.lock`;
  await withDirLock(lock, log, async () => {
    if ((await Promise.all(Object.values(bins).map(exists))).every(Boolean)) return;
    const tmp = `${dir}.tmp-${process.pid}`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true });
    log(`building kube-apiserver ${KUBE_VERSION}, kubectl and etcd ${ETCD_VERSION} from Go modules into ${dir} (once; a cold build takes a few minutes)`);
    const started = Date.now();
    await goBuild(tmp, log);
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
    log(`built in ${Math.round((Date.now() - started) / 1000)}s`);
  });
  return bins;
}

async function requireGo(): Promise<void> {
  try {
    await promisify(execFile)('go', ['version']);
  } catch {
    throw new KitError(
      'go not found on PATH: install Go >= 1.24 (https://go.dev/dl), or set MIRRORHUB_KUBE_BIN to a directory with kube-apiserver, etcd and kubectl',
    );
  }
}

function goBuild(outDir: string, log: (line: string) => void): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    // -x is too loud; -v prints each package as it compiles, which is the progress we show.
    const child = spawn('go', ['build', '-v', '-trimpath', '-ldflags=-s -w', '-o', `${outDir}/`, './cmd/...'], {
      cwd: goModuleDir,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, CGO_ENABLED: '0' },
    });
    let count = 0;
    let lastErr = '';
    let tick = Date.now();
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      for (const line of chunk.split('\n')) {
        if (!line.trim()) continue;
        if (/^(go: downloading|[\w.\-/]+$)/.test(line)) count++;
        else lastErr = line;
        if (Date.now() - tick > 10_000) {
          tick = Date.now();
          log(`  ... ${count} packages downloaded/compiled so far`);
        }
      }
    });
    child.once('error', (err) => reject(new KitError(`go build could not start: ${err.message}`, { cause: err })));
    child.once('exit', (code) =>
      code === 0
        ? resolvePromise()
        : reject(new KitError(`go build of the kit binaries failed (exit ${code}): ${lastErr || 'see above'}; run it yourself with: cd ${goModuleDir} && go build ./cmd/...`)),
    );
  });
}

/** A directory lock (mkdir is atomic), so two test processes never build at the same time. */
export async function withDirLock<T>(lock: string, log: (line: string) => void, fn: () => Promise<T>): Promise<T> {
  let announced = false;
  for (;;) {
    try {
      await mkdir(lock);
      await writeFile(join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      const holder = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => '0'));
      if (holder > 0 && !alive(holder)) {
        await rm(lock, { recursive: true, force: true });
        continue;
      }
      if (!announced) {
        log(`waiting for another process that holds ${lock} (remove it if no build is running)`);
        announced = true;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
