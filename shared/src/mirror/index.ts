// Pure mirroring logic shared by hub and agent: namespace matching, shaping, hashing, names,
// status helpers. No I/O.
export * from './namespaces.js';
export * from './shape.js';
export * from './hash.js';
export * from './names.js';
export * from './status.js';
export * from './foreign-ownership.js';
export * from './signing.js';
