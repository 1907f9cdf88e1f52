export * from './client.js';
export * from './fake.js';
export * from './listwatch.js';
export * from './watcher.js';
export * from './workqueue.js';
