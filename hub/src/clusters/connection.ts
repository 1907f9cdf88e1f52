// Moved to controllers/delivery/controller.ts (the delivery controller). Kept only until the
// mirror controller imports ClusterConnection from there.
export * from '../controllers/delivery/controller.js';
