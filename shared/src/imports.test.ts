// What a process pays for importing shared. @kubernetes/client-node (~70 MB resident: its whole
// generated API) and the AWS SDK (~20 MB) may only be reached, by static imports, from the
// modules that really use them (k8s/client, k8s/fake and aws/*; the root re-exports k8s/ but
// not aws/). Everything a controller needs at run time — the lean API access, REST client, Events,
// list/watch, work queue, leader election, logging, metrics — must not load either.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = new URL('.', import.meta.url).pathname;
const HEAVY = [/^@kubernetes\/client-node$/, /^@aws-sdk\//, /^@smithy\//, /^@aws-crypto\//];

/** Static value imports and re-exports; `import type` and `import()` load nothing at start. */
function valueImports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(?!type\s)[^;]*?from\s+'([^']+)'/gms)) {
    out.push(m[1]!);
  }
  return out;
}

/** Heavy packages reachable from `file`, each with the chain of modules that reaches it. */
function heavyChains(file: string): string[] {
  const found: string[] = [];
  const seen = new Set<string>();
  const visit = (f: string, chain: string[]) => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const spec of valueImports(readFileSync(f, 'utf8'))) {
      if (HEAVY.some((re) => re.test(spec))) found.push([...chain, spec].join(' -> '));
      else if (spec.startsWith('.')) {
        const next = resolve(dirname(f), spec.replace(/\.js$/, '.ts'));
        if (existsSync(next)) visit(next, [...chain, relative(SRC, next)]);
      }
    }
  };
  visit(file, []);
  return found;
}

describe('shared imports', () => {
  it.each([
    'runtime/index',
    'k8s/access',
    'k8s/rest',
    'k8s/events',
    'k8s/listwatch',
    'k8s/watcher',
    'k8s/workqueue',
    'mirror/index',
    'api/helpers',
  ])('%s loads neither client-node nor the AWS SDK', (mod) => {
    expect(heavyChains(resolve(SRC, `${mod}.ts`))).toEqual([]);
  });

  it('the package root loads client-node but not the AWS SDK (that is aws/index)', () => {
    const chains = heavyChains(resolve(SRC, 'index.ts'));
    expect(chains.filter((c) => !c.endsWith('@kubernetes/client-node'))).toEqual([]);
  });

  it('the check sees a heavy import through re-exports', () => {
    expect(heavyChains(resolve(SRC, 'aws/index.ts')).join('\n')).toMatch(
      /cluster-access\.ts -> @aws-sdk\/client-eks/,
    );
  });
});
