// #/matrix — mirrors down, clusters across (grouped by a cluster label): one coloured cell per
// mirror and cluster.

import type { CellState, Matrix, MatrixCell } from '../../src/dashboard/types.js';
import { mirrorHref } from './route.js';
import { Empty, LabelKeySelect } from './ui.js';

const LEGEND: [CellState, string][] = [
  ['synced', 'every selected namespace has the current copy'],
  ['stale', 'the agent has not synced the current content (or not reported)'],
  ['failing', 'some copies failed, or the mirror is in Error'],
  ['conflict', 'a namespace already has an object of that name'],
  ['denied', "refused by the agent's policy"],
  ['none', 'not a destination of this mirror'],
];

function cellTitle(c: MatrixCell): string {
  if (c.state === 'none') return c.message ?? 'not a destination';
  const counts = `${c.synced}/${c.namespaces} namespaces synced`;
  return c.message ? `${counts}: ${c.message}` : counts;
}

/** Runs of adjacent columns with the same group: one header cell each. */
function groupRuns(m: Matrix): { group: string; span: number }[] {
  const runs: { group: string; span: number }[] = [];
  for (const col of m.columns) {
    const last = runs[runs.length - 1];
    if (last && last.group === col.group) last.span++;
    else runs.push({ group: col.group, span: 1 });
  }
  return runs;
}

export function MatrixPage({
  matrix,
  onGroupBy,
}: {
  matrix: Matrix;
  onGroupBy: (key: string | undefined) => void;
}) {
  const keys =
    matrix.groupKeys.includes(matrix.groupBy) || matrix.groupBy === ''
      ? matrix.groupKeys
      : [matrix.groupBy, ...matrix.groupKeys];
  return (
    <section class="page matrix">
      <h1>Matrix</h1>
      <div class="toolbar">
        <LabelKeySelect
          label="Group clusters by"
          keys={keys}
          value={matrix.groupBy}
          onChange={(k) => onGroupBy(k || undefined)}
        />
        <ul class="legend" data-testid="legend">
          {LEGEND.map(([state, text]) => (
            <li key={state} title={text}>
              <span class={`swatch cell-${state}`} />
              {state}
            </li>
          ))}
        </ul>
      </div>
      {matrix.rows.length === 0 || matrix.columns.length === 0 ? (
        <Empty>
          {matrix.rows.length === 0 ? 'No mirror is visible to you.' : 'No cluster is visible.'}
        </Empty>
      ) : (
        <div class="scroll">
          <table class="matrix-table" data-testid="matrix" data-group-by={matrix.groupBy}>
            <thead>
              <tr class="groups">
                <th rowSpan={2} class="corner">
                  Mirror
                </th>
                {groupRuns(matrix).map((run, i) => (
                  <th key={i} colSpan={run.span} data-group={run.group} class="group">
                    {run.group ||
                      (matrix.groupBy ? (
                        <span class="muted">no {matrix.groupBy}</span>
                      ) : (
                        <span class="muted">all clusters</span>
                      ))}
                  </th>
                ))}
              </tr>
              <tr class="cluster-names">
                {matrix.columns.map((c) => (
                  <th key={c.cluster} data-cluster={c.cluster}>
                    {c.cluster}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {matrix.rows.map((row) => (
                <tr key={row.key} data-mirror={row.key}>
                  <th
                    class="row-head"
                    title={`${row.key.split('/')[0]}: copies named ${row.targetName}`}
                  >
                    <a href={mirrorHref(row.key)}>
                      {row.namespace && <span class="muted">{row.namespace}/</span>}
                      {row.name}
                    </a>
                  </th>
                  {row.cells.map((cell, i) => {
                    const cluster = matrix.columns[i]?.cluster ?? '';
                    return (
                      <td
                        key={cluster}
                        data-mirror={row.key}
                        data-cluster={cluster}
                        data-state={cell.state}
                        class={`cell cell-${cell.state}`}
                        title={cellTitle(cell)}
                      >
                        {cell.state === 'none' ? '' : `${cell.synced}/${cell.namespaces}`}
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
