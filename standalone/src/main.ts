// Entry point of the one-process mode: `node standalone/dist/main.js` (the hub chart runs it with
// localAgent.inProcess). Configuration from the environment (config.ts), one kubeconfig for the
// process, the agent half's own identity when asked, then createStandalone.
import { exposedGc } from '@mirrorhub/agent/compact';
import { loadKubeAccess, type KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { configureHttp2, http2FromEnv } from '@mirrorhub/shared/kit/k8s/h2';
import { serviceAccountAccess } from '@mirrorhub/shared/kit/k8s/token-request';
import {
  childLogger,
  createLogger,
  createShutdown,
  logConfigFromEnv,
  processVersion,
} from '@mirrorhub/shared/kit/runtime/index';
import { runProcess } from '@mirrorhub/shared/kit/controller/index';
import { standaloneConfigFromEnv } from './config.js';
import { createStandalone } from './standalone.js';

async function main(): Promise<void> {
  const v = processVersion(new URL('../package.json', import.meta.url));
  let logger;
  try {
    logger = createLogger({ ...logConfigFromEnv(process.env), base: { version: v } });
  } catch (err) {
    console.error(`mirrorhub: ${(err as Error).message}`);
    process.exit(2);
  }
  let config;
  let kubeConfig: KubeAccess;
  try {
    config = standaloneConfigFromEnv(process.env);
    configureHttp2({ enabled: http2FromEnv(process.env) });
    kubeConfig = await loadKubeAccess(undefined);
  } catch (err) {
    logger.fatal({ err }, 'invalid configuration');
    process.exit(2);
  }
  const agentNamespace = config.agent.namespace;
  const agentAccess = config.agentServiceAccount
    ? serviceAccountAccess(kubeConfig, {
        namespace: agentNamespace,
        name: config.agentServiceAccount,
      })
    : undefined;
  const shutdown = createShutdown({ logger }).install();
  try {
    // A missing grant is a configuration error: say so before anything starts.
    await agentAccess?.check();
  } catch (err) {
    logger.fatal({ err }, 'the agent half cannot act as its ServiceAccount');
    process.exit(2);
  }
  const standalone = createStandalone({
    hub: {
      ...config.hub,
      kubeConfig,
      version: v,
      logger: childLogger(logger, { component: 'hub' }),
    },
    agent: {
      ...config.agent,
      kubeConfig: agentAccess ?? kubeConfig,
      version: v,
      logger,
      // The hub's registry has the process metrics; the agent's would repeat them.
      processMetrics: false,
      gc: exposedGc(),
    },
  });
  logger.info(
    {
      cluster: config.hub.clusterName,
      namespace: config.hub.namespace,
      agentNamespace,
      agentIdentity: agentAccess?.user ?? 'this process',
      server: kubeConfig.getCurrentCluster()?.server,
    },
    'starting hub and agent in one process',
  );
  const close = () => agentAccess?.close();
  if (!(await runProcess(standalone, { logger, name: 'standalone', shutdown, close }))) return;
  logger.info(
    {
      port: standalone.hub.port,
      agentPort: standalone.agent.port,
      leader: standalone.hub.isLeader(),
    },
    'hub and agent started',
  );
}

void main();
