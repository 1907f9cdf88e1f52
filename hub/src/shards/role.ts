// The Role of a hub replica that shares the fleet: leading while its election term runs (the
// hub's `leader role` peer sets it), so the controllers that run on every replica know when to
// write what has one writer.
import type { Role } from './ownership.js';

export class ElectedRole implements Role {
  private value = false;
  private readonly listeners = new Set<(leading: boolean) => void>();

  leading(): boolean {
    return this.value;
  }

  onChange(listener: (leading: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  set(leading: boolean): void {
    if (leading === this.value) return;
    this.value = leading;
    for (const l of this.listeners) l(leading);
  }
}
