// --plan: per rule, what mirrorhub would do with each namespace it selects: create the copy,
// take over the old tool's copy (its mark names this same source), or leave alone whatever else
// holds the name. Pure: reads the listed metadata, writes nothing.
import type { Inventory, Listed, Rule } from './model.js';

export type Action = 'create' | 'take over' | 'leave alone';

export interface PlannedCopy {
  namespace: string;
  action: Action;
  /** Why an existing object is left alone, or whose copy is taken over. */
  why?: string;
}

export interface RulePlan {
  rule: Rule;
  copies: PlannedCopy[];
  /** Old copies of this rule outside mirrorhub's selection: they stay as they are. */
  outside: { namespace: string; why: string }[];
}

export function planRules(rules: readonly Rule[], inv: Inventory): RulePlan[] {
  return rules.map((rule) => {
    const items: readonly Listed[] = rule.kind === 'ConfigMap' ? inv.configMaps : inv.secrets;
    const named = new Map(
      items
        .filter((o) => o.metadata.name === rule.targetName)
        .map((o) => [o.metadata.namespace ?? '', o]),
    );
    const copies: PlannedCopy[] = rule.after.map((namespace) => {
      const existing = named.get(namespace);
      if (!existing) return { namespace, action: 'create' };
      const mark = rule.mark(existing.metadata);
      return mark.ours
        ? { namespace, action: 'take over', why: `${rule.tool} copy of this source` }
        : { namespace, action: 'leave alone', why: mark.why };
    });
    const outside: { namespace: string; why: string }[] = [];
    for (const [namespace, o] of named) {
      if (rule.after.includes(namespace) || !rule.mark(o.metadata).ours) continue;
      if (namespace === rule.source.namespace && rule.targetName === rule.source.name) continue;
      const dropped = rule.dropped.find((d) => d.namespace === namespace);
      outside.push({
        namespace,
        why: dropped?.why ?? 'not selected by the rule today; the old tool would delete it',
      });
    }
    return { rule, copies, outside };
  });
}

export function renderPlan(plans: readonly RulePlan[]): string {
  const lines: string[] = [];
  for (const { rule, copies, outside } of plans) {
    lines.push(`${rule.mirror}  (from ${rule.object}, ${rule.tool})`);
    if (rule.elsewhere) {
      lines.push(`  writes ${rule.elsewhere}; no copies in this cluster's namespaces`);
      lines.push('');
      continue;
    }
    lines.push(...selectionLines(rule).map((l) => `  ${l}`));
    if (copies.length === 0) lines.push('  no copies');
    for (const c of copies) {
      lines.push(
        `  ${c.action.padEnd(11)} ${c.namespace}/${rule.targetName}${c.why ? `  (${c.why})` : ''}`,
      );
    }
    for (const o of outside) {
      lines.push(
        `  ${'stays'.padEnd(11)} ${o.namespace}/${rule.targetName}  (${o.why}; mirrorhub does not touch it)`,
      );
    }
    lines.push('');
  }
  return lines.join('\n');
}

/** The before/after lines of one rule. */
export function selectionLines(rule: Rule): string[] {
  const list = (xs: string[]) => (xs.length > 0 ? xs.join(', ') : '(none)');
  const lines = [
    `before (${rule.tool}): ${list(rule.before)}`,
    `after (mirrorhub): ${list(rule.after)}`,
  ];
  if (rule.dropped.length === 0) lines.push('same namespaces');
  for (const d of rule.dropped) lines.push(`not ${d.namespace}: ${d.why}`);
  return lines;
}
