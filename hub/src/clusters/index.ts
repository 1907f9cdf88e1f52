// The fleet: the clusters the hub delivers to (ClusterTarget, ClusterRegistry), which of them a
// mirror selects (selectClusters, pure), the API clients for them (client.ts, a deadline on every
// request), and the MirrorCluster controller that turns each MirrorCluster into a target
// (controller.ts; aws/ for EKS). The writes into them are the clusters destination's
// (mirrors/destinations/clusters/). With several hub replicas, what a follower's owner reports
// of its deliveries there for the leader (reports.ts).
export * from './target.js';
export * from './registry.js';
export * from './select.js';
export * from './reports.js';
