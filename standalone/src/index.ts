// @mirrorhub/standalone: the hub and its cluster's agent in one process (tests run it in-process).
export {
  checkPairing,
  createStandalone,
  type Standalone,
  type StandaloneConfig,
} from './standalone.js';
export { standaloneConfigFromEnv, type StandaloneEnvConfig } from './config.js';
