/**
 * Many followers' agents in one process, for the fleet benchmark (fleet-scale.ts): a thousand
 * agent processes do not fit beside a thousand followers' hub on one machine, so past the first
 * followers each agent is the real agent code (createAgent from agent/src/agent.ts, configured
 * by agent/src/config.ts from the same environment `node agent/dist/main.js` reads), several
 * to a process. createAgent keeps nothing global (its own metrics registry, caches, queues and
 * heartbeat): what these share is the process, its heap and the HTTP/2 connection pool
 * (shared/src/kit/k8s/h2.ts), one connection per API server and credentials instead of one
 * per agent.
 *
 * Input: MIRRORHUB_BENCH_AGENTS, a JSON array with each agent's environment (as the agent's own
 * process would get it). Creates the file MIRRORHUB_BENCH_READY_FILE once every agent has
 * started (its output goes to the bench's log file), stops them all on SIGTERM. No health server per agent (a thousand ports); the bench reads the process.
 */
import { writeFileSync } from 'node:fs';

import { createAgent, type Agent } from '@mirrorhub/agent/agent';
import { readConfig } from '@mirrorhub/agent/config';
import { loadKubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { configureHttp2, http2FromEnv } from '@mirrorhub/shared/kit/k8s/h2';
import { createLogger, logConfigFromEnv } from '@mirrorhub/shared/kit/runtime/log';

import { pool } from './util.js';

async function main(): Promise<void> {
  const log = createLogger({ ...logConfigFromEnv(process.env) });
  const envs = JSON.parse(process.env.MIRRORHUB_BENCH_AGENTS ?? '[]') as Record<string, string>[];
  configureHttp2({ enabled: http2FromEnv(process.env) });
  const agents: Agent[] = [];
  let stopping = false;
  const stop = async () => {
    stopping = true;
    await Promise.all(agents.map((a) => a.stop().catch(() => undefined)));
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
  // A few at a time, as the agent processes start: each lists its caches at start-up.
  await pool(envs, 4, async (env) => {
    if (stopping) return;
    const agentEnv = { ...process.env, ...env };
    const { kubeconfigPath, ...config } = readConfig([], agentEnv);
    const agent = createAgent({
      ...config,
      kubeConfig: await loadKubeAccess(kubeconfigPath, agentEnv),
      logger: log,
      healthPort: undefined,
      // The process's own metrics once, not once per agent.
      processMetrics: false,
    });
    agents.push(agent);
    await agent.start();
  });
  const ready = process.env.MIRRORHUB_BENCH_READY_FILE;
  if (ready) writeFileSync(ready, `${agents.length}\n`);
}

main().catch((err: unknown) => {
  console.error(`agent-host: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
