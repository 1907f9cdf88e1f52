// Node's http, crypto, fs and util modules, as `require` hands them out. Production code takes
// these four from here, never by `import ... from 'node:http'` (the import tests refuse it:
// testing/import-graph.ts).
//
// Why: to build an ES module's namespace for a built-in, Node reads every one of its exports,
// and some of them load more on first read. On Node 24, node:http's WebSocket, CloseEvent and
// MessageEvent load undici (Node's fetch, with web streams: 75 internal modules), node:crypto's
// webcrypto loads WebCrypto, node:fs's promises and node:util's lazy exports 34 modules each.
// mirrorhub uses none of them, and every process would pay their memory (docs/BENCHMARKS.md,
// Start-up memory). `process.getBuiltinModule` returns the module without reading them.
export const http = process.getBuiltinModule('node:http');
export const crypto = process.getBuiltinModule('node:crypto');
export const fs = process.getBuiltinModule('node:fs');
export const util = process.getBuiltinModule('node:util');
