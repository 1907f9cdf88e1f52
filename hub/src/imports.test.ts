// The hub's memory budget (120 MB) leaves no room for @kubernetes/client-node's generated API
// (~70 MB resident once imported) or the AWS SDK (~20 MB). They must only ever be loaded on
// demand (a kubeconfig with an exec plugin; the AWS module with the first EKS MirrorCluster, by
// dynamic import), never by a static import on the hub's path — including the shared modules it
// imports, followed transitively.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = new URL('.', import.meta.url).pathname;
const SHARED_SRC = new URL('../../shared/src/', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

/**
 * Static value imports and re-exports (not `import type`, not `import(...)`) and the module they
 * name. `import { type A } from 'm'` counts: with verbatimModuleSyntax it still loads `m`.
 */
function valueImports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^import\s+(?!type\s)[^;]*?from\s+'([^']+)'/gms)) out.push(m[1]!);
  for (const m of text.matchAll(/^export\s+(?!type\s)[^;]*?from\s+'([^']+)'/gms)) out.push(m[1]!);
  return out;
}

const HEAVY = [/^@kubernetes\/client-node$/, /^@aws-sdk\//, /^@smithy\//, /^@aws-crypto\//];

/** The .ts file an import names, when it is one of ours; undefined for a package. */
function resolveOurs(from: string, spec: string): string | undefined {
  if (spec === '@mirrorhub/shared') return join(SHARED_SRC, 'index.ts');
  if (spec.startsWith('@mirrorhub/shared/')) return join(SHARED_SRC, `${spec.slice(18)}.ts`);
  if (spec.startsWith('.')) return resolve(dirname(from), spec.replace(/\.js$/, '.ts'));
  return undefined;
}

/** Every heavy package reachable from `file` by static imports, with the chain that reaches it. */
function heavyChains(file: string): string[] {
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
      if (next && existsSync(next)) visit(next, [...chain, relative(resolve(SRC, '../..'), next)]);
    }
  };
  visit(file, []);
  return found;
}

describe('hub imports', () => {
  it.each(sources(SRC).map((f) => [relative(SRC, f), f]))(
    '%s loads neither client-node nor the AWS SDK, also through shared',
    (_, file) => {
      expect(heavyChains(file)).toEqual([]);
    },
  );

  it('the check sees through shared (the root of shared loads client-node)', () => {
    const probe = join(SRC, '..', 'package.json'); // any file: we only need a `from` path
    expect(resolveOurs(probe, '@mirrorhub/shared/k8s/client')).toBe(
      join(SHARED_SRC, 'k8s/client.ts'),
    );
    expect(heavyChains(join(SHARED_SRC, 'k8s/client.ts'))).toContain('@kubernetes/client-node');
  });
});
