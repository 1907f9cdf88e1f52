export * from './backoff.js';
export * from './clock.js';
export * from './errors.js';
export * from './log.js';
export * from './metrics.js';
export * from './server.js';
export * from './shutdown.js';
export * from './version.js';
