// The cluster registry: the clusters the hub delivers to (ClusterTarget, ClusterRegistry), which
// of them a mirror selects (selectClusters, pure) and the API clients for them (client.ts, a
// deadline on every request). The writes into them are the delivery controller's
// (controllers/delivery); MirrorClusters become targets in controllers/cluster.
export * from './target.js';
export * from './registry.js';
export * from './select.js';
