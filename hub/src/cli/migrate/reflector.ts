// kubernetes-reflector (emberstack): annotations on a source Secret or ConfigMap.
//   reflection-allowed: "true"              copies may exist (manual: a user creates an object
//                                           annotated reflects: ns/name, of any name)
//   reflection-allowed-namespaces: list     where copies may exist (empty: everywhere)
//   reflection-allowed-namespaces-selector  OR a namespace label selector
//   reflection-auto-enabled: "true"         reflector itself creates copies, named as the source,
//   reflection-auto-namespaces: list        where (empty: everywhere) AND allowed
//   reflection-auto-namespaces-selector     OR a namespace label selector
// Lists are comma separated, each entry trimmed, each a .NET regex that must match the whole
// name (MirroringPropertiesExtensions.PatternListMatch). Copies carry reflects: ns/name,
// auto-reflects: True|False, reflected-version and reflected-at.
import type { MirrorDestination } from '@mirrorhub/shared/api/index';
import type { NamespaceInfo } from '@mirrorhub/shared/mirror/namespaces';
import {
  API_VERSION,
  buildRule,
  predecessorMark,
  parseSelectorString,
  ref,
  sorted,
  selectorMatches,
  truthy,
  type Inventory,
  type Listed,
  type MarkCheck,
  type Options,
  type Translation,
} from './model.js';
import { exactPattern, literalName, oldToolSelects, rewritePattern } from './patterns.js';

const P = 'reflector.v1.k8s.emberstack.com';
export const REFLECTOR = {
  allowed: `${P}/reflection-allowed`,
  allowedNamespaces: `${P}/reflection-allowed-namespaces`,
  allowedSelector: `${P}/reflection-allowed-namespaces-selector`,
  autoEnabled: `${P}/reflection-auto-enabled`,
  autoNamespaces: `${P}/reflection-auto-namespaces`,
  autoSelector: `${P}/reflection-auto-namespaces-selector`,
  reflects: `${P}/reflects`,
  autoReflects: `${P}/auto-reflects`,
} as const;

/** One side (allowed or auto): patterns OR selector; both empty means every namespace. */
interface Side {
  patterns: string[];
  selector: string;
}

const splitList = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

const isAll = (s: Side) => s.patterns.length === 0 && s.selector.trim() === '';

function sideSelects(s: Side, ns: NamespaceInfo): boolean {
  if (isAll(s)) return true;
  if (s.patterns.some((p) => oldToolSelects(p, 'leftmost-full', ns.name))) return true;
  if (s.selector.trim() === '') return false;
  const parsed = parseSelectorString(s.selector);
  return parsed.ok && selectorMatches(parsed.selector, ns.labels);
}

const sameSide = (a: Side, b: Side) =>
  a.selector.trim() === b.selector.trim() &&
  sorted(a.patterns).join('\n') === sorted(b.patterns).join('\n');

type SideDest = { ok: true; dest: MirrorDestination } | { ok: false; reason: string };

/** One side as a mirrorhub destination (mirrorhub's patterns OR selector is reflector's OR). */
function sideDestination(s: Side): SideDest {
  if (isAll(s)) return { ok: true, dest: { namespaces: ['.*'] } };
  const dest: MirrorDestination = {};
  const namespaces: string[] = [];
  for (const p of s.patterns) {
    const r = rewritePattern(p, 'leftmost-full');
    if (!r.ok) return r;
    namespaces.push(r.pattern);
  }
  if (namespaces.length > 0) dest.namespaces = namespaces;
  if (s.selector.trim() !== '') {
    const parsed = parseSelectorString(s.selector);
    if (!parsed.ok)
      return { ok: false, reason: `selector ${JSON.stringify(s.selector)}: ${parsed.reason}` };
    dest.namespaceSelector = parsed.selector;
  }
  return { ok: true, dest };
}

/**
 * allowed AND auto as one mirrorhub destination, which is a union of patterns and a selector: exact
 * when one side selects everything, both are the same, or one side is a list of plain names (then
 * the names the other side selects, checked with reflector's own matching).
 */
function autoDestination(allowed: Side, auto: Side, inv: Inventory): SideDest {
  if (isAll(allowed)) return sideDestination(auto);
  if (isAll(auto) || sameSide(allowed, auto)) return sideDestination(allowed);
  for (const [names, other] of [
    [allowed, auto],
    [auto, allowed],
  ] as const) {
    const literal = names.patterns.map(literalName);
    if (names.selector.trim() === '' && literal.every((l) => l !== undefined)) {
      const check = sideDestination(other);
      if (!check.ok) return check;
      const kept = (literal as string[]).filter((n) =>
        sideSelects(other, inv.namespaces.find((x) => x.name === n) ?? { name: n }),
      );
      if (kept.length === 0)
        return { ok: false, reason: 'the allowed and auto lists have no namespace in common' };
      return { ok: true, dest: { namespaces: kept.map(exactPattern) } };
    }
  }
  return {
    ok: false,
    reason:
      'reflection-allowed-namespaces and reflection-auto-namespaces both hold patterns or selectors; reflector copies where both match, and a mirrorhub destination is a union that cannot express that intersection: make one of them a list of plain names, or the same as the other',
  };
}

export function translateReflector(inv: Inventory, opts: Options, out: Translation): void {
  for (const [kind, items] of [
    ['Secret', inv.secrets],
    ['ConfigMap', inv.configMaps],
  ] as const) {
    for (const src of items) {
      const a = src.metadata.annotations ?? {};
      if (!(REFLECTOR.allowed in a) && !(REFLECTOR.autoEnabled in a)) continue;
      translateSource(kind, src, items, inv, opts, out);
    }
  }
}

function translateSource(
  kind: 'Secret' | 'ConfigMap',
  src: Listed,
  items: readonly Listed[],
  inv: Inventory,
  opts: Options,
  out: Translation,
): void {
  const a = src.metadata.annotations ?? {};
  const ns = src.metadata.namespace ?? '';
  const name = src.metadata.name;
  const object = ref(kind, src.metadata);
  if (!truthy(a[REFLECTOR.allowed])) {
    out.notes.push(
      `${object}: reflection-allowed is not "true": reflector copies nothing, nothing to translate`,
    );
    return;
  }
  const allowed: Side = {
    patterns: splitList(a[REFLECTOR.allowedNamespaces]),
    selector: a[REFLECTOR.allowedSelector] ?? '',
  };
  const auto: Side = {
    patterns: splitList(a[REFLECTOR.autoNamespaces]),
    selector: a[REFLECTOR.autoSelector] ?? '',
  };
  const autoOn = truthy(a[REFLECTOR.autoEnabled]);
  const sourceRef = `${ns}/${name}`;
  const mark = predecessorMark({
    targetKind: kind,
    source: { namespace: ns, name },
    mirror: { kind: 'SecretMirror', name },
  });
  const nsInfo = (n: string) => inv.namespaces.find((x) => x.name === n) ?? { name: n };

  // Manual reflections: objects users created with reflects: ns/name in allowed namespaces.
  const manual = new Map<string, string[]>();
  for (const o of items) {
    const oa = o.metadata.annotations ?? {};
    if (oa[REFLECTOR.reflects] !== sourceRef || truthy(oa[REFLECTOR.autoReflects])) continue;
    const where = o.metadata.namespace ?? '';
    if (!sideSelects(allowed, nsInfo(where))) continue;
    manual.set(o.metadata.name, [...(manual.get(o.metadata.name) ?? []), where]);
  }

  let dest: MirrorDestination = {};
  let before: string[] = [];
  if (autoOn) {
    const d = autoDestination(allowed, auto, inv);
    if (!d.ok) {
      out.refusals.push({ tool: 'reflector', object, reason: d.reason });
      return;
    }
    dest = d.dest;
    before = inv.namespaces
      .filter((n) => n.name !== ns && sideSelects(allowed, n) && sideSelects(auto, n))
      .map((n) => n.name);
  }
  // Manual copies named as the source join the main mirror by name.
  const sameName = manual.get(name) ?? [];
  manual.delete(name);
  if (sameName.length > 0) {
    const extra = sameName.filter((n) => !before.includes(n));
    if (extra.length > 0) {
      dest.namespaces = [...(dest.namespaces ?? []), ...extra.map(exactPattern)];
      before = [...before, ...extra];
      out.notes.push(
        `${object}: manual reflections in ${extra.join(', ')} become fixed namespaces of the mirror: reflector follows objects users create, a mirrorhub mirror lists its namespaces (add new ones to it)`,
      );
    }
  }
  if (autoOn || sameName.length > 0) {
    emit(kind, ns, name, name, dest, before, object, mark, inv, opts, out);
  } else if (manual.size === 0) {
    out.notes.push(
      `${object}: reflection allowed, but neither auto-enabled nor reflected anywhere: nothing to translate`,
    );
  }
  for (const [copyName, namespaces] of manual) {
    out.notes.push(
      `${object}: manual reflections named ${copyName} (${namespaces.join(', ')}) become their own mirror ${name}-${copyName}, with those namespaces fixed`,
    );
    emit(
      kind,
      ns,
      name,
      copyName,
      { namespaces: sorted(namespaces).map(exactPattern) },
      namespaces,
      `${object} (manual reflections named ${copyName})`,
      mark,
      inv,
      opts,
      out,
      `${name}-${copyName}`.slice(0, 253),
    );
  }
}

function emit(
  kind: 'Secret' | 'ConfigMap',
  ns: string,
  name: string,
  targetName: string,
  dest: MirrorDestination,
  before: string[],
  object: string,
  mark: MarkCheck,
  inv: Inventory,
  opts: Options,
  out: Translation,
  mirrorName = name,
): void {
  if (targetName !== name) dest.name = targetName;
  const rule = buildRule(
    {
      tool: 'reflector',
      object,
      mirror: `SecretMirror ${ns}/${mirrorName}`,
      kind,
      source: { namespace: ns, name },
      targetName,
      destination: dest,
      before,
      mark,
    },
    inv,
    opts,
    out,
  );
  if (!rule) return;
  out.objects.push({
    apiVersion: API_VERSION,
    kind: 'SecretMirror',
    metadata: { name: mirrorName, namespace: ns },
    spec: {
      source: { kind, name },
      destination: dest,
    },
  });
}
