// Which clusters a mirror delivers to. Pure: MirrorCluster support only adds targets.
import { type ClusterSelection } from '@mirrorhub/shared/api/index';
import { compileLabelSelector } from '@mirrorhub/shared/mirror/index';

export interface SelectableCluster {
  name: string;
  labels: Readonly<Record<string, string>>;
  local: boolean;
}

export interface ClusterSelectionResult<T> {
  /** Selected targets, sorted by name. */
  selected: T[];
  /** Names listed in destination.clusters.names that no target has, sorted. */
  missing: string[];
  /** destination.clusters.selector does not compile (the mirror goes to phase Error). */
  error?: string;
}

/**
 * destination.clusters absent: the local cluster only. Otherwise the targets named in `names`
 * OR matching `selector` (union; `{}` selects every target, Kubernetes semantics). A
 * `clusters: {}` with neither selects nothing.
 */
export function selectClusters<T extends SelectableCluster>(
  selection: ClusterSelection | undefined,
  targets: readonly T[],
): ClusterSelectionResult<T> {
  const byName = (a: { name: string }, b: { name: string }) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  if (!selection) {
    return { selected: targets.filter((t) => t.local).sort(byName), missing: [] };
  }
  let matches: ((labels: Readonly<Record<string, string>>) => boolean) | undefined;
  if (selection.selector) {
    const m = compileLabelSelector(selection.selector, 'destination.clusters.selector');
    if (!m.ok) return { selected: [], missing: [], error: m.error };
    matches = m.matches;
  }
  const names = new Set(selection.names ?? []);
  const selected = targets.filter((t) => names.has(t.name) || (matches?.(t.labels) ?? false));
  const known = new Set(targets.map((t) => t.name));
  const missing = [...names].filter((n) => !known.has(n)).sort();
  return { selected: selected.sort(byName), missing };
}
