// The set of clusters the hub can deliver to. The mirror controller keeps one connection per
// target and re-plans every mirror when the set changes.
import type { ClusterTarget } from './target.js';

export type RegistryChange =
  | { type: 'added'; target: ClusterTarget }
  | { type: 'updated'; target: ClusterTarget; previous: ClusterTarget }
  | { type: 'removed'; target: ClusterTarget };

export class ClusterRegistry {
  private readonly targets = new Map<string, ClusterTarget>();
  private readonly listeners = new Set<(c: RegistryChange) => void>();

  constructor(initial: readonly ClusterTarget[] = []) {
    for (const t of initial) this.targets.set(t.name, t);
  }

  /** Every target, sorted by name. */
  list(): ClusterTarget[] {
    return [...this.targets.values()].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
  }

  /** How many targets there are (without list()'s copy and sort). */
  get size(): number {
    return this.targets.size;
  }

  get(name: string): ClusterTarget | undefined {
    return this.targets.get(name);
  }

  /** The hub's own cluster. */
  local(): ClusterTarget | undefined {
    return [...this.targets.values()].find((t) => t.local);
  }

  /** Add or replace the target with this name. */
  set(target: ClusterTarget): void {
    const previous = this.targets.get(target.name);
    if (previous === target) return;
    if (target.local) {
      const other = this.local();
      if (other && other.name !== target.name) {
        throw new Error(`cluster registry: "${other.name}" is already the local cluster`);
      }
    }
    this.targets.set(target.name, target);
    this.emit(previous ? { type: 'updated', target, previous } : { type: 'added', target });
  }

  /**
   * Remove the target with this name; with `only`, just when it is still that target, so a
   * controller winding down never removes what its successor registered since.
   */
  remove(name: string, only?: ClusterTarget): boolean {
    const target = this.targets.get(name);
    if (!target || (only !== undefined && target !== only)) return false;
    this.targets.delete(name);
    this.emit({ type: 'removed', target });
    return true;
  }

  /** Listen to changes; returns an unsubscribe function. */
  onChange(listener: (c: RegistryChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(change: RegistryChange): void {
    for (const l of this.listeners) {
      try {
        l(change);
      } catch {
        // a listener must not break the registry
      }
    }
  }
}
