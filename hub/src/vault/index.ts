// The hub's Vault / OpenBao client: transport, auth and token lifecycle, KV v1/v2, leases.
// Used by the Vault connections (connections.ts) and the Vault kinds of source and destination (mirrors/); see each module's header for its decisions.
export {
  appRoleAuth,
  authMountPath,
  kubernetesAuth,
  tokenAuth,
  unrefClock,
  VaultSession,
  type AppRoleAuthOptions,
  type KubernetesAuthOptions,
  type TokenAuthOptions,
  type VaultAuth,
  type VaultAuthMethod,
  type VaultLogin,
  type VaultSessionOptions,
  type VaultSessionStats,
} from './auth.js';
export { VaultClient, type VaultClientOptions, type VaultClientRequest } from './client.js';
export { isVaultError, redact, REDACTED, VaultError, type VaultErrorKind } from './errors.js';
export {
  apiPath,
  VaultHttp,
  type VaultEnvelope,
  type VaultHttpOptions,
  type VaultMethod,
  type VaultRequest,
  type VaultResponse,
} from './http.js';
export {
  OWNER_DATA_KEY,
  OWNER_METADATA_KEY,
  VaultKv,
  lookupMount,
  type MountInfo,
  type KvInspection,
  type KvLocation,
  type KvOptions,
  type KvSecret,
  type KvVersion,
  type KvWriteOptions,
  type KvWriteResult,
} from './kv.js';
export {
  readLeased,
  renewLease,
  revokeLease,
  VaultLease,
  type LeasedSecret,
  type ReadLeasedOptions,
} from './lease.js';
