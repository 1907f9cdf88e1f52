// EKS access policies made real: each association becomes RBAC bindings in the emulated cluster,
// bound to a group that only the TokenReview webhook hands out, and only to that access entry's
// principal. Real EKS evaluates access policies in its own authorizer; the built-in ClusterRoles
// are the closest open equivalent (AmazonEKSAdminPolicy ~ admin, and so on).
//
// admin, edit and view are aggregated ClusterRoles whose rules the controller-manager fills in;
// the kit runs no controller-manager, and EKS's authorizer does not depend on it either. So for
// those policies the emulator materialises its own ClusterRole (`eks-access-policy:<Policy>`)
// with the rules of the built-in role plus everything its aggregationRule selects, refreshed on
// every association. cluster-admin has literal rules and is bound as it is.
import { createHash } from 'node:crypto';
import {
  ApiException,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type V1ClusterRole,
  type V1ObjectMeta,
  type V1PolicyRule,
  type V1RoleRef,
  type RbacV1Subject,
} from '@kubernetes/client-node';

export const ACCESS_POLICY_ARN_PREFIX = 'arn:aws:eks::aws:cluster-access-policy/';

/** Access policy name -> the ClusterRole its bindings reference. */
export const ACCESS_POLICIES: Readonly<Record<string, string>> = {
  AmazonEKSClusterAdminPolicy: 'cluster-admin',
  AmazonEKSAdminPolicy: 'admin',
  AmazonEKSEditPolicy: 'edit',
  AmazonEKSViewPolicy: 'view',
};

/** Groups with this prefix are minted by the emulator; access entries may not claim them. */
export const ENTRY_GROUP_PREFIX = 'eks-access-entry:';

export type AccessScope =
  { type: 'cluster'; namespaces?: never[] } | { type: 'namespace'; namespaces: string[] };

const LABEL_MANAGED = 'app.kubernetes.io/managed-by';
const MANAGER = 'mirrorhub-eks-emulator';
const LABEL_ENTRY = 'eks-emulator.mirrorhub.io/access-entry';
const LABEL_POLICY = 'eks-emulator.mirrorhub.io/access-policy';
const ANNOTATION_PRINCIPAL = 'eks-emulator.mirrorhub.io/principal-arn';

// An API server shared by several emulated clusters holds the RBAC of all of them, and one
// principal may have an entry in more than one: the entries of a cluster that shares another's
// API server (`sharedCluster`, its name) get ids and groups of their own, so neither the
// bindings nor the rights of one cluster's entry reach into another's.

/** Stable, label-safe id of an access entry (from its canonical principal ARN). */
export function accessEntryId(canonicalPrincipalArn: string, sharedCluster?: string): string {
  const key = sharedCluster ? `${sharedCluster}/${canonicalPrincipalArn}` : canonicalPrincipalArn;
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** The group an entry's principal gets: unique per principal on its API server, never system:*. */
export function accessEntryGroup(canonicalPrincipalArn: string, sharedCluster?: string): string {
  // arn:aws:iam::222222222222:role/follower -> eks-access-entry:222222222222:role/follower, or
  // eks-access-entry:follower-a:222222222222:role/follower (a cluster name starts with a letter,
  // an account with a digit: the two forms never meet).
  const [, , , , account, resource] = canonicalPrincipalArn.split(':');
  return `${ENTRY_GROUP_PREFIX}${sharedCluster ? `${sharedCluster}:` : ''}${account}:${resource}`;
}

export function policyName(policyArn: string): string | undefined {
  if (!policyArn.startsWith(ACCESS_POLICY_ARN_PREFIX)) return undefined;
  const name = policyArn.slice(ACCESS_POLICY_ARN_PREFIX.length);
  return ACCESS_POLICIES[name] ? name : undefined;
}

export interface EntryRef {
  id: string;
  group: string;
  principalArn: string;
}

interface Binding {
  namespace: string | undefined;
  name: string;
}

function is(err: unknown, code: number): boolean {
  return err instanceof ApiException && err.code === code;
}

/** Reconciles the bindings of access-policy associations in one cluster. */
export class AccessPolicyRbac {
  private readonly rbac: RbacAuthorizationV1Api;
  private readonly core: CoreV1Api;

  constructor(admin: KubeConfig) {
    this.rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    this.core = admin.makeApiClient(CoreV1Api);
  }

  /** Makes the cluster hold exactly the bindings for (entry, policy, scope). */
  async apply(entry: EntryRef, policy: string, scope: AccessScope): Promise<void> {
    const clusterRole = ACCESS_POLICIES[policy];
    if (!clusterRole) throw new Error(`unknown access policy ${policy}`);
    const name = `eks-access-${entry.id}-${clusterRole}`;
    const desired: Binding[] =
      scope.type === 'cluster'
        ? [{ namespace: undefined, name }]
        : [...new Set(scope.namespaces)].map((namespace) => ({ namespace, name }));

    for (const b of desired) if (b.namespace) await this.ensureNamespace(b.namespace);

    const metadata = (b: Binding): V1ObjectMeta => ({
      name: b.name,
      ...(b.namespace ? { namespace: b.namespace } : {}),
      labels: { [LABEL_MANAGED]: MANAGER, [LABEL_ENTRY]: entry.id, [LABEL_POLICY]: clusterRole },
      annotations: { [ANNOTATION_PRINCIPAL]: entry.principalArn },
    });
    const subjects: RbacV1Subject[] = [
      { kind: 'Group', name: entry.group, apiGroup: 'rbac.authorization.k8s.io' },
    ];
    const roleRef: V1RoleRef = {
      kind: 'ClusterRole',
      name: await this.ensurePolicyRole(policy, clusterRole),
      apiGroup: 'rbac.authorization.k8s.io',
    };

    const existing = await this.list(entry.id, clusterRole);
    const key = (b: Binding) => `${b.namespace ?? ''}/${b.name}`;
    const want = new Set(desired.map(key));
    for (const b of existing) if (!want.has(key(b))) await this.delete(b);
    const have = new Set(existing.map(key));
    for (const b of desired) {
      if (have.has(key(b))) continue;
      const body = { metadata: metadata(b), subjects, roleRef };
      try {
        if (b.namespace) {
          await this.rbac.createNamespacedRoleBinding({ namespace: b.namespace, body });
        } else {
          await this.rbac.createClusterRoleBinding({ body });
        }
      } catch (err) {
        if (!is(err, 409)) throw err;
      }
    }
  }

  /** Removes the bindings of one policy of an entry, or of all its policies. */
  async remove(entryId: string, policy?: string): Promise<void> {
    const clusterRole = policy ? ACCESS_POLICIES[policy] : undefined;
    for (const b of await this.list(entryId, clusterRole)) await this.delete(b);
  }

  private async list(entryId: string, clusterRole: string | undefined): Promise<Binding[]> {
    const labelSelector = [
      `${LABEL_MANAGED}=${MANAGER}`,
      `${LABEL_ENTRY}=${entryId}`,
      ...(clusterRole ? [`${LABEL_POLICY}=${clusterRole}`] : []),
    ].join(',');
    const [crbs, rbs] = await Promise.all([
      this.rbac.listClusterRoleBinding({ labelSelector }),
      this.rbac.listRoleBindingForAllNamespaces({ labelSelector }),
    ]);
    return [
      ...crbs.items.map((i) => ({ namespace: undefined, name: i.metadata!.name! })),
      ...rbs.items.map((i) => ({ namespace: i.metadata!.namespace!, name: i.metadata!.name! })),
    ];
  }

  private async delete(b: Binding): Promise<void> {
    try {
      if (b.namespace) {
        await this.rbac.deleteNamespacedRoleBinding({ name: b.name, namespace: b.namespace });
      } else {
        await this.rbac.deleteClusterRoleBinding({ name: b.name });
      }
    } catch (err) {
      if (!is(err, 404)) throw err;
    }
  }

  /** The ClusterRole bindings for `policy` reference (see the file comment). */
  private async ensurePolicyRole(policy: string, builtin: string): Promise<string> {
    if (builtin === 'cluster-admin') return builtin;
    const source = await this.rbac.readClusterRole({ name: builtin });
    const rules: V1PolicyRule[] = [...(source.rules ?? [])];
    for (const selector of source.aggregationRule?.clusterRoleSelectors ?? []) {
      const labelSelector = Object.entries(selector.matchLabels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      if (!labelSelector) continue;
      const { items } = await this.rbac.listClusterRole({ labelSelector });
      for (const role of items.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!))) {
        if (role.metadata?.name === builtin) continue;
        rules.push(...(role.rules ?? []));
      }
    }
    const name = `eks-access-policy:${policy}`;
    const body: V1ClusterRole = {
      metadata: { name, labels: { [LABEL_MANAGED]: MANAGER } },
      rules,
    };
    try {
      await this.rbac.createClusterRole({ body });
    } catch (err) {
      if (!is(err, 409)) throw err;
      const current = await this.rbac.readClusterRole({ name });
      if (JSON.stringify(current.rules ?? []) !== JSON.stringify(rules)) {
        await this.rbac.replaceClusterRole({
          name,
          body: {
            ...body,
            metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion },
          },
        });
      }
    }
    return name;
  }

  private async ensureNamespace(name: string): Promise<void> {
    try {
      await this.core.createNamespace({ body: { metadata: { name } } });
    } catch (err) {
      if (!is(err, 409)) throw err;
    }
  }
}
