// Builds the dashboard page into hub/web/dist (served by hub/src/dashboard/server.ts):
// type-checks hub/web with tsc, bundles src/main.tsx with esbuild into dist/app.js, and copies
// index.html and app.css beside it. Exits non-zero on any error. Run by `npm run build`.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const web = dirname(fileURLToPath(import.meta.url));
const root = join(web, '..', '..');
const dist = join(web, 'dist');

// esbuild strips types without checking them: tsc does that first.
const tsc = spawnSync(
  process.execPath,
  [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(web, 'tsconfig.json'), '--noEmit'],
  { stdio: 'inherit' },
);
if (tsc.status !== 0) {
  console.error('hub/web: type errors (see above)');
  process.exit(1);
}

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
try {
  await build({
    entryPoints: [join(web, 'src/main.tsx')],
    outfile: join(dist, 'app.js'),
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: ['es2022'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    logLevel: 'warning',
  });
} catch {
  // esbuild has printed the errors.
  process.exit(1);
}
for (const f of ['index.html', 'app.css']) copyFileSync(join(web, f), join(dist, f));

const size = (f) => statSync(join(dist, f)).size;
console.log(
  `hub/web: ${relative(root, dist)}/app.js ${size('app.js')} B, app.css ${size('app.css')} B`,
);
