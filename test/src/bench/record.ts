/**
 * How a benchmark's figures land in docs/BENCHMARKS.md. The page opens with one table per
 * benchmark, then a Method part; a run replaces its own table and its own detail under Method
 * and leaves every other byte alone, so a reader always finds the current figures first and
 * the history stays in git. Pure: old page in, new page out (main.ts reads and writes the file).
 */

/** What `--only` takes: each benchmark that has a table on the page. */
export const SECTIONS: readonly string[] = [
  'load',
  'engine',
  'engine-one',
  'engine-100k',
  'multicluster',
  'scale',
  'fleet',
  'growth',
  'signing',
  'status',
  'vault',
  'idle',
];

/** One benchmark's part of the page. */
export interface DocSection {
  /** What `--only` takes: names the markers around both parts. */
  name: string;
  /** `## <title>`, the command and machine, and the table of figures: the top of the page. */
  summary: string;
  /** `### <title>`, the setup and the detail tables: under Method. */
  method: string;
}

/** One row of a benchmark's table. */
export interface Figure {
  figure: string;
  /** The figure as this run measured it. */
  now: string;
  /** What the project asked for, where it set a target. */
  target?: string;
  /** Whether `now` meets `target`: one verdict, or one per part (`p50 / p99`). */
  met?: boolean | readonly boolean[];
}

export const METHOD_HEADING = '## Method';

/** The page before any benchmark has written to it (a fresh clone that lost the file). */
export const EMPTY_DOC = [
  '# Benchmarks',
  '',
  'Written by `npm run bench`: one table per benchmark, then how each is measured. A run replaces its own table and its own part of Method.',
  '',
  METHOD_HEADING,
  '',
].join('\n');

const summaryMarkers = (name: string) => [`<!-- bench:${name} -->`, `<!-- /bench:${name} -->`];
const methodMarkers = (name: string) => [`<!-- method:${name} -->`, `<!-- /method:${name} -->`];

/**
 * The page with `s` in it: its table replaces the one between its markers at the top (or is
 * added last before Method), its detail the one between its markers under Method (or is added
 * at the end). Everything outside those two blocks stays byte for byte.
 */
export function recordSection(doc: string | undefined, s: DocSection): string {
  let page = doc ?? EMPTY_DOC;
  if (methodStart(page) < 0) page = `${page.trimEnd()}\n\n${METHOD_HEADING}\n`;
  page = replaceBlock(page, summaryMarkers(s.name), s.summary, (p) => methodStart(p));
  return replaceBlock(page, methodMarkers(s.name), s.method, (p) => p.length);
}

/** Where the Method heading's line starts, or -1. */
function methodStart(page: string): number {
  if (page.startsWith(`${METHOD_HEADING}\n`)) return 0;
  const i = page.indexOf(`\n${METHOD_HEADING}\n`);
  return i < 0 ? -1 : i + 1;
}

function replaceBlock(
  page: string,
  [begin, end]: string[],
  body: string,
  insertAt: (page: string) => number,
): string {
  const block = `${begin}\n${body.trim()}\n\n${end}`;
  const i = page.indexOf(begin!);
  if (i >= 0) {
    const j = page.indexOf(end!, i + begin!.length);
    if (j < 0) throw new Error(`docs/BENCHMARKS.md has ${begin} without ${end}`);
    return page.slice(0, i) + block + page.slice(j + end!.length);
  }
  const at = insertAt(page);
  if (at >= page.length) return `${page.trimEnd()}\n\n${block}\n`;
  return `${page.slice(0, at)}${block}\n\n${page.slice(at)}`;
}

/**
 * A benchmark's table: figure and the figure now, plus target and verdict when any row has a
 * target (signing, start-up memory and status writes have none).
 */
export function figureTable(rows: readonly Figure[]): string[] {
  const targets = rows.some((r) => r.target !== undefined);
  const verdict = (m: Figure['met']) =>
    m === undefined
      ? ''
      : (typeof m === 'boolean' ? [m] : m).map((x) => (x ? 'met' : '**missed**')).join(' / ');
  return targets
    ? [
        '| figure | now | target | met or missed |',
        '| --- | --- | --- | --- |',
        ...rows.map((r) => `| ${r.figure} | ${r.now} | ${r.target ?? ''} | ${verdict(r.met)} |`),
      ]
    : ['| figure | now |', '| --- | --- |', ...rows.map((r) => `| ${r.figure} | ${r.now} |`)];
}
