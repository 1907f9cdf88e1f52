#!/usr/bin/env node
// The agent process: read configuration once, build the logger, start the agent (controller,
// heartbeat, leader election, health/metrics server), stop gracefully on SIGTERM.
//
// Environment (flags win):
//   KUBECONFIG / --kubeconfig           kubeconfig file; in a pod the service account is used
//   MIRRORHUB_NAMESPACE / --namespace   agent namespace (default mirrorhub-system)
//   MIRRORHUB_CLUSTER_NAME / --cluster-name   this cluster's name as the hub knows it (required)
//   PORT / --port                       health and metrics port (default 8080)
//   LOG_LEVEL, LOG_FORMAT               pino level; json (default) or text
//   MIRRORHUB_RESYNC_SECONDS            full resync period (default 300)
//   MIRRORHUB_WATCH_PROGRESS_DEADLINE_SECONDS   a watch that passes nothing, not even a bookmark,
//                                       this long is presumed stalled and resumed (default 150,
//                                       at least 90: bookmarks come about once a minute)
//   MIRRORHUB_LEADER_ELECTION           "true" to run only while holding a leader Lease
//                                       (needed with more than one replica; default off)
//   POD_NAME                            identity for leader election and the heartbeat
//   MIRRORHUB_HTTP2                     "false": watches over HTTP/1.1, one connection each
//                                       (default: streams of one HTTP/2 connection, k8s/h2.ts)

import { createLogger, logConfigFromEnv, type Logger } from '@mirrorhub/shared/kit/runtime/log';
import { runProcess } from '@mirrorhub/shared/kit/controller/manager';
import { createAgent } from './agent.js';
import { exposedGc } from './compact.js';
import { readConfig, type MainConfig } from './config.js';
import { loadKubeAccess, type KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { configureHttp2, http2FromEnv } from '@mirrorhub/shared/kit/k8s/h2';

async function main(): Promise<void> {
  let log: Logger;
  try {
    log = createLogger({ ...logConfigFromEnv(process.env) });
  } catch (err) {
    console.error(`mirrorhub-agent: ${(err as Error).message}`);
    process.exit(2);
  }
  let config: MainConfig;
  let kubeConfig: KubeAccess;
  try {
    config = readConfig(process.argv.slice(2), process.env);
    configureHttp2({ enabled: http2FromEnv(process.env) });
    kubeConfig = await loadKubeAccess(config.kubeconfigPath);
  } catch (err) {
    log.fatal({ err }, 'invalid configuration');
    process.exit(2);
  }
  const { kubeconfigPath: _path, ...agentConfig } = config;
  const agent = createAgent({ ...agentConfig, kubeConfig, logger: log, gc: exposedGc() });
  await runProcess(agent, { logger: log, name: 'agent', failure: 'agent failed to start' });
}

void main();
