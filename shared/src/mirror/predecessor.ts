// Whether an existing object is a copy that another mirroring tool provably made from a given
// source: the one proof that the agent's takeover (agent/src/controllers/delivery/takeover.ts)
// acts on and that `mirrorhub migrate --plan` (hub/src/cli/migrate) predicts, so the plan never
// promises a takeover the agent would refuse.
//
// Teams move to mirrorhub from kubernetes-reflector, kubed (config-syncer), ClusterSecret and KTS
// mirrors, each of which has already copied the source into the namespaces mirrorhub will serve.
// A copy whose own marks prove the old tool made it from the same source object, in this
// cluster, is taken over without Adopt; anything short of proof stays a Conflict. The proofs, as
// each tool writes its copies (read from their sources):
// - kubernetes-reflector: annotation reflector.v1.k8s.emberstack.com/reflects = "<ns>/<name>" of
//   the source (ResourceMirror.cs writes the source's NamespacedName there);
// - kubed / config-syncer: labels kubed.appscode.com/origin.namespace and origin.name = the
//   source's, on a copy with the source's name (syncer.go), made in this cluster: origin.cluster
//   is kubed's own --cluster-name (empty by default, "unicorn" in kubed's example config), which
//   mirrorhub cannot know, and a copy kubed synced here from another cluster's source of the
//   same name (sync-contexts) carries that cluster's. So origin.cluster empty or this cluster's
//   name proves it, and otherwise the annotation kubed.appscode.com/origin, the source's object
//   reference, must carry the uid of the source in this cluster (the caller reads it);
// - KTS mirrors: annotation mirrors.kts.studio/owned-by = "<mirror ns>/<mirror name>", where a
//   Secret source lives in the mirror's namespace and copies keep its name (dest_namespaces.go),
//   so the namespace part and the copy's name must be the source's; source-type, when present,
//   is "secret" (a Vault-sourced KTS copy is not a copy of this Secret);
// - ClusterSecret: label clustersecret.io or annotation clustersecret.io/created-by, on a copy
//   named as the ClusterSecret (cluster-scoped, so only a ClusterSecretMirror of that name
//   succeeds it; kubernetes_utils.py), any ownerReference being to that ClusterSecret.
// A copy owned (ownerReferences) by anything but the proving tool's own object is not one that
// tool made as it makes them.

import type { MirrorKind, Predecessor } from '../api/types.gen.js';

export type { Predecessor };

type StringMap = Readonly<Record<string, string>>;

export const REFLECTOR_REFLECTS = 'reflector.v1.k8s.emberstack.com/reflects';
export const KUBED_ORIGIN_NAMESPACE = 'kubed.appscode.com/origin.namespace';
export const KUBED_ORIGIN_NAME = 'kubed.appscode.com/origin.name';
export const KUBED_ORIGIN_CLUSTER = 'kubed.appscode.com/origin.cluster';
export const KUBED_ORIGIN = 'kubed.appscode.com/origin';
export const KTS_OWNED_BY = 'mirrors.kts.studio/owned-by';
export const KTS_SOURCE_TYPE = 'mirrors.kts.studio/source-type';
export const CLUSTERSECRET_LABEL = 'clustersecret.io';
export const CLUSTERSECRET_CREATED_BY = 'clustersecret.io/created-by';
export const CLUSTERSECRET_GROUP = 'clustersecret.io';

/** The metadata of the object holding a copy's name: all the proof looks at. */
export interface CopyMarks {
  name?: string | undefined;
  labels?: StringMap | undefined;
  annotations?: StringMap | undefined;
  ownerReferences?:
    readonly { apiVersion?: string | undefined; kind: string; name: string }[] | undefined;
}

/** The source and the mirror that would succeed the old tool, in the cluster being looked at. */
export interface Succession {
  /** The kind the existing object was read as. */
  readKind: string;
  /** The copy's kind (the source's). */
  targetKind: string;
  /** The source object in this cluster; undefined when it is not one (a Vault source). */
  source: { namespace: string; name: string; uid?: string | undefined } | undefined;
  mirror: { kind: MirrorKind; name: string };
  /** This cluster's mirrorhub name ('' when unknown: then only kubed's origin uid proves). */
  clusterName: string;
}

export type Judgement = { tool: Predecessor } | { tool?: undefined; why: string };

/** The uid in kubed's origin annotation (the source's object reference, as JSON), if any. */
export function kubedOriginUid(annotations: StringMap | undefined): string | undefined {
  try {
    const ref = JSON.parse(annotations?.[KUBED_ORIGIN] ?? '') as { uid?: unknown };
    return typeof ref.uid === 'string' && ref.uid !== '' ? ref.uid : undefined;
  } catch {
    return undefined;
  }
}

/** Which tool's copy of the source `existing` provably is, or why it is none. */
export function judgePredecessor(existing: CopyMarks, s: Succession): Judgement {
  const name = existing.name ?? '';
  const labels = existing.labels ?? {};
  const annotations = existing.annotations ?? {};
  if (s.readKind !== s.targetKind) return { why: `a ${s.readKind}, not a ${s.targetKind}` };
  const source = s.source;
  if (!source) return { why: 'the source is not an object of this cluster (a Vault secret)' };

  const reflects = annotations[REFLECTOR_REFLECTS];
  const kubedNs = labels[KUBED_ORIGIN_NAMESPACE];
  const kubedName = labels[KUBED_ORIGIN_NAME];
  const ownedBy = annotations[KTS_OWNED_BY];
  const clusterSecretMarked =
    Object.hasOwn(labels, CLUSTERSECRET_LABEL) ||
    Object.hasOwn(annotations, CLUSTERSECRET_CREATED_BY);

  let tool: Predecessor | undefined;
  let why: string;
  if (reflects !== undefined) {
    if (reflects === `${source.namespace}/${source.name}`) tool = 'reflector';
    why = `a reflector copy of ${reflects}, another source`;
  } else if (kubedNs !== undefined || kubedName !== undefined) {
    const sameSource = kubedNs === source.namespace && kubedName === source.name;
    const cluster = labels[KUBED_ORIGIN_CLUSTER];
    const here =
      cluster === undefined ||
      cluster === '' ||
      (s.clusterName !== '' && cluster === s.clusterName) ||
      (source.uid !== undefined && kubedOriginUid(annotations) === source.uid);
    if (sameSource && name === source.name && here) tool = 'kubed';
    why = !sameSource
      ? `a kubed copy of ${kubedNs ?? '?'}/${kubedName ?? '?'}, another source`
      : name !== source.name
        ? 'a kubed copy under another name than its origin'
        : `a kubed copy synced from cluster ${cluster ?? '?'}, not from this cluster's source`;
  } else if (ownedBy !== undefined) {
    const ownerNs = ownedBy.split('/')[0] ?? '';
    const fromSecret = (annotations[KTS_SOURCE_TYPE] ?? 'secret') === 'secret';
    if (
      s.targetKind === 'Secret' &&
      ownerNs === source.namespace &&
      ownedBy.length > ownerNs.length + 1 &&
      name === source.name &&
      fromSecret
    ) {
      tool = 'kts-mirrors';
    }
    why = !fromSecret
      ? 'a KTS copy of a Vault secret, not of this Secret'
      : ownerNs !== source.namespace
        ? `a KTS copy owned by ${ownedBy}, a mirror of another namespace`
        : 'a KTS copy under another name than its source';
  } else if (clusterSecretMarked) {
    if (
      s.targetKind === 'Secret' &&
      s.mirror.kind === 'ClusterSecretMirror' &&
      s.mirror.name === name
    ) {
      tool = 'ClusterSecret';
    }
    why =
      s.mirror.kind !== 'ClusterSecretMirror'
        ? 'a ClusterSecret copy: only a ClusterSecretMirror of its name succeeds a ClusterSecret'
        : `a ClusterSecret copy of ClusterSecret ${name}, not of ${s.mirror.name}`;
  } else {
    return { why: 'no other tool marks it as a copy of this source' };
  }
  if (!tool) return { why };

  const foreignOwner = (existing.ownerReferences ?? []).find(
    (r) =>
      !(
        tool === 'ClusterSecret' &&
        r.kind === 'ClusterSecret' &&
        (r.apiVersion ?? '').startsWith(`${CLUSTERSECRET_GROUP}/`) &&
        r.name === name
      ),
  );
  if (foreignOwner) return { why: `owned by ${foreignOwner.kind} ${foreignOwner.name}` };
  return { tool };
}
