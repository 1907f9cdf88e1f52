export * from './access.js';
export * from './client.js';
export * from './events.js';
export * from './fake.js';
export * from './listwatch.js';
export * from './rest.js';
export * from './watcher.js';
export * from './workqueue.js';
