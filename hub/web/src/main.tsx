// Entry point: bundled by build.mjs into dist/app.js, loaded with `defer` by index.html.

import { render } from 'preact';
import { App } from './app.js';
import { Store } from './store.js';

const root = document.getElementById('app');
if (root) {
  const store = new Store();
  render(<App store={store} />, root);
  store.start();
}
