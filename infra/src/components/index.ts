// The local kit's optional real components, each started on demand by the tests that need it.
export {
  binaryDir,
  cacheDir,
  ensureBinary,
  findFreePort,
  isPortFree,
  lastLine,
  onExit,
  pickEnv,
  progress,
  removeDirSync,
  runCapture,
  runLogged,
  startService,
  waitFor,
  which,
  withFileLock,
  type EnsureBinaryOptions,
  type RunOptions,
  type ServiceOptions,
  type ServiceProcess,
  type WaitForOptions,
} from './cache.js';
export { DEBIAN_CHROMIUM, ensureChromium, type EnsureChromiumOptions } from './chromium.js';
export { GOPHER_LUA_VERSION, argoHealthSource, ensureArgoHealth } from './argo-health.js';
export { HELM_VERSION, ensureHelm } from './helm.js';
export { KSTATUS_CLI_UTILS_VERSION, ensureKstatus, kstatusModuleDir } from './kstatus.js';
export { MOTO_VERSION, ensureMoto, motoDir } from './moto.js';
export {
  OPENBAO_VERSION,
  ensureBao,
  startOpenBao,
  startPersistentOpenBao,
  type OpenBao,
  type OpenBaoOptions,
  type PersistentOpenBao,
  type PersistentOpenBaoOptions,
} from './openbao.js';
export {
  ensurePostgres,
  findDebianPostgres,
  pgAcceptsConnections,
  startPostgres,
  type Postgres,
  type PostgresBins,
  type PostgresOptions,
} from './postgres.js';
export {
  DEBIAN_PROMETHEUS,
  ensurePrometheus,
  startPrometheus,
  type EnsurePrometheusOptions,
  type Prometheus,
  type PrometheusBins,
  type PrometheusOptions,
} from './prometheus.js';
export {
  AWS_PROVIDER_CLIENTS,
  AWS_PROVIDER_MODULE,
  AWS_PROVIDER_MODULE_VERSION,
  AWS_PROVIDER_SERVICES,
  AWS_PROVIDER_SOURCE,
  AWS_PROVIDER_VERSION,
  TERRAFORM_VERSION,
  awsProviderMirrorPath,
  dropRegionsDataSource,
  ensureAwsProvider,
  ensureTerraform,
  ensureTerraformSetup,
  keepProviderSource,
  terraformCliConfig,
  terraformEnv,
  terraformPlatform,
  terraformToolsDir,
  trimAwsClients,
  trimServicePackages,
  trimmedSources,
  writeTerraformCliConfig,
  type AwsProviderMirror,
  type TerraformSetup,
} from './terraform.js';
