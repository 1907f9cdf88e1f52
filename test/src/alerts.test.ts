// The charts' alerts: one rule file per chart (charts/<chart>/rules/*.yaml), checked and
// unit-tested by promtool (Debian's prometheus package), documented in docs/alerts.md, written
// only against metrics the hub and agent define, and rendered by each chart as a PrometheusRule
// carrying exactly that file's rules (test/src/multicluster/alerts.test.ts fires one for real).
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';

import { ensurePrometheus, type PrometheusBins } from '@mirrorhub/infra/components/index';

import { chartsDir } from './support/crds.js';
import { isolatedHelm, type Helm } from './support/helm.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const DOCS = join(ROOT, 'docs', 'alerts.md');
const HUB_REQUIRED = ['--set', 'signing.existingSecret=mirrorhub-hub-signing'];
const AGENT_REQUIRED = [
  '--set',
  'clusterName=follower-a',
  '--set-json',
  'hubPublicKeys=["-----BEGIN PUBLIC KEY-----\\nMCowBQYDK2VwAyEAbAq5MVEPIMGhukiXHIy30stsS3+Sq+4ghMlZqRNBvJ8=\\n-----END PUBLIC KEY-----\\n"]',
];
const WITH_CRD = ['--api-versions', 'monitoring.coreos.com/v1/PrometheusRule'];

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleFile {
  groups: { name: string; rules: Rule[] }[];
}

const CHARTS = [
  {
    chart: 'mirrorhub-hub',
    file: 'rules/hub-alerts.yaml',
    promtest: 'alerts/hub.promtest.yaml',
    required: HUB_REQUIRED,
  },
  {
    chart: 'mirrorhub-agent',
    file: 'rules/agent-alerts.yaml',
    promtest: 'alerts/agent.promtest.yaml',
    required: AGENT_REQUIRED,
  },
] as const;

const rulesPath = (c: (typeof CHARTS)[number]) => join(chartsDir, c.chart, c.file);
const ruleFile = (c: (typeof CHARTS)[number]) =>
  parseYaml(readFileSync(rulesPath(c), 'utf8')) as RuleFile;
const alertsOf = (c: (typeof CHARTS)[number]) => ruleFile(c).groups.flatMap((g) => g.rules);
const promtestPath = (c: (typeof CHARTS)[number]) => join(import.meta.dirname, c.promtest);

/** Every `mirrorhub_*` metric the hub, the agent and the kit define, from their sources. */
function definedMetrics(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => {
      const p = join(dir, f);
      if (statSync(p).isDirectory()) return walk(p);
      return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : [];
    });
  const files = ['hub/src', 'agent/src', 'shared/src/kit'].flatMap((d) => walk(join(ROOT, d)));
  for (const f of files) {
    const src = readFileSync(f, 'utf8');
    // metrics.counter('x', ...), m.gauge('x', ...), full('x'): defined as mirrorhub_x.
    for (const m of src.matchAll(/\b(?:counter|gauge|histogram|full)\(\s*'([a-z_]+)'/g)) {
      names.add(`mirrorhub_${m[1]}`);
    }
    // new Gauge({ name: 'mirrorhub_agent_copies', ... })
    for (const m of src.matchAll(/name: '(mirrorhub_[a-z_]+)'/g)) names.add(m[1]!);
  }
  return names;
}

let bins: PrometheusBins;
let helm: Helm;

beforeAll(async () => {
  [bins, helm] = await Promise.all([ensurePrometheus(), isolatedHelm()]);
}, 20 * 60_000);

afterAll(async () => {
  await helm?.cleanup();
});

describe.each(CHARTS)('$chart alerts ($file)', (c) => {
  it('promtool check rules accepts the file', async () => {
    const { stdout } = await run(bins.promtool, ['check', 'rules', rulesPath(c)]);
    expect(stdout).toContain(`SUCCESS: ${alertsOf(c).length} rules found`);
  });

  it('promtool test rules passes its unit tests', async () => {
    const res = await run(bins.promtool, ['test', 'rules', promtestPath(c)]).catch(
      (err: { code?: number; stdout?: string; stderr?: string }) => err,
    );
    // On a failure promtool prints what it expected and what fired: shown by the assertion.
    expect({
      code: 'code' in res ? res.code : 0,
      out: `${res.stdout ?? ''}${res.stderr ?? ''}`,
    }).toMatchObject({ code: 0, out: expect.stringMatching(/SUCCESS/) as unknown });
  });

  it('every alert has a unit test where it fires and one where it stays silent', () => {
    const tests = (
      parseYaml(readFileSync(promtestPath(c), 'utf8')) as {
        tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
      }
    ).tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const { alert } of alertsOf(c)) {
      const mine = tests.filter((t) => t.alertname === alert);
      expect(
        mine.some((t) => t.exp_alerts.length > 0),
        `${alert} fires in a test`,
      ).toBe(true);
      expect(
        mine.some((t) => t.exp_alerts.length === 0),
        `${alert} is silent in a test`,
      ).toBe(true);
    }
  });

  it('every alert has a for:, a severity, a summary, a description and its runbook', () => {
    const docs = readFileSync(DOCS, 'utf8');
    for (const r of alertsOf(c)) {
      expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
      expect(['critical', 'warning', 'info'], r.alert).toContain(r.labels?.['severity']);
      expect(r.annotations?.['summary'], r.alert).toBeTruthy();
      expect(r.annotations?.['description'], r.alert).toBeTruthy();
      expect(r.annotations?.['runbook_url']).toBe(`docs/alerts.md#${r.alert.toLowerCase()}`);
      // The anchor exists: a heading of the alert's name, with what to check and do.
      const section = docs.split(/^### /m).find((s) => s.startsWith(`${r.alert}\n`));
      expect(section, `docs/alerts.md has ### ${r.alert}`).toBeDefined();
      expect(section).toMatch(/\*\*Check\*\*/);
      expect(section).toMatch(/\*\*Fix\*\*/);
    }
    // The docs link to the file itself, the one source.
    expect(docs).toContain(`(../${relative(ROOT, rulesPath(c))})`);
  });

  it('uses only metrics the hub, the agent and the kit define', () => {
    const defined = definedMetrics();
    expect(defined).toContain('mirrorhub_write_errors_total'); // the scan finds the kit's
    for (const r of alertsOf(c)) {
      for (const m of r.expr.matchAll(/\bmirrorhub_[a-z_]+/g)) {
        expect(defined, `${r.alert} uses ${m[0]}`).toContain(m[0]);
      }
    }
  });

  const render = async (args: string[]) =>
    parseAllDocuments(
      await helm(['template', 'mirrorhub', join(chartsDir, c.chart), ...c.required, ...args]),
    )
      .map((d) => d.toJS() as { kind?: string; metadata: { labels: Record<string, string> } })
      .filter((o) => o?.kind === 'PrometheusRule') as unknown as {
      metadata: { name: string; labels: Record<string, string> };
      spec: RuleFile;
    }[];

  it('renders no PrometheusRule by default, nor where the cluster does not serve the kind', async () => {
    expect(await render(WITH_CRD)).toEqual([]);
    expect(await render(['--set', 'prometheusRule.enabled=true'])).toEqual([]);
  });

  it("renders, when enabled, a PrometheusRule carrying exactly the file's rules", async () => {
    const [rule, ...more] = await render([
      ...WITH_CRD,
      '--set',
      'prometheusRule.enabled=true',
      '--set',
      'prometheusRule.labels.release=kube-prometheus-stack',
    ]);
    expect(more).toEqual([]);
    expect(rule!.metadata.labels['release']).toBe('kube-prometheus-stack');
    expect(rule!.spec).toEqual(ruleFile(c));
  });

  it('takes for: durations, alert labels and the runbook address from the values', async () => {
    const [first, second] = alertsOf(c);
    const [rule] = await render([
      ...WITH_CRD,
      '--set',
      'prometheusRule.enabled=true',
      '--set',
      `prometheusRule.for.${first!.alert}=2h`,
      '--set',
      'prometheusRule.ruleLabels.team=platform',
      '--set',
      'prometheusRule.runbookUrl=https://git.example.com/p/mirrorhub/blob/v0.1.0/docs/alerts.md',
    ]);
    const rules = rule!.spec.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toEqual(alertsOf(c).map((r) => r.alert));
    expect(rules[0]!.for).toBe('2h');
    expect(rules[1]!.for).toBe(second!.for);
    for (const r of rules) {
      expect(r.labels).toEqual({
        ...alertsOf(c).find((x) => x.alert === r.alert)!.labels,
        team: 'platform',
      });
      expect(r.annotations!['runbook_url']).toBe(
        `https://git.example.com/p/mirrorhub/blob/v0.1.0/docs/alerts.md#${r.alert.toLowerCase()}`,
      );
    }
  });

  it('passes helm lint --strict with the prometheusRule values set, and refuses a bad duration', async () => {
    const [first] = alertsOf(c);
    const chart = join(chartsDir, c.chart);
    const out = await helm([
      'lint',
      '--strict',
      chart,
      ...c.required,
      '--set',
      'prometheusRule.enabled=true',
      '--set',
      `prometheusRule.for.${first!.alert}=1h`,
      '--set',
      'prometheusRule.ruleLabels.team=platform',
      '--set',
      'prometheusRule.labels.release=prometheus',
      '--set',
      'prometheusRule.runbookUrl=https://git.example.com/docs/alerts.md',
      ...(c.chart === 'mirrorhub-hub' ? ['--set', 'argocd.healthChecks=true'] : []),
    ]);
    expect(out).toContain('0 chart(s) failed');
    const err = await helm.fails([
      'template',
      'mirrorhub',
      chart,
      ...c.required,
      '--set',
      `prometheusRule.for.${first!.alert}=ten minutes`,
    ]);
    expect(err).toMatch(/prometheusRule\.for\.\w+: Does not match pattern/);
  });

  it('refuses a for: override for an alert the file does not have', async () => {
    const err = await helm.fails([
      'template',
      'mirrorhub',
      join(chartsDir, c.chart),
      ...c.required,
      ...WITH_CRD,
      '--set',
      'prometheusRule.enabled=true',
      '--set',
      'prometheusRule.for.MirrorhubNoSuchAlert=5m',
    ]);
    expect(err).toContain(`prometheusRule.for.MirrorhubNoSuchAlert: no such alert in ${c.file}`);
  });
});

it("the hub chart with its agent in process renders the agent's rules too, when asked", async () => {
  const docs = parseAllDocuments(
    await helm([
      'template',
      'mirrorhub',
      join(chartsDir, 'mirrorhub-hub'),
      ...HUB_REQUIRED,
      ...WITH_CRD,
      '--set',
      'localAgent.inProcess=true',
      '--set',
      'prometheusRule.enabled=true',
      '--set',
      'agent.prometheusRule.enabled=true',
    ]),
  )
    .map((d) => d.toJS() as { kind?: string; spec: RuleFile })
    .filter((o) => o?.kind === 'PrometheusRule');
  const byGroup = (a: RuleFile, b: RuleFile) => a.groups[0]!.name.localeCompare(b.groups[0]!.name);
  expect(docs.map((d) => d.spec).sort(byGroup)).toEqual(
    [ruleFile(CHARTS[0]), ruleFile(CHARTS[1])].sort(byGroup),
  );
});
