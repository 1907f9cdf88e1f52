// Other controllers' ownership and tracking marks: label and annotation keys by which Helm,
// Argo CD, Flux, kustomize, kapp and the other mirroring tools recognise an object as theirs
// (adopt it, prune it, overwrite it, or copy it onwards). A copy is mirrorhub's: carrying one of
// these keys hands it to that tool, or hands that tool's object to whoever wrote the mirror
// (a tenant plants `db-postgresql` with Helm's release marks in another team's namespace, and
// that team's `helm install db` adopts it and keeps the planted password).
//
// This is the one list (docs/security.md, "copies carry no other controller's marks"):
// - the hub drops source keys on it from every copy (shapeMetadata): the source has them
//   legitimately, the copy must not inherit them;
// - the agent refuses a delivery whose template still carries one (a key a mirror's template
//   adds) with PolicyDenied (policy.metadata.foreignOwnership); a follower's owner may change the
//   list there (the agent chart's `policy.metadata.foreignOwnership`, whose default this list is),
//   and the chart's admission policy refuses the same keys from the agent's identity.
//
// A pattern is an exact key, or a prefix ending in `*` (as template.removeLabels). mirrorhub's
// own keys (mirrorhub.io/) are never matched, whatever the list says.

export interface ForeignOwnershipKey {
  /** An exact key, or "prefix*". */
  pattern: string;
  /** Whose mark it is. */
  owner: string;
  /** What it makes that tool do with an object that carries it. */
  why: string;
}

export const FOREIGN_OWNERSHIP_KEYS: readonly ForeignOwnershipKey[] = [
  {
    pattern: 'app.kubernetes.io/managed-by',
    owner: 'Helm, kustomize, ClusterSecret and others',
    why: 'names the tool that manages the object; Helm adopts an existing object whose value is Helm. A copy is managed by mirrorhub',
  },
  {
    pattern: 'meta.helm.sh/*',
    owner: 'Helm',
    why: 'release-name and release-namespace: with managed-by=Helm, helm install/upgrade adopts the object into that release and keeps its data',
  },
  {
    pattern: 'helm.sh/*',
    owner: 'Helm',
    why: 'resource-policy, hook and chart marks of the release that rendered the source',
  },
  {
    pattern: 'app.kubernetes.io/instance',
    owner: 'Argo CD',
    why: "label tracking (Argo CD's default before 3.0): the Application counts the object as its own, reports it out of sync and prunes it under auto-sync",
  },
  {
    pattern: 'argocd.argoproj.io/tracking-id',
    owner: 'Argo CD',
    why: 'annotation tracking: the Application named in it counts the object as its own',
  },
  {
    pattern: 'argocd.argoproj.io/installation-id',
    owner: 'Argo CD',
    why: 'which Argo CD instance tracks the object, with the tracking annotation',
  },
  {
    pattern: 'kustomize.toolkit.fluxcd.io/*',
    owner: 'Flux kustomize-controller',
    why: 'name/namespace labels of the Kustomization that owns the object and garbage-collects it; prune/ssa annotations steer that',
  },
  {
    pattern: 'helm.toolkit.fluxcd.io/*',
    owner: 'Flux helm-controller',
    why: 'name/namespace labels of the HelmRelease that owns the object',
  },
  {
    pattern: 'config.k8s.io/owning-inventory',
    owner: 'cli-utils (kpt, Config Sync, kustomize appliers)',
    why: 'the inventory that applies and prunes the object',
  },
  {
    pattern: 'cli-utils.sigs.k8s.io/inventory-id',
    owner: 'cli-utils',
    why: 'marks an inventory object (a ConfigMap): a copy would be read as one',
  },
  {
    pattern: 'applyset.kubernetes.io/part-of',
    owner: 'kubectl apply --applyset',
    why: "ApplySet membership: the ApplySet's next apply --prune deletes the object",
  },
  {
    pattern: 'kustomize.config.k8s.io/*',
    owner: 'kustomize',
    why: 'generator marks (behavior, needs-hash) of a kustomize build',
  },
  {
    pattern: 'configsync.gke.io/*',
    owner: 'Config Sync',
    why: 'which RootSync/RepoSync manages the object',
  },
  {
    pattern: 'configmanagement.gke.io/*',
    owner: 'Config Sync',
    why: 'managed flag and source path: Config Sync reverts or deletes the object',
  },
  {
    pattern: 'kapp.k14s.io/*',
    owner: 'kapp',
    why: 'app and association labels: the kapp app that owns the object deletes or rewrites it',
  },
  {
    pattern: 'reflector.v1.k8s.emberstack.com/*',
    owner: 'kubernetes-reflector',
    why: 'reflects makes reflector overwrite the object from another source; reflection-allowed/auto-enabled make it a source reflector copies onwards',
  },
  {
    pattern: 'kubed.appscode.com/*',
    owner: 'kubed / config-syncer',
    why: 'sync makes the object a source copied to other namespaces; origin marks a copy kubed updates and deletes',
  },
  {
    pattern: 'clustersecret.io',
    owner: 'ClusterSecret',
    why: 'label of the Secrets a ClusterSecret created',
  },
  {
    pattern: 'clustersecret.io/*',
    owner: 'ClusterSecret',
    why: 'created-by, version and last-sync of a ClusterSecret clone',
  },
  {
    pattern: 'mirrors.kts.studio/*',
    owner: 'KTS mirrors',
    why: 'owned-by names the SecretMirror that owns (overwrites, deletes) the object',
  },
  {
    pattern: 'reconcile.external-secrets.io/*',
    owner: 'External Secrets',
    why: 'managed and created-by mark the target Secret of an ExternalSecret, which owns it',
  },
  {
    pattern: 'sealedsecrets.bitnami.com/*',
    owner: 'Sealed Secrets',
    why: 'managed/patch let a SealedSecret of the same name take the Secret over',
  },
];

/** The patterns alone: the default of the agent policy's `metadata.foreignOwnership`. */
export const FOREIGN_OWNERSHIP_PATTERNS: readonly string[] = FOREIGN_OWNERSHIP_KEYS.map(
  (k) => k.pattern,
);

/** Why `pattern` is on the default list, for messages ("Helm: release-name and ..."). */
export function foreignOwnershipReason(pattern: string): string | undefined {
  const entry = FOREIGN_OWNERSHIP_KEYS.find((k) => k.pattern === pattern);
  return entry && `${entry.owner}: ${entry.why}`;
}

/** A problem with a pattern of the list (the agent's start-up error), or undefined. */
export function foreignPatternProblem(pattern: string): string | undefined {
  const star = pattern.indexOf('*');
  if (star >= 0 && star !== pattern.length - 1) {
    return `"${pattern}" has a * before its end (a pattern is a key, or a prefix ending in *)`;
  }
  if (pattern === '*') return '"*" would refuse every key; list the keys or prefixes instead';
  return undefined;
}
