// The hub <-> agent contract: every name both sides must agree on, in one place. The hub writes
// MirrorDeliveries and payload Secrets into each cluster's agent namespace and reads the agent's
// heartbeat; the agent writes copies and reports in MirrorDelivery status. A name changed here
// changes on both sides at once; a name defined anywhere else is private to one side.
//
// The objects themselves (MirrorDelivery's group/version/plural, its spec and status, and the
// status limits) come from the one schema (api/schema.ts -> api/types.gen.ts). How the two
// sides name a delivery and its payload Secret is in mirror/names.ts (deliveryName,
// payloadSecretName); what they sign is in mirror/signing.ts. docs/architecture.md has the table.
//
// This module loads nothing.

/** Every label and annotation mirrorhub owns lives under this prefix; it is never copied. */
export const RESERVED_PREFIX = 'mirrorhub.io/';

// ---- marks on copies, payload Secrets and deliveries ------------------------------------------

/** Label on every copy (value MANAGED_BY_VALUE); the agent watches copies by this label only. */
export const LABEL_MANAGED_BY = 'mirrorhub.io/managed-by';
export const MANAGED_BY_VALUE = 'mirrorhub';
/** Label on every copy and payload Secret: the name of the MirrorDelivery it belongs to. */
export const LABEL_DELIVERY = 'mirrorhub.io/delivery';
/** Label on payload Secrets (value "true"); the agent watches payloads by it, admission pins it. */
export const LABEL_PAYLOAD = 'mirrorhub.io/payload';
/**
 * Label on every MirrorDelivery and payload Secret the hub writes: the hub's cluster name. The
 * hub's watches in an agent namespace select on it, so it sees only its own objects (two hubs
 * may deliver to one cluster; delivery names differ by origin as well).
 */
export const LABEL_ORIGIN_CLUSTER = 'mirrorhub.io/origin-cluster';
/** Annotation on every copy: `<cluster>/<namespace>/<name>` of the source. */
export const ANNOTATION_ORIGIN = 'mirrorhub.io/origin';
/** Annotation on every copy: `<Kind>/<namespace>/<name>` of the mirror (namespace empty for csm). */
export const ANNOTATION_MIRROR = 'mirrorhub.io/mirror';
/** Annotation on every copy: the delivery's contentHash the copy was written from. */
export const ANNOTATION_CONTENT_HASH = 'mirrorhub.io/content-hash';
/** Annotation on payload Secrets: comma-separated keys that were ConfigMap binaryData. */
export const ANNOTATION_BINARY_KEYS = 'mirrorhub.io/binary-keys';
/** Annotation holding `<keyId>.<base64url signature>` on MirrorDeliveries and payload Secrets. */
export const ANNOTATION_SIGNATURE = 'mirrorhub.io/signature';

// ---- the agent's side ---------------------------------------------------------------------------

/** Finalizer the agent puts on a delivery before writing its first copy; the hub waits for it. */
export const AGENT_FINALIZER = 'mirrorhub.io/agent-cleanup';
/** The agent's heartbeat: a coordination.k8s.io Lease of this name in the agent namespace. */
export const HEARTBEAT_LEASE = 'mirrorhub-agent';
/** Annotation on the heartbeat Lease: the agent's version (MirrorCluster status.agent.version). */
export const ANNOTATION_AGENT_VERSION = 'mirrorhub.io/agent-version';
/** Annotation on the heartbeat Lease: the cluster name the agent was installed for. */
export const ANNOTATION_CLUSTER_NAME = 'mirrorhub.io/cluster-name';
/**
 * The agent's memory of the newest delivery sequence it applied under each delivery name
 * (agent/src/controllers/delivery/sequence.ts): a ConfigMap of this name in the agent namespace,
 * which only the agent's ServiceAccount may write (the agent chart's admission policies).
 */
export const SEQUENCES_CONFIGMAP = 'mirrorhub-agent-sequences';

// ---- who writes ---------------------------------------------------------------------------------

/** `fieldManager` of every write, per component (server-side apply ownership, managedFields). */
export const FIELD_MANAGER = {
  hub: 'mirrorhub-hub',
  agent: 'mirrorhub-agent',
} as const;
export type FieldManager = (typeof FIELD_MANAGER)[keyof typeof FIELD_MANAGER];

/** User-Agent of every request, per component (the API server's audit log and metrics show it). */
export const USER_AGENT = {
  hub: 'mirrorhub-hub',
  agent: 'mirrorhub-agent',
} as const;
