// A Kubernetes Secret or ConfigMap as a mirror's source: one field-selected watch per distinct
// source object (watches.ts), shared by the mirrors that read it.
import { mirrorPolicies, type ResolvedSource } from '@mirrorhub/shared/api/index';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import type { ControllerMetrics, Gauge, Logger } from '@mirrorhub/shared/kit/runtime/index';
import type {
  CleanupContext,
  MirrorContext,
  Report,
  SourceKind,
  SourceReading,
} from '../../kinds.js';
import { SourceWatches } from '../../../object-watches.js';

export interface KubernetesSourcesOptions {
  kubeConfig: KubeAccess;
  watchProgressDeadlineMs?: number | undefined;
  logger: Logger;
  metrics: ControllerMetrics;
  /** Which mirrors to reconcile: their source changed. */
  onChange(mirrorKeys: readonly string[]): void;
}

export class KubernetesSources implements SourceKind {
  private readonly watches: SourceWatches;
  private readonly gauge: Gauge;

  constructor(opts: KubernetesSourcesOptions) {
    this.gauge = opts.metrics.gauge('source_watches', 'Distinct mirror sources being watched.');
    this.watches = new SourceWatches({
      kubeConfig: opts.kubeConfig,
      watchProgressDeadlineMs: opts.watchProgressDeadlineMs,
      logger: opts.logger,
      metrics: opts.metrics,
      onChange: opts.onChange,
    });
  }

  observe(ctx: MirrorContext, source: ResolvedSource | undefined): Promise<SourceReading> {
    const kube = source && source.kind !== 'Vault' ? source : undefined;
    this.follow(ctx.key, kube, mirrorPolicies(ctx.mirror.spec).pollPeriodSeconds * 1000);
    if (!kube) return Promise.resolve({ state: 'other' });
    const seen = this.watches.get(kube);
    // Not listed yet: the watch's first list enqueues this mirror again.
    if (seen.state === 'unknown') return Promise.resolve({ state: 'unknown' });
    return Promise.resolve({ state: 'observed', observation: seen });
  }

  release(ctx: CleanupContext): Promise<Report> {
    this.follow(ctx.key, undefined);
    return Promise.resolve({});
  }

  stop(): Promise<void> {
    return this.watches.stop();
  }

  private follow(key: string, source: Parameters<SourceWatches['set']>[1], pollMs?: number): void {
    this.watches.set(key, source, pollMs);
    this.gauge.set(this.watches.size);
  }
}
