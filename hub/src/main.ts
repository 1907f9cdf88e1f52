// Entry point: `node hub/dist/main.js`. Configuration from the environment, kubeconfig from
// KUBECONFIG / ~/.kube/config / the pod's service account, then createHub. Everything else is in
// hub.ts.
import { loadKubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { configureHttp2, http2FromEnv } from '@mirrorhub/shared/kit/k8s/h2';
import {
  createLogger,
  logConfigFromEnv,
  processVersion,
} from '@mirrorhub/shared/kit/runtime/index';
import { runProcess } from '@mirrorhub/shared/kit/controller/index';
import { configFromEnv } from './config.js';
import { describeProxy } from './clusters/egress-proxy.js';
import { createHub } from './hub.js';

async function main(): Promise<void> {
  const v = processVersion(new URL('../package.json', import.meta.url));
  const logger = createLogger({
    ...logConfigFromEnv(process.env),
    base: { component: 'hub', version: v },
  });
  let config;
  try {
    config = configFromEnv(process.env);
    configureHttp2({ enabled: http2FromEnv(process.env) });
  } catch (err) {
    logger.fatal({ err }, 'invalid configuration');
    process.exit(2);
  }
  let kubeConfig;
  try {
    // KUBECONFIG, else the pod's service account, else ~/.kube/config (client-node only for an
    // exec plugin, an auth provider, a proxy or several files in KUBECONFIG).
    kubeConfig = await loadKubeAccess(undefined);
  } catch (err) {
    logger.fatal({ err }, 'cannot load a kubeconfig');
    process.exit(2);
  }
  const hub = createHub({ ...config, kubeConfig, version: v, logger });
  logger.info(
    {
      cluster: config.clusterName,
      namespace: config.namespace,
      identity: config.identity,
      server: kubeConfig.getCurrentCluster()?.server,
      // Where the proxy is, never who logs in to it.
      ...(config.proxy
        ? {
            egressProxy: describeProxy(config.proxy.httpsProxy ?? config.proxy.httpProxy ?? ''),
            noProxy: config.proxy.noProxy,
          }
        : {}),
    },
    'starting',
  );
  if (!(await runProcess(hub, { logger, name: 'hub' }))) return;
  logger.info({ port: hub.port, leader: hub.isLeader() }, 'hub started');
}

void main();
