// What a process pays for its static imports. @kubernetes/client-node (its whole generated API)
// and the AWS SDK must only be loaded on demand by hub and agent (k8s/access.ts says why), and
// nothing of shared's testing/ folder may be reached from production code at all; the import
// tests of shared, hub, agent and standalone walk the import graph with these walkers. Nor may
// production import node:http, node:crypto, node:fs or node:util as ES modules (COSTLY_AS_ESM).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const SHARED_SRC = resolve(dirname(new URL(import.meta.url).pathname), '..');
const REPO = resolve(SHARED_SRC, '../..');

/** Packages no controller may load by a static import. */
export const HEAVY: readonly RegExp[] = [
  /^@kubernetes\/client-node$/,
  /^@aws-sdk\//,
  /^@smithy\//,
  /^@aws-crypto\//,
];

/**
 * Built-in modules production code takes from shared/src/kit/runtime/builtins.ts instead of importing
 * them as ES modules: the import makes Node load parts of itself mirrorhub never uses (undici,
 * WebCrypto, ...; builtins.ts says which and what they cost).
 */
export const COSTLY_AS_ESM: readonly RegExp[] = [/^(node:)?(http|crypto|fs|util)$/];

/** The costly built-ins `text` (a module's source) imports as ES modules, by specifier. */
export function costlyBuiltinImports(text: string): string[] {
  return valueImports(text).filter((spec) => COSTLY_AS_ESM.some((re) => re.test(spec)));
}

/** shared's test helpers (this folder): for tests only. */
export const TESTING_DIR = dirname(new URL(import.meta.url).pathname);

/** The .ts sources of a folder, tests excluded. */
export function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

/**
 * Static value imports and re-exports (not `import type`, not `import(...)`). `import { type A }
 * from 'm'` counts: with verbatimModuleSyntax it still loads `m`.
 */
function valueImports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(?!type\s)[^;]*?from\s+'([^']+)'/gms)) {
    out.push(m[1]!);
  }
  return out;
}

/** Every import, also `import type`, `export ... from` and `import('...')`. */
function anyImports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)'([^']+)'/gm)) {
    out.push(m[1]!);
  }
  return out;
}

/**
 * The .ts file an import names when it is ours (relative, or a workspace package such as
 * @mirrorhub/shared, whose exports map `./x` to `src/x.ts`); else undefined.
 */
export function resolveOurs(from: string, spec: string): string | undefined {
  const pkg = /^@mirrorhub\/([a-z]+)(?:\/(.+))?$/.exec(spec);
  if (pkg) return join(REPO, pkg[1]!, 'src', `${pkg[2] ?? 'index'}.ts`);
  if (spec.startsWith('.')) return resolve(dirname(from), spec.replace(/\.js$/, '.ts'));
  return undefined;
}

/** Every heavy package reachable from `file` by static imports, with the chain that reaches it. */
export function heavyChains(file: string): string[] {
  const found: string[] = [];
  const seen = new Set<string>();
  const visit = (f: string, chain: string[]) => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const spec of valueImports(readFileSync(f, 'utf8'))) {
      if (HEAVY.some((re) => re.test(spec))) {
        found.push([...chain, spec].join(' -> '));
        continue;
      }
      const next = resolveOurs(f, spec);
      if (next && existsSync(next)) visit(next, [...chain, relative(REPO, next)]);
    }
  };
  visit(file, []);
  return found;
}

/**
 * Every way `file` reaches shared's testing/ folder, by any import (types and dynamic imports
 * too: production code never depends on test code), followed through our own modules.
 */
export function testingChains(file: string): string[] {
  const found: string[] = [];
  const seen = new Set<string>();
  const visit = (f: string, chain: string[]) => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const spec of anyImports(readFileSync(f, 'utf8'))) {
      const next = resolveOurs(f, spec);
      if (!next) continue;
      const step = [...chain, relative(REPO, next)];
      if (next.startsWith(TESTING_DIR + sep)) found.push(step.join(' -> '));
      else if (existsSync(next)) visit(next, step);
    }
  };
  visit(file, []);
  return found;
}

export { SHARED_SRC };
