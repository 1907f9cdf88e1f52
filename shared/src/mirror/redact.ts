// What a tenant is told about copies: the agents' messages name other deliveries ("Secret a/b is
// a copy of MirrorDelivery "sm-team-b-app-..."") and the hub's name other mirrors
// (SecretMirror/team-b/app). Someone who may list only some namespaces' SecretMirrors reads
// them with those names generalised, in a mirror's status (hub) and on the dashboard alike.

/** The names a reader may see: deliveries (by name) and mirrors (by mirror reference). */
export interface VisibleNames {
  delivery(name: string): boolean;
  mirror(ref: string): boolean;
}

// `MirrorDelivery x`, `MirrorDelivery "x"` (the agent) and `mirrordelivery x` (kubectl hints).
const DELIVERY = /\b(MirrorDelivery) "?([a-z0-9](?:[-a-z0-9.]*[a-z0-9])?)"?/gi;
// SecretMirror/<namespace>/<name> and ClusterSecretMirror//<name> (mirrorRef).
const MIRROR = /\b(?:SecretMirror\/[a-z0-9][-a-z0-9]*|ClusterSecretMirror\/)\/[a-z0-9][-a-z0-9.]*/g;

/** `message` with every delivery and mirror the reader may not see named generically. */
export function redactNames(message: string, visible: VisibleNames): string {
  return message
    .replace(DELIVERY, (all, word: string, name: string) =>
      visible.delivery(name) ? all : `another mirror's ${word}`,
    )
    .replace(MIRROR, (ref) => (visible.mirror(ref) ? ref : 'another mirror'));
}

/** Where the whole story of a copy a reader may not read is: its mirror's delivery. */
export function detailsInDelivery(delivery: string, agentNamespace: string, cluster: string) {
  return `details in MirrorDelivery ${delivery} (namespace ${agentNamespace} of cluster ${cluster}), readable by its administrators`;
}
