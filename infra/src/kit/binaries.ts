import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { ensureBinary, progress } from '../components/cache.js';
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

/**
 * Version stamps, as upstream release builds set them: without them the server reports
 * v0.0.0-master and `helm install` of a chart with a kubeVersion constraint fails.
 */
function ldflags(): string {
  const [major, minor] = KUBE_VERSION.slice(1).split('.');
  const stamps = ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap(
    (pkg) => [
      `-X ${pkg}.gitVersion=${KUBE_VERSION}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
      `-X ${pkg}.gitTreeState=clean`,
    ],
  );
  return ['-s', '-w', ...stamps].join(' ');
}

/** Changes when the pinned versions, the mains or the build flags change, so the cache rebuilds. */
async function sourceKey(): Promise<string> {
  const h = createHash('sha256').update(ldflags());
  const files = ['go.mod', 'go.sum'];
  for (const dir of ['cmd/kube-apiserver', 'cmd/kubectl', 'cmd/etcd']) {
    for (const f of (await readdir(join(goModuleDir, dir))).sort()) files.push(join(dir, f));
  }
  for (const f of files) h.update(f).update(await readFile(join(goModuleDir, f)));
  return h.digest('hex').slice(0, 12);
}

function inDir(dir: string): KubeBinaries {
  return {
    kubeApiserver: join(dir, 'kube-apiserver'),
    etcd: join(dir, 'etcd'),
    kubectl: join(dir, 'kubectl'),
  };
}

/**
 * Returns runnable kube-apiserver, etcd and kubectl. MIRRORHUB_KUBE_BIN (or KUBEBUILDER_ASSETS)
 * may name a directory that already has them; otherwise they are built once from the Go module
 * into the cache (outside the repo) and reused afterwards.
 */
export async function ensureKubeBinaries(): Promise<KubeBinaries> {
  const given = process.env.MIRRORHUB_KUBE_BIN ?? process.env.KUBEBUILDER_ASSETS;
  if (given) {
    const bins = inDir(resolve(given));
    for (const path of [bins.kubeApiserver, bins.etcd]) {
      if (
        !(await access(path).then(
          () => true,
          () => false,
        ))
      ) {
        throw new KitError(
          `${path} not found: the directory in MIRRORHUB_KUBE_BIN/KUBEBUILDER_ASSETS must hold kube-apiserver and etcd (unset it to build them)`,
        );
      }
    }
    return bins;
  }
  const apiserver = await ensureBinary({
    name: 'kube',
    version: `${KUBE_VERSION}-etcd-${ETCD_VERSION}-${await sourceKey()}`,
    file: 'kube-apiserver',
    message: `building kube-apiserver ${KUBE_VERSION}, kubectl and etcd ${ETCD_VERSION} from Go modules (once; a cold build takes several minutes, see docs/kit.md)`,
    build: async (dest) => {
      await requireGo();
      await goBuild(dest);
    },
  });
  return inDir(dirname(apiserver));
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

function goBuild(outDir: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    // -v names each package as it is compiled: counted, that is the progress we show.
    const child = spawn(
      'go',
      ['build', '-v', '-trimpath', `-ldflags=${ldflags()}`, '-o', `${outDir}/`, './cmd/...'],
      {
        cwd: goModuleDir,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, CGO_ENABLED: '0' },
      },
    );
    let packages = 0;
    let lastErr = '';
    let shown = Date.now();
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      for (const line of chunk.split('\n')) {
        if (!line.trim()) continue;
        if (/^(go: downloading |[\w.\-~/@]+$)/.test(line)) packages++;
        else lastErr = line;
      }
      if (Date.now() - shown > 15_000) {
        shown = Date.now();
        progress(`go build: ${packages} packages downloaded or compiled so far`);
      }
    });
    child.once('error', (err) =>
      reject(new KitError(`go build could not start: ${err.message}`, { cause: err })),
    );
    child.once('exit', (code) =>
      code === 0
        ? resolvePromise()
        : reject(
            new KitError(
              `go build of the kit binaries failed (exit ${code}): ${lastErr || 'no output'}; run it yourself to see why: cd ${goModuleDir} && go build ./cmd/...`,
            ),
          ),
    );
  });
}
