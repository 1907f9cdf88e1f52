export * from './target.js';
export * from './registry.js';
export * from './select.js';
export * from './connection.js';
