// What a hub replica may do when several share the fleet (docs/multicluster.md, "Replicas").
//
// Two facts, and nothing else, reach the controllers:
//
// - Ownership: which follower clusters (MirrorClusters) this replica writes to. Each follower is
//   owned by exactly one replica at a time; the owner connects to it, probes it, writes its
//   MirrorCluster status, writes the deliveries there, and reports their state for the leader.
// - Role: whether this replica is the leader. The leader writes what has one writer: every
//   mirror's status, finalizer and Events; the hub's own cluster's deliveries; Vault connections'
//   status; Vault destinations; dynamic Vault leases.
//
// With one replica (the default) the replica owns every follower and leads: OWN_EVERYTHING and
// ALWAYS_LEADING, and the hub behaves, write for write, as one process always did.

export interface Ownership {
  /** This replica writes to follower `name` (a MirrorCluster's name) now. */
  owns(name: string): boolean;
  /** The replica (identity) that owns follower `name`, as last seen; undefined: none yet. */
  ownerOf(name: string): string | undefined;
  /**
   * Listen to changes of owns(name). When `owned` turns false, a listener's promise is awaited
   * before the claim is given up: every write to that follower must have ended by then. Returns
   * the unsubscribe function.
   */
  onChange(listener: (name: string, owned: boolean) => void | Promise<void>): () => void;
}

export interface Role {
  /** This replica leads: it writes what has one writer (see the header). */
  leading(): boolean;
  /** Listen to changes of leading(); returns the unsubscribe function. */
  onChange(listener: (leading: boolean) => void): () => void;
}

/** One replica: it owns every follower. */
export const OWN_EVERYTHING: Ownership = {
  owns: () => true,
  ownerOf: () => undefined,
  onChange: () => () => undefined,
};

/** One replica: it always leads. */
export const ALWAYS_LEADING: Role = {
  leading: () => true,
  onChange: () => () => undefined,
};
