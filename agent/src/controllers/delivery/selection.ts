// Which namespaces each delivery selects, kept up to date from the namespace watch, so that a
// delivery's plan looks at the namespaces that concern it instead of every namespace in the
// cluster. A new namespace then costs one match per delivery, here, where it used to cost every
// delivery it concerns a match of each of the cluster's namespaces in its reconcile, a cost that
// grew with the cluster's namespaces.
//
// No I/O: the namespace watch's handlers feed it (watches.ts), the reconcile reads it.

import type { NamespaceMatcher } from '@mirrorhub/shared/mirror/namespaces';
import type { NamespaceView } from './plan.js';

/** What a delivery selects by: its compiled matcher and spec.acceptLabel. */
export interface SelectionRule {
  matcher: NamespaceMatcher;
  acceptLabel?: string | undefined;
}

interface Selection extends SelectionRule {
  names: Set<string>;
}

/** Whether `rule` selects `ns`, as the plan decides it (terminating or not). */
export function selects(rule: SelectionRule, ns: NamespaceView): boolean {
  return (
    rule.matcher.ok &&
    rule.matcher.matches({ name: ns.name, labels: ns.labels }) &&
    (rule.acceptLabel === undefined || ns.labels?.[rule.acceptLabel] === 'true')
  );
}

export class NamespaceSelections {
  /** Every namespace, by name. */
  private readonly views = new Map<string, NamespaceView>();
  /** Delivery name -> what it selects. Built on first use, then kept up to date. */
  private readonly byDelivery = new Map<string, Selection>();

  /** Every namespace anew (a list or re-list): selections are built again when next asked. */
  reset(views: Iterable<NamespaceView>): void {
    this.views.clear();
    for (const v of views) this.views.set(v.name, v);
    this.byDelivery.clear();
  }

  /** A namespace was added or changed. */
  set(view: NamespaceView): void {
    this.views.set(view.name, view);
    for (const s of this.byDelivery.values()) {
      if (selects(s, view)) s.names.add(view.name);
      else s.names.delete(view.name);
    }
  }

  /** A namespace is gone. */
  delete(name: string): void {
    this.views.delete(name);
    for (const s of this.byDelivery.values()) s.names.delete(name);
  }

  /** The delivery is gone. */
  forget(delivery: string): void {
    this.byDelivery.delete(delivery);
  }

  /**
   * What a delivery's plan must see: every namespace `rule` selects, and the namespaces in
   * `also` (where the delivery holds copies) that exist. A rule that is not the one this
   * delivery's selection was built with (a new spec) builds it again.
   */
  planViews(delivery: string, rule: SelectionRule, also: Iterable<string>): NamespaceView[] {
    let s = this.byDelivery.get(delivery);
    if (!s || s.matcher !== rule.matcher || s.acceptLabel !== rule.acceptLabel) {
      s = { matcher: rule.matcher, acceptLabel: rule.acceptLabel, names: new Set() };
      for (const v of this.views.values()) if (selects(s, v)) s.names.add(v.name);
      this.byDelivery.set(delivery, s);
    }
    const out: NamespaceView[] = [];
    for (const name of s.names) {
      const v = this.views.get(name);
      if (v) out.push(v);
    }
    const extra = new Set<string>();
    for (const name of also) if (!s.names.has(name)) extra.add(name);
    for (const name of extra) {
      const v = this.views.get(name);
      if (v) out.push(v);
    }
    return out;
  }
}
