import { describe, expect, it } from 'vitest';
import type { MirrorDelivery, MirrorDeliverySpec } from '@mirrorhub/shared/api/types.gen';
import { parsePolicy } from '@mirrorhub/agent/policy';
import { AGENT_FINALIZER, LABEL_DELIVERY, LABEL_MANAGED_BY } from '@mirrorhub/shared/api/contract';
import {
  compileDeliveryMatcher,
  plan,
  type Action,
  type CopyView,
  type NamespaceView,
  type PlanInput,
} from './plan.js';
import { NamespaceSelections, selects, type SelectionRule } from './selection.js';

function delivery(name: string, spec: Partial<MirrorDeliverySpec>, generation = 1): MirrorDelivery {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: {
      name,
      namespace: 'mirrorhub-system',
      uid: `uid-${name}`,
      generation,
      finalizers: [AGENT_FINALIZER],
    },
    spec: {
      mirror: { kind: 'SecretMirror', namespace: 'apps', name: 'tls', uid: 'u1' },
      originCluster: 'hub',
      payloadSecretName: name,
      target: { kind: 'Secret', name: 'tls' },
      contentHash: 'h1',
      ...spec,
    },
  };
}

const ruleOf = (d: MirrorDelivery): SelectionRule => ({
  matcher: compileDeliveryMatcher(d),
  acceptLabel: d.spec.acceptLabel,
});

const view = (name: string, labels?: Record<string, string>, terminating = false) => ({
  name,
  labels,
  terminating,
});

/** Names, sorted: selections are sets. */
const names = (views: readonly NamespaceView[]) => views.map((v) => v.name).sort();

/** A small deterministic generator, so a failure is reproducible. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

describe('NamespaceSelections', () => {
  it('keeps every selection equal to matching each namespace anew, through adds, relabels and deletes', () => {
    const byName = delivery('by-name', { namespaces: ['team-.*'], excludeNamespaces: ['team-3'] });
    const byLabel = delivery('by-label', {
      namespaceSelector: { matchLabels: { env: 'prod' } },
      acceptLabel: 'mirrorhub.io/accept',
    });
    const rules = [byName, byLabel].map((d) => [d.metadata.name!, ruleOf(d)] as const);
    const sel = new NamespaceSelections();
    const cluster = new Map<string, NamespaceView>();
    const next = random(42);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;

    for (let step = 0; step < 600; step++) {
      const name = `${pick(['team', 'ops'])}-${Math.floor(next() * 8)}`;
      if (next() < 0.25) {
        cluster.delete(name);
        sel.delete(name);
      } else {
        const labels: Record<string, string> = {};
        if (next() < 0.5) labels['env'] = pick(['prod', 'dev']);
        if (next() < 0.5) labels['mirrorhub.io/accept'] = pick(['true', 'false']);
        const v = view(name, labels, next() < 0.1);
        cluster.set(name, v);
        sel.set(v);
      }
      // Ask at random moments: a selection built mid-way must then follow the changes too.
      if (next() < 0.3) {
        for (const [d, rule] of rules) {
          const expected = [...cluster.values()].filter((v) => selects(rule, v));
          expect(names(sel.planViews(d, rule, [])), `step ${step}, ${d}`).toEqual(names(expected));
        }
      }
    }
  });

  it('adds the namespaces holding copies that still exist, once each', () => {
    const d = delivery('d', { namespaces: ['team-a'] });
    const sel = new NamespaceSelections();
    sel.reset([view('team-a'), view('old')]);
    expect(names(sel.planViews('d', ruleOf(d), ['old', 'old', 'team-a', 'gone']))).toEqual([
      'old',
      'team-a',
    ]);
  });

  it('builds a selection again for a new spec, and drops it for a delivery that is gone', () => {
    const sel = new NamespaceSelections();
    sel.reset([view('team-a'), view('team-b')]);
    const v1 = delivery('d', { namespaces: ['team-a'] });
    expect(names(sel.planViews('d', ruleOf(v1), []))).toEqual(['team-a']);
    const v2 = delivery('d', { namespaces: ['team-b'] }, 2);
    expect(names(sel.planViews('d', ruleOf(v2), []))).toEqual(['team-b']);
    sel.forget('d');
    sel.set(view('team-c'));
    expect(
      names(sel.planViews('d', ruleOf(delivery('d', { namespaces: ['team-.*'] })), [])),
    ).toEqual(['team-a', 'team-b', 'team-c']);
  });

  it('an invalid selector selects nothing (the plan reports the error)', () => {
    const sel = new NamespaceSelections();
    sel.reset([view('team-a')]);
    const bad = delivery('d', { namespaces: ['team-('] });
    expect(ruleOf(bad).matcher.ok).toBe(false);
    expect(sel.planViews('d', ruleOf(bad), [])).toEqual([]);
  });
});

describe('a plan over the selected namespaces', () => {
  it('decides exactly what a plan over every namespace decides', () => {
    const d = delivery('d', { namespaces: ['team-.*'], acceptLabel: 'ok' });
    const all = [
      view('team-a', { ok: 'true' }),
      view('team-b', { ok: 'true' }, true), // terminating: never written to
      view('team-c'), // not accepted: its copy goes
      view('kube-system', { ok: 'true' }), // the default policy refuses it
      view('team-d', { ok: 'true' }),
      ...Array.from({ length: 50 }, (_, i) => view(`other-${i}`)),
    ];
    const ours = { [LABEL_MANAGED_BY]: 'mirrorhub', [LABEL_DELIVERY]: 'd' };
    const copies: CopyView[] = [
      { kind: 'Secret', namespace: 'team-c', name: 'tls', uid: 'c', labels: ours },
      { kind: 'Secret', namespace: 'other-7', name: 'tls', uid: 'o', labels: ours },
      { kind: 'Secret', namespace: 'team-d', name: 'old-name', uid: 'n', labels: ours },
    ];
    const input = (namespaces: readonly NamespaceView[]): PlanInput => ({
      delivery: d,
      payload: { data: { a: 'Yg==' }, binaryKeys: [] },
      namespaces,
      copies,
      failures: new Map([
        ['other-7', 'earlier delete failed'],
        ['other-9', 'a failure where nothing is left'],
      ]),
      agentVersion: '1',
      now: new Date('2026-01-01T00:00:00Z'),
      policy: parsePolicy({}, 'mirrorhub-system'),
      signature: { ok: true },
    });
    const sel = new NamespaceSelections();
    sel.reset(all);
    const narrowed = sel.planViews(
      'd',
      ruleOf(d),
      copies.map((c) => c.namespace),
    );
    expect(narrowed.length).toBeLessThan(10);

    const full = plan(input(all));
    const fast = plan(input(narrowed));
    const byNs = (a: Action) => `${a.op} ${a.namespace}`;
    expect(fast.actions.map(byNs).sort()).toEqual(full.actions.map(byNs).sort());
    expect(full.actions.map(byNs).sort()).toEqual([
      'create team-a',
      'create team-d',
      'delete other-7',
      'delete team-c',
      'delete team-d',
    ]);
    expect(fast.report().status).toEqual(full.report().status);
    expect(fast.selected).toBe(full.selected);
  });
});
