// The hub chart's alert rules in a real Prometheus (Debian's package) scraping a real hub and
// agent: a follower's API server stops, MirrorhubFollowerUnreachable fires for that cluster, and
// resolves once the API server is back. The rule file is the chart's own; only its for: is
// shortened (as the chart's prometheusRule.for does), and scrapes and evaluations run every
// second, so the outage shows in seconds instead of minutes.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';

import { startPrometheus, type Prometheus } from '@mirrorhub/infra/components/index';

import { chartsDir } from '../support/crds.js';
import { eventually } from '../support/eventually.js';
import { clusterSecretMirror, HUB, MultiCluster } from '../support/multicluster.js';

const ALERT = 'MirrorhubFollowerUnreachable';
const FOLLOWER = 'follower-a';

interface RuleFile {
  groups: { name: string; rules: { alert: string; for?: string }[] }[];
}
interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

describe('alerts in a real Prometheus', () => {
  let m: MultiCluster;
  let prom: Prometheus;
  let dir: string;

  /** The alerts Prometheus holds now (pending or firing). */
  const alerts = async () => (await prom.api<{ alerts: Alert[] }>('alerts')).alerts;
  const unreachable = async () => (await alerts()).filter((a) => a.labels['alertname'] === ALERT);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mirrorhub-prometheus-'));
    m = await MultiCluster.start({
      followers: [{ name: FOLLOWER, labels: { env: 'prod' } }],
      hub: { healthPort: 0 },
      agent: { healthPort: 0 },
    });
    await m.ensureNamespace(HUB, 'certs');
    await m.ensureNamespace(FOLLOWER, 'team-a');
    await m.putSecret(HUB, 'certs', 'tls', { v: '1' });
    await m.applyMirror(
      clusterSecretMirror('tls', {
        source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
        destination: {
          clusters: { selector: { matchLabels: { env: 'prod' } } },
          namespaces: ['team-a'],
        },
      }),
    );
    await eventually(
      async () => expect(await m.secretData(FOLLOWER, 'team-a', 'tls')).toEqual({ v: '1' }),
      { timeoutMs: 60_000 },
    );

    const rules = parseYaml(
      await readFile(join(chartsDir, 'mirrorhub-hub', 'rules', 'hub-alerts.yaml'), 'utf8'),
    ) as RuleFile;
    for (const r of rules.groups.flatMap((g) => g.rules)) if (r.alert === ALERT) r.for = '2s';
    prom = await startPrometheus({
      dir,
      files: { 'hub-alerts.yaml': stringify(rules) },
      config: stringify({
        global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
        rule_files: ['hub-alerts.yaml'],
        scrape_configs: [
          {
            job_name: 'mirrorhub-hub',
            static_configs: [{ targets: [`127.0.0.1:${m.hub!.port}`] }],
          },
          {
            job_name: 'mirrorhub-agent',
            static_configs: [{ targets: [`127.0.0.1:${m.agents.get(FOLLOWER)!.port}`] }],
          },
        ],
      }),
    });
  });

  afterAll(async () => {
    await prom?.stop();
    await m?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('scrapes the hub and the agent, and loads the rules with no alert while all is well', async () => {
    await eventually(
      async () => {
        const up = await prom.api<{
          result: { metric: { job: string }; value: [number, string] }[];
        }>(`query?query=${encodeURIComponent('up')}`);
        expect(Object.fromEntries(up.result.map((r) => [r.metric.job, r.value[1]]))).toEqual({
          'mirrorhub-hub': '1',
          'mirrorhub-agent': '1',
        });
        // The agent's own series, with the cluster it reports as.
        const agent = await prom.api<{ result: { metric: Record<string, string> }[] }>(
          `query?query=${encodeURIComponent('mirrorhub_agent_copies{kind="Secret"}')}`,
        );
        expect(agent.result.map((r) => r.metric['cluster'])).toEqual([FOLLOWER]);
        const groups = await prom.api<{ groups: { rules: { name: string }[] }[] }>('rules');
        expect(groups.groups.flatMap((g) => g.rules.map((r) => r.name))).toContain(ALERT);
        // The gauge the alert reads is there, at zero.
        const ready = await prom.api<{ result: unknown[] }>(
          `query?query=${encodeURIComponent('mirrorhub_mirror_clusters{state="not_ready"} == 0')}`,
        );
        expect(ready.result).toHaveLength(1);
      },
      { timeoutMs: 60_000 },
    );
    expect(await unreachable()).toEqual([]);
  });

  it('fires for the follower whose API server is down, and resolves when it is back', async () => {
    await m.kit.cluster(FOLLOWER).stopApiServer();
    try {
      await eventually(
        async () =>
          expect(await unreachable()).toEqual([
            expect.objectContaining({
              state: 'firing',
              labels: { alertname: ALERT, cluster: FOLLOWER, severity: 'warning' },
            }),
          ]),
        { timeoutMs: 120_000, intervalMs: 500 },
      );
    } finally {
      await m.kit.cluster(FOLLOWER).startApiServer();
    }
    await eventually(async () => expect(await unreachable()).toEqual([]), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    // Back in sync, too: a change reaches the follower again.
    await m.putSecret(HUB, 'certs', 'tls', { v: '2' });
    await eventually(
      async () => expect(await m.secretData(FOLLOWER, 'team-a', 'tls')).toEqual({ v: '2' }),
      { timeoutMs: 60_000 },
    );
  });
});
