// #/where?name=<target> — every copy of that name, in every cluster and namespace.

import { useEffect, useState } from 'preact/hooks';
import type { Where } from '../../src/dashboard/types.js';
import type { Loaded } from './store.js';
import { Empty, MirrorLink, StateBadge } from './ui.js';

function Results({ where }: { where: Where }) {
  if (where.items.length === 0) {
    return (
      <>
        <Empty>
          <span data-testid="where-empty">
            Nothing holds a copy named <span class="mono">{where.name}</span>.
          </span>
        </Empty>
        {where.truncated && <Incomplete />}
      </>
    );
  }
  return (
    <>
      <p class="muted">
        {where.items.length} {where.items.length === 1 ? 'copy' : 'copies'} named{' '}
        <span class="mono">{where.name}</span>
      </p>
      {where.truncated && <Incomplete />}
      <table class="grid">
        <thead>
          <tr>
            <th>Cluster</th>
            <th>Namespace</th>
            <th>State</th>
            <th>Kind</th>
            <th>Mirror</th>
            <th>Message</th>
          </tr>
        </thead>
        <tbody>
          {where.items.map((r) => (
            <tr
              key={`${r.cluster}/${r.namespace}/${r.mirror}`}
              data-testid="where-row"
              data-cluster={r.cluster}
              data-namespace={r.namespace}
              data-state={r.state}
            >
              <td>{r.cluster}</td>
              <td>{r.namespace}</td>
              <td>
                <StateBadge state={r.state} />
              </td>
              <td>{r.kind}</td>
              <td>
                <MirrorLink mirrorKey={r.mirror} />
              </td>
              <td>{r.message ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function Incomplete() {
  return (
    <p class="note" data-testid="where-incomplete">
      Incomplete: some agent reported only its first 500 namespaces, so copies may be missing from
      this list.
    </p>
  );
}

export function WherePage({
  name,
  result,
  onSearch,
}: {
  name: string;
  result: Loaded<Where> | undefined;
  onSearch: (name: string) => void;
}) {
  const [text, setText] = useState(name);
  useEffect(() => setText(name), [name]);
  return (
    <section class="page where">
      <h1>Where is it?</h1>
      <form
        class="toolbar"
        id="where"
        onSubmit={(e) => {
          e.preventDefault();
          const n = text.trim();
          if (n !== '') onSearch(n);
        }}
      >
        <label>
          Copy name{' '}
          <input
            type="search"
            name="where"
            placeholder="e.g. wildcard-tls"
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
            required
          />
        </label>
        <button type="submit">Find</button>
      </form>
      {name === '' ? (
        <p class="muted">
          The name of a Secret or ConfigMap: lists every cluster and namespace that holds a copy of
          that name, and which mirror owns it.
        </p>
      ) : !result || result.status === 'loading' ? (
        <p class="loading">Looking for {name}…</p>
      ) : result.status === 'error' ? (
        <p class="error-text">{result.error}</p>
      ) : (
        <Results where={result.data} />
      )}
    </section>
  );
}
