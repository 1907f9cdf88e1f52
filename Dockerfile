# syntax=docker/dockerfile:1.7
#
# One image for every mirrorhub process. The entrypoint is node; the chart picks the program:
#   hub:   args ["/app/hub/dist/main.js"]    (the default CMD)
#   agent: args ["/app/agent/dist/main.js"]
#   hub and this cluster's agent in one process (hub chart, localAgent.inProcess):
#          args ["/app/standalone/dist/main.js"]
# Why one image: hub and agent share every dependency (they differ only by their own code),
# so two images would ship the same dependencies twice, and one tag means hub and agents of a
# release can never drift apart. One build, one scan, one signature.
#
#   docker build -t mirrorhub:0.1.0 .
#   docker run --rm --read-only mirrorhub:0.1.0                       # the hub
#   docker run --rm --read-only mirrorhub:0.1.0 /app/agent/dist/main.js  # the agent
#
# Pin the base images by digest in CI (FROM ...@sha256:...) for reproducible builds.
#
# Node.js 24 (LTS, supported until April 2028): 20 is past end of life (April 2026), 22 ends in
# April 2027 and the AWS SDK requires Node >= 22 from January 2027; 26 only became LTS in
# October 2026. Build and runtime use the same major, and `npm test` runs the unit and engine
# suites on this exact line too (NODE_LTS in scripts/run.mjs): bump them together.

ARG NODE_IMAGE=node:24-bookworm-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot
ARG PNPM_VERSION=9.15.9

# ---- manifests: pnpm and the workspace manifests, shared by the two stages below ------------
FROM ${NODE_IMAGE} AS manifests
ARG PNPM_VERSION
ENV CI=true PNPM_HOME=/pnpm PATH=/pnpm:$PATH
# npm, not corepack: corepack's signature check fails behind some proxies; the version is pinned.
RUN npm install --global --no-fund --no-audit "pnpm@${PNPM_VERSION}"
WORKDIR /app
# Manifests first: the dependency layers are rebuilt only when they or the lockfile change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY shared/package.json shared/
COPY hub/package.json hub/
COPY agent/package.json agent/
COPY standalone/package.json standalone/

# ---- build: compile shared, hub and agent with tsc -b ----------------------------------------
FROM manifests AS build
# What hub and agent need (infra/ and test/ are not in the context), plus the root package's
# TypeScript. --frozen-lockfile: the lockfile must be current, nothing is resolved anew.
RUN --mount=type=cache,id=mirrorhub-pnpm-store,target=/pnpm/store \
    pnpm install --frozen-lockfile --ignore-scripts --store-dir /pnpm/store \
      --filter "mirrorhub" --filter "@mirrorhub/hub..." --filter "@mirrorhub/agent..." \
      --filter "@mirrorhub/standalone..."
COPY tsconfig.base.json ./
COPY shared/tsconfig.json shared/
COPY hub/tsconfig.json hub/
COPY agent/tsconfig.json agent/
COPY standalone/tsconfig.json standalone/
COPY shared/src shared/src
COPY hub/src hub/src
COPY agent/src agent/src
COPY standalone/src standalone/src
# The dashboard page: type-checked and bundled (preact, esbuild: build-time only) into hub/web/dist.
COPY hub/web hub/web
# Test helpers (shared/src/testing: fakes, client-node glue) are compiled with shared but loaded
# by no production module (shared/src/imports.test.ts proves it); they do not ship.
RUN ./node_modules/.bin/tsc -b hub agent standalone && rm -rf shared/dist/testing \
 && node hub/web/build.mjs

# ---- prod: production dependencies only, plus the compiled output ----------------------------
FROM manifests AS prod
# A separate --prod install, not the build stage's node_modules: no TypeScript, eslint or test
# tools reach the image. This is what `pnpm deploy --prod` would give per app, once for both:
# pnpm's layout (node_modules/.pnpm plus symlinks; hub and agent link @mirrorhub/shared to
# /app/shared), which node resolves as usual.
RUN --mount=type=cache,id=mirrorhub-pnpm-store,target=/pnpm/store \
    pnpm install --prod --frozen-lockfile --ignore-scripts --store-dir /pnpm/store \
      --filter "@mirrorhub/hub..." --filter "@mirrorhub/agent..." --filter "@mirrorhub/standalone..."
COPY --from=build /app/shared/dist shared/dist
COPY --from=build /app/hub/dist hub/dist
COPY --from=build /app/hub/web/dist hub/web/dist
COPY --from=build /app/agent/dist agent/dist
COPY --from=build /app/standalone/dist standalone/dist
# Nothing the runtime reads: type declarations, dependencies' source maps and docs, the lockfile.
# Kept: package.json files (node reads "exports" and "type"; hub/agent read their version) and
# our own .js.map files, for stack traces that name src/*.ts lines with --enable-source-maps
# (off by default: node would hold every loaded module's map in memory; charts' nodeOptions).
RUN find shared/dist hub/dist agent/dist standalone/dist -type f \
      \( -name '*.d.ts' -o -name '*.d.ts.map' -o -name '.tsbuildinfo' \) -delete \
 && find node_modules/.pnpm -type f \
      \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' -o -name '*.md' \
         -o -name '*.ts' \) -delete \
 && rm -f pnpm-lock.yaml pnpm-workspace.yaml

# ---- runtime: distroless node, no shell, no package manager ----------------------------------
FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="mirrorhub" \
      org.opencontainers.image.description="Keeps Kubernetes Secrets and ConfigMaps in sync across namespaces and clusters (hub and agent)." \
      org.opencontainers.image.version="0.1.0"
# Owned by root, read-only to the process: it cannot change its own code, and it writes nothing
# at runtime (logs go to stdout), so readOnlyRootFilesystem needs no writable volume.
COPY --from=prod --chown=0:0 /app /app
WORKDIR /app
ENV NODE_ENV=production \
    NODE_OPTIONS=--no-node-snapshot
# 65532 = distroless "nonroot"; numeric, so runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/nodejs/bin/node"]
CMD ["/app/hub/dist/main.js"]
