// The controller kit: what every controller of hub and agent is built from. A controller brings
// its watches, a pure plan and an apply; the kit brings the rest.
// - Reconciler: watchers -> keys -> work queue -> reconcile, observed (reconciler.ts, observe.ts)
// - StatusWriter: status and finalizer writes, remembering our own writes (status.ts, overlay.ts, patch.ts)
// - EventRecorder: Events on transitions (events.ts)
// - ShortestPeriod: how often the caches take a fresh look (freshness.ts)
export * from './events.js';
export * from './freshness.js';
export * from './leader.js';
export * from './manager.js';
export * from './observe.js';
export * from './overlay.js';
export * from './patch.js';
export * from './reconciler.js';
export * from './status.js';
