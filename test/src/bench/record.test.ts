// How `npm run bench` rewrites docs/BENCHMARKS.md: a run of one benchmark replaces its table at
// the top and its detail under Method, and leaves every other byte of the page as it was. Pure
// (no cluster), beside the integration suites only because test/src is where the bench lives.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { EMPTY_DOC, figureTable, recordSection, SECTIONS, type DocSection } from './record.js';

const page = readFileSync(join(import.meta.dirname, '../../../docs/BENCHMARKS.md'), 'utf8');

/** The text between a block's markers, as recordSection would have written it. */
function between(doc: string, begin: string, end: string): string {
  const i = doc.indexOf(begin);
  const j = doc.indexOf(end, i);
  expect(i, begin).toBeGreaterThanOrEqual(0);
  expect(j, end).toBeGreaterThan(i);
  return doc.slice(i + begin.length, j);
}

/** The section as the page holds it now. */
function current(doc: string, name: string): DocSection {
  return {
    name,
    summary: between(doc, `<!-- bench:${name} -->`, `<!-- /bench:${name} -->`),
    method: between(doc, `<!-- method:${name} -->`, `<!-- /method:${name} -->`),
  };
}

const fresh = (name: string): DocSection => ({
  name,
  summary: `## ${name}\n\nCommand: \`npm run bench -- --only ${name}\`.\n\n| figure | now |\n| --- | --- |\n| x | 1 ms |\n`,
  method: `### ${name}\n\nSetup: new.\n`,
});

describe('docs/BENCHMARKS.md as the bench writes it', () => {
  it('opens with the tables, then Method: every benchmark has its table before Method and its detail after', () => {
    const method = page.indexOf('\n## Method\n');
    expect(method).toBeGreaterThan(0);
    for (const name of SECTIONS) {
      expect(page.indexOf(`<!-- bench:${name} -->`), name).toBeLessThan(method);
      expect(page.indexOf(`<!-- method:${name} -->`), name).toBeGreaterThan(method);
    }
  });

  it.each(SECTIONS)('re-recording %s as it stands leaves the page byte-identical', (name) => {
    expect(recordSection(page, current(page, name))).toBe(page);
  });

  it.each(SECTIONS)('a new run of %s changes its two blocks and nothing else', (name) => {
    const next = recordSection(page, fresh(name));
    const s = fresh(name);
    expect(current(next, name)).toEqual({
      name,
      summary: `\n${s.summary.trim()}\n\n`,
      method: `\n${s.method.trim()}\n\n`,
    });
    // Putting the old blocks back gives the old page: nothing outside them moved.
    expect(recordSection(next, current(page, name))).toBe(page);
    for (const other of SECTIONS.filter((o) => o !== name))
      expect(current(next, other)).toEqual(current(page, other));
  });

  it('engine and engine-one do not take each other’s blocks', () => {
    const next = recordSection(page, fresh('engine'));
    expect(current(next, 'engine-one')).toEqual(current(page, 'engine-one'));
    expect(next.split('<!-- bench:engine -->').length).toBe(2);
  });

  it('a benchmark new to the page gets its table last before Method and its detail last', () => {
    const next = recordSection(page, fresh('quota'));
    const method = next.indexOf('\n## Method\n');
    const table = next.indexOf('<!-- bench:quota -->');
    expect(table).toBeLessThan(method);
    expect(next.slice(table).startsWith(`<!-- bench:quota -->\n## quota`)).toBe(true);
    expect(next.indexOf('<!-- /bench:quota -->\n\n## Method\n')).toBeGreaterThan(0);
    expect(next.trimEnd().endsWith('<!-- /method:quota -->')).toBe(true);
    for (const other of SECTIONS) expect(current(next, other)).toEqual(current(page, other));
  });

  it('starts a page from nothing, and a page without Method gets one', () => {
    const first = recordSection(undefined, fresh('signing'));
    expect(first.startsWith(EMPTY_DOC.split('\n')[0]!)).toBe(true);
    expect(first.indexOf('<!-- bench:signing -->')).toBeLessThan(first.indexOf('## Method'));
    expect(first.indexOf('<!-- method:signing -->')).toBeGreaterThan(first.indexOf('## Method'));
    const second = recordSection(first, fresh('status'));
    expect(second.indexOf('<!-- /bench:signing -->')).toBeLessThan(
      second.indexOf('<!-- bench:status -->'),
    );
    expect(recordSection(second, fresh('status'))).toBe(second);

    const bare = recordSection('# Benchmarks\n\nSome words.\n', fresh('load'));
    expect(bare.indexOf('Some words.')).toBeLessThan(bare.indexOf('<!-- bench:load -->'));
    expect(bare.indexOf('<!-- bench:load -->')).toBeLessThan(bare.indexOf('## Method'));
  });

  it('refuses a page whose block has lost its end marker instead of eating the rest', () => {
    const broken = page.replace('<!-- /bench:vault -->', '');
    expect(() => recordSection(broken, fresh('vault'))).toThrow(/without <!-- \/bench:vault -->/);
  });
});

describe('figureTable', () => {
  it('has target and verdict columns when a row has a target, one verdict per part', () => {
    expect(
      figureTable([
        { figure: 'a', now: '1 / 2', target: 'p50 < 1 / p99 < 3', met: [false, true] },
        { figure: 'b', now: '3' },
        { figure: 'c', now: '4', target: '< 5', met: true },
      ]),
    ).toEqual([
      '| figure | now | target | met or missed |',
      '| --- | --- | --- | --- |',
      '| a | 1 / 2 | p50 < 1 / p99 < 3 | **missed** / met |',
      '| b | 3 |  |  |',
      '| c | 4 | < 5 | met |',
    ]);
  });

  it('is figure and now alone when no row has a target', () => {
    expect(figureTable([{ figure: 'sign', now: '45.0 µs' }])).toEqual([
      '| figure | now |',
      '| --- | --- |',
      '| sign | 45.0 µs |',
    ]);
  });
});
