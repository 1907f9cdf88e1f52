// The agent's heartbeat as the hub sees it: version and last heartbeat in MirrorCluster status;
// an agent that stops renewing turns AgentHealthy (and Ready) Unknown after the grace period
// (3 x its interval here), and True again when it is back. A missing agent is False.
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { condition, FAST, HEARTBEAT_MS, MultiCluster } from '../support/multicluster.js';

describe("a follower's agent heartbeat", () => {
  let m: MultiCluster;

  beforeAll(async () => {
    m = await MultiCluster.start({ followers: [{ name: 'follower-a', labels: { env: 'prod' } }] });
  });

  afterAll(async () => {
    await m?.stop();
  });

  it('shows the agent version and its last heartbeat', async () => {
    const first = await m.mirrorClusterStatus('follower-a', (mc) =>
      expect(condition(mc, 'AgentHealthy')?.status).toBe('True'),
    );
    expect(first.status?.agent).toMatchObject({ present: true, version: '0.1.0-test' });
    await m.mirrorClusterStatus('follower-a', (mc) => {
      expect(Date.parse(mc.status!.agent!.lastHeartbeat!)).toBeGreaterThan(
        Date.parse(first.status!.agent!.lastHeartbeat!),
      );
    });
  });

  it('is Unknown once the agent stops heartbeating for longer than the grace period', async () => {
    await m.stopAgent('follower-a');
    const stopped = Date.now();
    const mc = await m.mirrorClusterStatus('follower-a', (mc) => {
      expect(condition(mc, 'AgentHealthy')).toMatchObject({
        status: 'Unknown',
        reason: 'HeartbeatStale',
      });
    });
    const after = Date.now() - stopped;
    console.error(
      `agent-heartbeat: AgentHealthy Unknown ${after} ms after the agent stopped (grace ${FAST.agentHeartbeatGraceMs} ms)`,
    );
    expect(after).toBeGreaterThanOrEqual(FAST.agentHeartbeatGraceMs! - HEARTBEAT_MS - 1_000);
    expect(condition(mc, 'Ready')).toMatchObject({ status: 'Unknown', reason: 'HeartbeatStale' });
    expect(condition(mc, 'Ready')?.message).toMatch(
      /has not renewed its heartbeat Lease mirrorhub-system\/mirrorhub-agent for more than 6 s .*check the agent's pods/,
    );
    expect(mc.status).toMatchObject({
      reachable: true,
      authenticated: true,
      agent: { present: false, version: '0.1.0-test' },
    });
    await m.eventWith('default', 'follower-a', 'HeartbeatStale');
  });

  it('is healthy again when the agent is back', async () => {
    await m.startAgent('follower-a');
    const mc = await m.mirrorClusterStatus('follower-a', (mc) =>
      expect(condition(mc, 'Ready')?.status).toBe('True'),
    );
    expect(mc.status?.agent?.present).toBe(true);
  });

  it('is False when there is no agent at all', async () => {
    await m.stopAgent('follower-a');
    await m
      .kc('follower-a')
      .makeApiClient(CoordinationV1Api)
      .deleteNamespacedLease({ name: 'mirrorhub-agent', namespace: 'mirrorhub-system' });
    const mc = await m.mirrorClusterStatus('follower-a', (mc) =>
      expect(condition(mc, 'AgentHealthy')?.reason).toBe('AgentMissing'),
    );
    expect(mc.status?.agent).toEqual({ present: false });
    expect(condition(mc, 'Ready')?.message).toMatch(
      /install the agent \(chart mirrorhub-agent, clusterName=follower-a\)/,
    );
  });
});
