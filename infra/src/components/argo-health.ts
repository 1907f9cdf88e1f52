// argo-health: a tiny Go program of ours (infra/tools/argo-health) that runs an Argo CD health
// script with gopher-lua, the interpreter Argo CD embeds, so the chart's Lua is tested as Argo
// CD will run it. Built once with the Go toolchain and cached outside the repo, like helm.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { binaryDir, ensureBinary, runLogged, which } from './cache.js';

/** The gopher-lua release infra/tools/argo-health/go.mod pins (Argo CD's own go.mod pins it too). */
export const GOPHER_LUA_VERSION = 'v1.1.2';
const ENV_VAR = 'MIRRORHUB_ARGO_HEALTH';
const MIN_GO = '1.23';

/** The Go module's folder: infra/tools/argo-health, from src/ and from dist/ alike. */
export function argoHealthSource(): string {
  return fileURLToPath(new URL('../../tools/argo-health/', import.meta.url));
}

/** gopher-lua's version plus a digest of our sources, so an edited main.go is rebuilt. */
function version(): string {
  const dir = argoHealthSource();
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum', 'main.go']) h.update(readFileSync(path.join(dir, f)));
  return `${GOPHER_LUA_VERSION}-${h.digest('hex').slice(0, 12)}`;
}

/** Path of the argo-health binary: `$MIRRORHUB_ARGO_HEALTH`, else the cached build, else builds it. */
export function ensureArgoHealth(): Promise<string> {
  const v = version();
  const logFile = `${binaryDir('argo-health', v)}.build.log`;
  return ensureBinary({
    name: 'argo-health',
    version: v,
    envVar: ENV_VAR,
    logFile,
    message: `building argo-health (gopher-lua ${GOPHER_LUA_VERSION}) with go build (once)...`,
    build: async (destDir) => {
      const go = which('go');
      if (!go) {
        throw new Error(
          `go not found on PATH: install Go >= ${MIN_GO} (https://go.dev/dl) or set ${ENV_VAR} to an argo-health binary`,
        );
      }
      await runLogged(go, ['build', '-trimpath', '-o', path.join(destDir, 'argo-health'), '.'], {
        logFile,
        cwd: argoHealthSource(),
        env: {
          ...process.env,
          CGO_ENABLED: '0',
          // go.sum is committed: never rewrite it during a test run; no VCS stamp (a tarball has none)
          GOFLAGS: '-mod=readonly -buildvcs=false',
          GO111MODULE: 'on',
        },
        timeoutMs: 10 * 60_000,
        hint: `check network access to the Go proxy and Go >= ${MIN_GO}, or set ${ENV_VAR}`,
      });
    },
  });
}
