// The hub's AWS sessions to its EKS clusters, kept across leadership terms.
//
// A ClusterController lives for one leadership term. Each EksClusterAccess it holds caches an
// assumed-role session (up to an hour), the cluster's endpoint and CA, and a bearer token. A hub
// that loses its Lease under load and wins it back a few seconds later would otherwise assume
// every role and describe every cluster again, one set of AWS calls per cluster per term
// (docs/BENCHMARKS.md, "100 followers", counts them). The process keeps them here
// instead: a term's controller hands its sessions back when it stops and the next one takes
// each again by the same cluster name and EKS spec (same account, role, ExternalId, cluster).
//
// Nothing here is written anywhere; it is the same memory the process held while leading.
// Sessions of clusters a new term no longer has are destroyed once that term has registered
// every cluster it found (dropUnclaimed), and all of them when the hub stops (close).
//
// The STS clients every session assumes its role through are the process's too (StsClients:
// one per region, not one per cluster), made on the first EKS cluster.
import { canonicalJson } from '@mirrorhub/shared/mirror/hash';
import type { EksAccess } from '@mirrorhub/shared/api/index';
import type { EksClusterAccess, StsClients } from './aws/index.js';

export class EksSessions {
  private readonly kept = new Map<string, EksClusterAccess>();
  private sts: StsClients | undefined;

  /** The process's STS clients, made by `make` the first time. */
  stsClients(make: () => StsClients): StsClients {
    this.sts ??= make();
    return this.sts;
  }

  /** The session a previous term kept for this cluster and spec, if any (it is yours now). */
  take(cluster: string, eks: EksAccess): EksClusterAccess | undefined {
    const key = keyOf(cluster, eks);
    const access = this.kept.get(key);
    this.kept.delete(key);
    return access;
  }

  /** Keep `access` for the next term (its controller is stopping, the cluster still exists). */
  keep(cluster: string, eks: EksAccess, access: EksClusterAccess): void {
    const key = keyOf(cluster, eks);
    const previous = this.kept.get(key);
    if (previous && previous !== access) previous.destroy();
    this.kept.set(key, access);
  }

  /** Destroy what no term took back (clusters deleted or changed while standing by). */
  dropUnclaimed(): number {
    const n = this.kept.size;
    for (const access of this.kept.values()) access.destroy();
    this.kept.clear();
    return n;
  }

  /** The hub stops: destroy what is kept, and the STS clients. */
  close(): void {
    this.dropUnclaimed();
    this.sts?.destroy();
    this.sts = undefined;
  }

  /** How many are kept and not yet taken (tests, logs). */
  get size(): number {
    return this.kept.size;
  }
}

function keyOf(cluster: string, eks: EksAccess): string {
  return canonicalJson({ cluster, eks });
}
