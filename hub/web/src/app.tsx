// The frame: header (who, which hub, live indicator), navigation, banner, and the current page.

import { useEffect, useState } from 'preact/hooks';
import type { Snapshot } from '../../src/dashboard/types.js';
import { ClustersPage } from './clusters.js';
import { MatrixPage } from './matrix.js';
import { MirrorPage } from './mirror.js';
import { MirrorsPage } from './mirrors.js';
import { OverviewPage } from './overview.js';
import { whereHref, type Route } from './route.js';
import { SignIn } from './signin.js';
import type { Live, State, Store } from './store.js';
import { WherePage } from './where.js';

/** Relative times ("12 s ago") are redrawn this often. */
const TICK_MS = 5_000;

const NAV: { href: string; label: string; pages: Route['page'][] }[] = [
  { href: '#/', label: 'Overview', pages: ['overview'] },
  { href: '#/clusters', label: 'Clusters', pages: ['clusters'] },
  { href: '#/mirrors', label: 'Mirrors', pages: ['mirrors', 'mirror'] },
  { href: '#/matrix', label: 'Matrix', pages: ['matrix'] },
  { href: '#/where', label: 'Where', pages: ['where'] },
];

const LIVE_TEXT: Record<Live, string> = {
  live: 'live',
  connecting: 'connecting…',
  offline: 'offline',
};

const LIVE_TITLE: Record<Live, string> = {
  live: 'Following the hub: pages update as changes happen.',
  connecting: 'Reconnecting to the hub: pages may be behind.',
  offline: 'The hub cannot be reached: pages may be behind.',
};

function Header({ state, store }: { state: State; store: Store }) {
  const s = state.snapshot;
  const who = s?.whoami;
  const scope =
    who?.scope === 'namespaces'
      ? `namespaces: ${who.namespaces.length > 0 ? who.namespaces.join(', ') : 'none'}`
      : who?.scope;
  return (
    <header class="top">
      <a class="brand" href="#/">
        mirrorhub
      </a>
      {s && (
        <span class="hub" title={`hub version ${s.hub.version}`}>
          <span class="hub-cluster" data-testid="hub-cluster">
            {s.hub.cluster}
          </span>{' '}
          <span class="muted">v{s.hub.version}</span>
          {!s.hub.leader && <span class="badge tri-unknown">standby</span>}
        </span>
      )}
      <nav>
        {NAV.map((n) => (
          <a
            key={n.href}
            href={n.href}
            class={n.pages.includes(state.route.page) ? 'active' : undefined}
          >
            {n.label}
          </a>
        ))}
      </nav>
      <span class="spacer" />
      <span
        class={`live live-${state.live}`}
        data-testid="live"
        data-state={state.live}
        title={LIVE_TITLE[state.live]}
      >
        {LIVE_TEXT[state.live]}
      </span>
      {who && (
        <span class="who" title={`scope: ${scope ?? ''}`}>
          <span data-testid="whoami">{who.user}</span>{' '}
          <span class="muted" data-testid="scope">
            ({scope})
          </span>
        </span>
      )}
      {state.ambient ? (
        <span class="muted" title="Requests are signed with your kubeconfig's credentials.">
          via kubectl
        </span>
      ) : (
        <button type="button" class="signout" onClick={() => store.signOut()}>
          Sign out
        </button>
      )}
    </header>
  );
}

function Page({
  state,
  store,
  snapshot,
  now,
}: {
  state: State;
  store: Store;
  snapshot: Snapshot;
  now: number;
}) {
  const r = state.route;
  switch (r.page) {
    case 'overview':
      return <OverviewPage snapshot={snapshot} />;
    case 'clusters':
      return <ClustersPage snapshot={snapshot} now={now} snapshotAt={state.snapshotAt} />;
    case 'mirrors':
      return <MirrorsPage snapshot={snapshot} now={now} />;
    case 'mirror':
      return (
        <MirrorPage
          mirrorKey={r.key}
          result={state.detail?.key === r.key ? state.detail.result : undefined}
          now={now}
        />
      );
    case 'matrix':
      return <MatrixPage matrix={snapshot.matrix} onGroupBy={(k) => store.setGroupBy(k)} />;
    case 'where':
      return (
        <WherePage
          name={r.name}
          result={state.where?.name === r.name ? state.where.result : undefined}
          onSearch={(name) => {
            const href = whereHref(name);
            if (location.hash === href) store.refresh();
            else location.hash = href;
          }}
        />
      );
    default:
      return (
        <section class="page">
          <h1>Not found</h1>
          <p>
            There is no page at <span class="mono">{r.hash}</span>. <a href="#/">Overview</a>
          </p>
        </section>
      );
  }
}

export function App({ store }: { store: Store }) {
  const [state, setState] = useState(store.state);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const unsubscribe = store.subscribe(() => setState(store.state));
    // Whatever changed between the first render and this effect (the sign-in probe may answer
    // first) would otherwise wait for the next change.
    setState(store.state);
    return unsubscribe;
  }, [store]);
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), TICK_MS);
    return () => clearInterval(t);
  }, []);
  // Data just arrived: count ages from now, not from the last tick.
  const clock = Math.max(now, state.snapshotAt);

  const banner = state.banner && (
    <div class="banner" role="status" data-testid="banner">
      {state.banner} <span class="muted">Retrying every 2 s.</span>
    </div>
  );

  if (state.probing) {
    return (
      <>
        {banner}
        <p class="loading">Loading…</p>
      </>
    );
  }
  if ((!state.token && !state.ambient) || (state.signingIn && !state.snapshot)) {
    return (
      <>
        {banner}
        <SignIn
          error={state.signinError}
          busy={state.signingIn}
          onSignIn={(t) => store.signIn(t)}
        />
      </>
    );
  }
  return (
    <>
      <Header state={state} store={store} />
      {banner}
      <main class="content">
        {state.snapshot ? (
          <Page state={state} store={store} snapshot={state.snapshot} now={clock} />
        ) : (
          <p class="loading">Loading…</p>
        )}
      </main>
    </>
  );
}
