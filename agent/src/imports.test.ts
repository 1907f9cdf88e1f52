// The agent's memory budget (80 MB with 20k copies) leaves no room for @kubernetes/client-node's
// generated API (~70 MB resident once imported) or the AWS SDK. They must only ever be loaded on
// demand (kubeconfig files, leader election), never by a static import on the agent's path.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = new URL('.', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

/** Static value imports (not `import type`, not `import(...)`) and the module they name. */
function valueImports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^import\s+(?!type\s)[^;]*?from\s+'([^']+)'/gms)) out.push(m[1]!);
  for (const m of text.matchAll(/^export\s+(?!type\s)[^;]*?from\s+'([^']+)'/gms)) out.push(m[1]!);
  return out;
}

const HEAVY = [
  /^@kubernetes\/client-node$/,
  /^@mirrorhub\/shared$/, // the root re-exports aws/ and k8s/client
  /^@mirrorhub\/shared\/(index|aws\/.*|k8s\/index|k8s\/client|k8s\/fake|runtime\/index|runtime\/leader)$/,
];

describe('agent imports', () => {
  it.each(sources(SRC).map((f) => [relative(SRC, f), f]))(
    '%s loads neither client-node nor the AWS SDK',
    (_, file) => {
      const heavy = valueImports(readFileSync(file, 'utf8')).filter((m) =>
        HEAVY.some((re) => re.test(m)),
      );
      expect(heavy).toEqual([]);
    },
  );
});
