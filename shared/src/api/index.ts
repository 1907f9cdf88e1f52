// mirrorhub's API: the generated types and names, plus small helpers over them.
export * from './types.gen.js';
export { KINDS, type KindDefinition, type PrinterColumn } from './schema.js';
export * from './helpers.js';
