// helm, built once from source with the Go toolchain and cached outside the repo.

import * as path from 'node:path';
import { binaryDir, ensureBinary, runCapture, runLogged, which } from './cache.js';

export const HELM_VERSION = 'v3.17.4';
/** helm v3.17.4's go.mod requires Go 1.23. */
const HELM_MIN_GO = '1.23';
/**
 * Kubernetes version helm reports as `.Capabilities.KubeVersion` for `helm template` and lint.
 * helm's Makefile derives it from its k8s.io/client-go (v0.32.2 for v3.17.4 -> 1.32); without
 * these ldflags a source build would claim v1.20.0 and charts with `kubeVersion: >=1.2x` fail.
 */
const HELM_K8S_MAJOR = '1';
const HELM_K8S_MINOR = '32';

const ENV_VAR = 'MIRRORHUB_HELM';

/** Path of a helm binary: `$MIRRORHUB_HELM`, else the cached build, else builds it (minutes, once). */
export function ensureHelm(): Promise<string> {
  return ensureBinary({
    name: 'helm',
    version: HELM_VERSION,
    envVar: ENV_VAR,
    logFile: buildLog(),
    message: `building helm ${HELM_VERSION} with go install (once: ~3-5 min with cold Go caches on 2 cores, seconds with warm ones)...`,
    build: buildHelm,
  });
}

/** Next to (not inside) the versioned folder, so a failed build keeps its log. */
function buildLog(): string {
  return `${binaryDir('helm', HELM_VERSION)}.build.log`;
}

async function buildHelm(destDir: string): Promise<void> {
  const go = which('go');
  if (!go) {
    throw new Error(
      `go not found on PATH: install Go >= ${HELM_MIN_GO} (https://go.dev/dl) or set ${ENV_VAR} to a helm binary`,
    );
  }
  const ldflags = [
    '-s',
    '-w',
    `-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`,
    '-X helm.sh/helm/v3/internal/version.gitTreeState=clean',
    `-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=${HELM_K8S_MAJOR}`,
    `-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${HELM_K8S_MINOR}`,
    `-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=${HELM_K8S_MAJOR}`,
    `-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM_K8S_MINOR}`,
  ].join(' ');
  const logFile = buildLog();
  await runLogged(
    go,
    ['install', '-trimpath', `-ldflags=${ldflags}`, `helm.sh/helm/v3/cmd/helm@${HELM_VERSION}`],
    {
      logFile,
      cwd: destDir, // outside any module: `go install pkg@version` ignores the current module anyway
      env: {
        ...process.env,
        GOBIN: destDir,
        CGO_ENABLED: '0',
        GOFLAGS: '', // a stray -mod=vendor or -modfile would break a module-aware install
        GO111MODULE: 'on',
      },
      timeoutMs: 20 * 60_000,
      hint: `check network access to the Go proxy and Go >= ${HELM_MIN_GO}, or set ${ENV_VAR} to a helm binary`,
    },
  );
  // Prove the binary runs before it is marked complete.
  await runCapture(path.join(destDir, 'helm'), ['version', '--short'], { timeoutMs: 30_000 });
}
