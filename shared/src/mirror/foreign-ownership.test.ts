import { describe, expect, it } from 'vitest';
import {
  FOREIGN_OWNERSHIP_KEYS,
  FOREIGN_OWNERSHIP_PATTERNS,
  foreignOwnershipReason,
  foreignPatternProblem,
} from './foreign-ownership.js';
import { matchesKeyPattern } from './shape.js';

describe('the list of other controllers’ ownership marks', () => {
  it('has each pattern once, valid, with whose mark it is and why', () => {
    expect(new Set(FOREIGN_OWNERSHIP_PATTERNS).size).toBe(FOREIGN_OWNERSHIP_PATTERNS.length);
    for (const k of FOREIGN_OWNERSHIP_KEYS) {
      expect(foreignPatternProblem(k.pattern), k.pattern).toBeUndefined();
      expect(k.owner, k.pattern).not.toBe('');
      expect(k.why, k.pattern).not.toBe('');
      expect(k.pattern.startsWith('mirrorhub.io/'), k.pattern).toBe(false);
    }
  });

  it.each<[string, boolean]>([
    // Helm's adoption marks.
    ['app.kubernetes.io/managed-by', true],
    ['meta.helm.sh/release-name', true],
    ['meta.helm.sh/release-namespace', true],
    ['helm.sh/resource-policy', true],
    // Argo CD's tracking, by label and by annotation.
    ['app.kubernetes.io/instance', true],
    ['argocd.argoproj.io/tracking-id', true],
    ['argocd.argoproj.io/installation-id', true],
    // Flux, cli-utils, kubectl ApplySets, kustomize, Config Sync, kapp.
    ['kustomize.toolkit.fluxcd.io/name', true],
    ['helm.toolkit.fluxcd.io/namespace', true],
    ['config.k8s.io/owning-inventory', true],
    ['cli-utils.sigs.k8s.io/inventory-id', true],
    ['applyset.kubernetes.io/part-of', true],
    ['kustomize.config.k8s.io/needs-hash', true],
    ['configsync.gke.io/manager', true],
    ['configmanagement.gke.io/managed', true],
    ['kapp.k14s.io/app', true],
    // The other mirroring tools and secret operators.
    ['reflector.v1.k8s.emberstack.com/reflects', true],
    ['reflector.v1.k8s.emberstack.com/reflection-auto-enabled', true],
    ['kubed.appscode.com/sync', true],
    ['clustersecret.io', true],
    ['clustersecret.io/created-by', true],
    ['mirrors.kts.studio/owned-by', true],
    ['reconcile.external-secrets.io/managed', true],
    ['reconcile.external-secrets.io/created-by', true],
    ['sealedsecrets.bitnami.com/managed', true],
    // Not ownership: descriptive keys and other tools' harmless marks travel.
    ['app.kubernetes.io/name', false],
    ['app.kubernetes.io/part-of', false],
    ['argocd.argoproj.io/secret-type', false],
    ['cert-manager.io/issuer-name', false],
    ['reloader.stakater.com/match', false],
    ['mirrorhub.io/managed-by', false],
    ['helm.shx/other', false],
  ])('%s: %s', (key, listed) => {
    expect(matchesKeyPattern(key, FOREIGN_OWNERSHIP_PATTERNS)).toBe(listed);
  });

  it('gives the reason of a listed pattern, and none for an owner’s own', () => {
    expect(foreignOwnershipReason('meta.helm.sh/*')).toMatch(/^Helm: release-name and/);
    expect(foreignOwnershipReason('example.com/owner')).toBeUndefined();
  });

  it.each<[string, string | undefined]>([
    ['a.io/key', undefined],
    ['a.io/*', undefined],
    ['a.io/*/b', '"a.io/*/b" has a * before its end (a pattern is a key, or a prefix ending in *)'],
    ['*', '"*" would refuse every key; list the keys or prefixes instead'],
  ])('pattern %s', (pattern, problem) => {
    expect(foreignPatternProblem(pattern)).toBe(problem);
  });
});
