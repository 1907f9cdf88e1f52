// kstatus: the status reader Flux (`wait: true`, health checks) and cli-utils use, built once
// from our own tiny main (infra/tools/kstatus, requiring sigs.k8s.io/cli-utils) with the Go
// toolchain and cached outside the repo, as the kit's kube-apiserver is. Tests pipe objects to
// it and read what Flux would conclude.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

import { binaryDir, ensureBinary, runCapture, runLogged, which } from './cache.js';

/** The cli-utils version infra/tools/kstatus/go.mod requires (the cache key includes go.sum). */
export const KSTATUS_CLI_UTILS_VERSION = 'v0.37.2';

/** The Go module of our kstatus main. */
export const kstatusModuleDir = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../tools/kstatus',
);

const ENV_VAR = 'MIRRORHUB_KSTATUS';

/** Changes when the main, the pinned modules or the version change, so the cache rebuilds. */
function version(): string {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum', 'main.go']) {
    h.update(f).update(readFileSync(path.join(kstatusModuleDir, f)));
  }
  return `${KSTATUS_CLI_UTILS_VERSION}-${h.digest('hex').slice(0, 12)}`;
}

/** Path of the kstatus binary: `$MIRRORHUB_KSTATUS`, else the cached build, else builds it once. */
export function ensureKstatus(): Promise<string> {
  const v = version();
  const logFile = `${binaryDir('kstatus', v)}.build.log`;
  return ensureBinary({
    name: 'kstatus',
    version: v,
    envVar: ENV_VAR,
    logFile,
    message: `building kstatus (sigs.k8s.io/cli-utils ${KSTATUS_CLI_UTILS_VERSION}) with go build (once)...`,
    build: async (destDir) => {
      const go = which('go');
      if (!go) {
        throw new Error(
          `go not found on PATH: install Go >= 1.24 (https://go.dev/dl) or set ${ENV_VAR} to a kstatus binary built from infra/tools/kstatus`,
        );
      }
      const out = path.join(destDir, 'kstatus');
      await runLogged(go, ['build', '-trimpath', '-ldflags=-s -w', '-o', out, '.'], {
        logFile,
        cwd: kstatusModuleDir,
        env: {
          ...process.env,
          CGO_ENABLED: '0',
          GOFLAGS: '-mod=readonly', // go.sum pins every module; nothing is vendored
          GO111MODULE: 'on',
        },
        timeoutMs: 20 * 60_000,
        hint: `check network access to the Go proxy, or set ${ENV_VAR} to a kstatus binary`,
      });
      // Prove the binary runs before it is marked complete: an empty input is no object.
      await runCapture(out, [], { timeoutMs: 30_000 });
    },
  });
}
