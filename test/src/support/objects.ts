import {
  CoreV1Api,
  CustomObjectsApi,
  type CoreV1Event,
  type KubeConfig,
  type V1ConfigMap,
  type V1Secret,
} from '@kubernetes/client-node';

import {
  type ClusterSecretMirror,
  type MirrorClusterSpec,
  type MirrorDelivery,
  type SecretMirror,
} from '@mirrorhub/shared';
import { mergePatchOptions } from '@mirrorhub/shared/testing/index';

import { eventually } from './eventually.js';

export const SYSTEM_NS = 'mirrorhub-system';
const GROUP = 'mirrorhub.io';
const VERSION = 'v1alpha1';

/**
 * The objects a test reads and writes in one cluster, the way a person would with kubectl:
 * namespaces, Secrets, mirrors and their status, deliveries, payloads, copies, Events.
 */
export class ClusterObjects {
  constructor(readonly kc: KubeConfig) {}

  readonly core = () => this.kc.makeApiClient(CoreV1Api);
  readonly custom = () => this.kc.makeApiClient(CustomObjectsApi);

  async ensureNamespace(name: string, labels: Record<string, string> = {}): Promise<void> {
    try {
      await this.core().createNamespace({ body: { metadata: { name, labels } } });
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
    }
  }

  async labelNamespace(name: string, labels: Record<string, string | null>): Promise<void> {
    await this.core().patchNamespace({ name, body: { metadata: { labels } } }, mergePatchOptions());
  }

  async putSecret(
    namespace: string,
    name: string,
    data: Record<string, string>,
    extra: Partial<V1Secret> = {},
  ): Promise<V1Secret> {
    const body: V1Secret = {
      ...extra,
      metadata: { name, namespace, ...extra.metadata },
      stringData: data,
    };
    try {
      return await this.core().createNamespacedSecret({ namespace, body });
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      const cur = await this.core().readNamespacedSecret({ name, namespace });
      return this.core().replaceNamespacedSecret({
        name,
        namespace,
        body: {
          ...body,
          data: undefined,
          metadata: { ...body.metadata, resourceVersion: cur.metadata!.resourceVersion },
        },
      });
    }
  }

  async putConfigMap(
    namespace: string,
    name: string,
    data: Record<string, string>,
  ): Promise<V1ConfigMap> {
    return this.core().createNamespacedConfigMap({
      namespace,
      body: { metadata: { name, namespace }, data },
    });
  }

  /** The copy's decoded data, or undefined when there is no such Secret. */
  async secretData(namespace: string, name: string): Promise<Record<string, string> | undefined> {
    const s = await this.readSecret(namespace, name);
    if (!s) return undefined;
    return Object.fromEntries(
      Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
  }

  async readSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
    try {
      return await this.core().readNamespacedSecret({ name, namespace });
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  async applyMirror(m: SecretMirror | ClusterSecretMirror): Promise<void> {
    const cluster = m.kind === 'ClusterSecretMirror';
    const plural = cluster ? 'clustersecretmirrors' : 'secretmirrors';
    // Only what a person would write: a manifest read back from the server carries
    // resourceVersion, uid and status, which a create must not send.
    const md = m.metadata ?? {};
    const body = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: m.kind,
      metadata: {
        name: md.name,
        namespace: md.namespace,
        labels: md.labels,
        annotations: md.annotations,
      },
      spec: m.spec,
    };
    const api = this.custom();
    const ns = m.metadata?.namespace;
    try {
      if (cluster)
        await api.createClusterCustomObject({ group: GROUP, version: VERSION, plural, body });
      else
        await api.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns!,
          plural,
          body,
        });
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      const cur = (await this.getMirror(m.kind, m.metadata!.name!, ns)) as {
        metadata: { resourceVersion: string };
      };
      const withRv = {
        ...body,
        metadata: { ...body.metadata, resourceVersion: cur.metadata.resourceVersion },
      };
      if (cluster)
        await api.replaceClusterCustomObject({
          group: GROUP,
          version: VERSION,
          plural,
          name: m.metadata!.name!,
          body: withRv,
        });
      else
        await api.replaceNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ns!,
          plural,
          name: m.metadata!.name!,
          body: withRv,
        });
    }
  }

  async getMirror(
    kind: string,
    name: string,
    namespace?: string,
  ): Promise<SecretMirror | undefined> {
    const api = this.custom();
    try {
      if (kind === 'ClusterSecretMirror') {
        return (await api.getClusterCustomObject({
          group: GROUP,
          version: VERSION,
          plural: 'clustersecretmirrors',
          name,
        })) as SecretMirror;
      }
      return (await api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: namespace!,
        plural: 'secretmirrors',
        name,
      })) as SecretMirror;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  async deleteMirror(kind: string, name: string, namespace?: string): Promise<void> {
    const api = this.custom();
    if (kind === 'ClusterSecretMirror') {
      await api.deleteClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'clustersecretmirrors',
        name,
      });
    } else {
      await api.deleteNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: namespace!,
        plural: 'secretmirrors',
        name,
      });
    }
  }

  /** Waits until the mirror's status satisfies `check` (an expect inside) and returns it. */
  async mirrorStatus(
    kind: string,
    name: string,
    namespace: string | undefined,
    check: (m: SecretMirror) => void,
    timeoutMs = 15_000,
  ): Promise<SecretMirror> {
    return eventually(
      async () => {
        const m = await this.getMirror(kind, name, namespace);
        if (!m) throw new Error(`${kind} ${namespace ?? ''}/${name} not found`);
        check(m);
        return m;
      },
      { timeoutMs },
    );
  }

  async deliveries(): Promise<MirrorDelivery[]> {
    const res = (await this.custom().listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: SYSTEM_NS,
      plural: 'mirrordeliveries',
    })) as { items: MirrorDelivery[] };
    return res.items;
  }

  /** Events about one object, by reason. */
  async events(namespace: string, name: string): Promise<CoreV1Event[]> {
    const list = await this.core().listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.name=${name}`,
    });
    return list.items;
  }

  /**
   * The first Event about one object with `reason`, once there is one. A controller records an
   * Event just after the status write it reports, so a test that has seen the status can list
   * Events a moment too early.
   */
  async eventWith(
    namespace: string,
    name: string,
    reason: string,
    opts?: Parameters<typeof eventually>[1],
  ): Promise<CoreV1Event> {
    return eventually(async () => {
      const events = await this.events(namespace, name);
      const found = events.find((e) => e.reason === reason);
      if (!found) {
        const seen = events.map((e) => e.reason).join(', ') || 'none';
        throw new Error(`no ${reason} Event about ${namespace}/${name} (seen: ${seen})`);
      }
      return found;
    }, opts);
  }

  /** Namespaces holding a mirrorhub copy named `name`. */
  async copies(name: string): Promise<string[]> {
    const list = await this.core().listSecretForAllNamespaces({
      labelSelector: 'mirrorhub.io/managed-by=mirrorhub',
    });
    return list.items
      .filter((s) => s.metadata?.name === name)
      .map((s) => s.metadata!.namespace!)
      .sort();
  }

  /** Names of the payload Secrets in the agent namespace. */
  async payloads(): Promise<string[]> {
    const list = await this.core().listNamespacedSecret({
      namespace: SYSTEM_NS,
      labelSelector: 'mirrorhub.io/payload=true',
    });
    return list.items.map((s) => s.metadata!.name!).sort();
  }
}

/** A SecretMirror manifest with the given spec. */
export function secretMirror(
  namespace: string,
  name: string,
  spec: SecretMirror['spec'],
): SecretMirror {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'SecretMirror',
    metadata: { name, namespace },
    spec,
  } as SecretMirror;
}

export function clusterSecretMirror(
  name: string,
  spec: ClusterSecretMirror['spec'],
): ClusterSecretMirror {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'ClusterSecretMirror',
    metadata: { name },
    spec,
  } as ClusterSecretMirror;
}

/**
 * Registers a cluster with the hub as the charts' NOTES do: a MirrorCluster whose agent runs in
 * mirrorhub-system, reached in-cluster (`{ inCluster: true }`) or through EKS (`{ eks: ... }`).
 */
export async function registerCluster(
  custom: CustomObjectsApi,
  name: string,
  labels: Record<string, string>,
  spec: Omit<MirrorClusterSpec, 'agentNamespace'> & { agentNamespace?: string },
): Promise<void> {
  await custom.createClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'mirrorclusters',
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'MirrorCluster',
      metadata: { name, labels },
      spec: { agentNamespace: SYSTEM_NS, ...spec },
    },
  });
}
