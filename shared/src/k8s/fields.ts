// Names every writer uses, in a module that loads nothing (client.ts loads client-node).

/** `fieldManager` of every write, per component (server-side apply ownership, managedFields). */
export const FIELD_MANAGER = {
  hub: 'mirrorhub-hub',
  agent: 'mirrorhub-agent',
} as const;
export type FieldManager = (typeof FIELD_MANAGER)[keyof typeof FIELD_MANAGER];
