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
export { HELM_VERSION, ensureHelm } from './helm.js';
export {
  OPENBAO_VERSION,
  ensureBao,
  startOpenBao,
  type OpenBao,
  type OpenBaoOptions,
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
