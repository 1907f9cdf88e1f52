// `pnpm gen`: writes shared/src/api/types.gen.ts and the CRD YAML under charts/*/crds/ from
// shared/src/api/schema.ts.
//
// Node 20 cannot import .ts, so the generator (and only the generator: schema.ts, openapi.ts,
// generate.ts) is compiled with tsc into a cache directory first. It does not depend on the rest
// of shared building, so gen works even while types.gen.ts is missing or stale.
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const shared = join(dirname(fileURLToPath(import.meta.url)), '..');
const root = join(shared, '..');
const out = join(shared, 'node_modules', '.cache', 'gen-api');

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
try {
  execFileSync(
    process.execPath,
    [
      tsc,
      join(shared, 'src', 'api', 'generate.ts'),
      ...['--outDir', out, '--rootDir', join(shared, 'src')],
      ...['--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022'],
      ...['--strict', '--skipLibCheck', '--types', 'node'],
    ],
    { stdio: 'inherit' },
  );
} catch {
  process.stderr.write('gen: compiling the schema failed (see above)\n');
  process.exit(1);
}

const { generateApi } = await import(pathToFileURL(join(out, 'api', 'generate.js')).href);
let wrote = 0;
for (const file of generateApi()) {
  const path = join(root, file.path);
  const before = await readFile(path, 'utf8').catch(() => undefined);
  if (before === file.content) continue;
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, file.content);
  process.stdout.write(`wrote ${file.path}\n`);
  wrote++;
}
if (wrote === 0) process.stdout.write('API types and CRDs are up to date\n');
