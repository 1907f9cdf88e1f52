export * from './backoff.js';
export * from './clock.js';
export * from './errors.js';
export * from './leader.js';
export * from './log.js';
export * from './metrics.js';
export * from './server.js';
export * from './shutdown.js';
