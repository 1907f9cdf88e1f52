// moto in server mode as the local STS/IAM, plus the few IAM/STS helpers the kit and tests need.
//
// Several AWS accounts in one moto server (moto 5, verified against 5.2.1):
// - Every request is attributed to an account by, in order: the MOTO_ACCOUNT_ID environment
//   variable of the server (so we never set it), the `x-moto-account-id` request header, the
//   account that owns the request's access key (IAM user keys and AssumeRole session keys are
//   both recorded in the owning account), and finally 123456789012.
// - So account administration (creating roles and users in 222222222222) is a request carrying
//   `x-moto-account-id: 222222222222`; everything a principal does afterwards is signed with its
//   own keys and lands in its own account without any header, like in AWS.
// - AssumeRole of `arn:aws:iam::333333333333:role/x` mints keys owned by 333333333333, and
//   GetCallerIdentity with them answers `arn:aws:sts::333333333333:assumed-role/x/<session>`.
// - moto does not enforce trust policies (nor any IAM policy unless auth is switched on, and even
//   then it does not evaluate the trust policy of a role in another account). Tests that need
//   "only the hub may assume this role" must not rely on moto for it: the STS gate
//   (sts-gate.ts, the kit's stsEndpoint) evaluates trust policies in front of moto, for
//   AssumeRole and for AssumeRoleWithWebIdentity (which moto grants for any token).
// - moto does not expose secrets through its API, but /moto-api/data.json dumps every model,
//   including IAM access keys and STS sessions with their secret keys. The EKS emulator uses it
//   (lookupAccessKey) to recompute SigV4 signatures the way STS/EKS would.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCallerIdentityCommand, AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { Sha256 } from '@aws-crypto/sha256-js';
import type { AwsCredentials } from '@mirrorhub/hub/clusters/aws/eks-token';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import {
  findFreePort,
  lastLine,
  startService,
  waitFor,
  type ServiceProcess,
} from '../components/cache.js';
import { ensureMoto } from '../components/moto.js';

export const MOTO_DEFAULT_ACCOUNT = '123456789012';
export const MOTO_ACCOUNT_HEADER = 'x-moto-account-id';
export { MOTO_VERSION, ensureMoto } from '../components/moto.js';

export interface MotoServer {
  /** http://127.0.0.1:<port>: the endpoint of STS and IAM clients. */
  readonly endpoint: string;
  readonly port: number;
  readonly logFile: string;
  /** Also its process group. */
  readonly pid: number;
  stop(): Promise<void>;
}

export interface StartMotoOptions {
  /** Directory for moto.log (default: a new temp dir, removed by stop()). */
  dir?: string;
  /** Fixed port; default a free one (moto_server cannot bind port 0 and tell us the port). */
  port?: number;
  startTimeoutMs?: number;
  log?: (line: string) => void;
}

/**
 * Starts moto_server (ensureMoto(): `$MIRRORHUB_MOTO`, else the cached venv, installed on first
 * use) on 127.0.0.1 and waits until it answers. It runs in its own process group,
 * killed by stop() and when this process exits, even by SIGKILL (startService's parent-death
 * signal), so no moto outlives a test run.
 */
export async function startMoto(opts: StartMotoOptions = {}): Promise<MotoServer> {
  const moto = await ensureMoto();
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'mirrorhub-moto-')));
  const logFile = join(dir, 'moto.log');

  // A free port can be taken between our probe and moto's bind: then retry with another one.
  for (let attempt = 1; ; attempt++) {
    const port = opts.port ?? (await findFreePort());
    const endpoint = `http://127.0.0.1:${port}`;
    const proc: ServiceProcess = await startService({
      name: 'moto',
      cmd: moto,
      args: ['-H', '127.0.0.1', '-p', String(port)],
      logFile,
      stopTimeoutMs: 3000,
    });
    try {
      await waitFor(async () => (await fetch(`${endpoint}/moto-api/data.json`)).ok, {
        what: `moto_server to answer on ${endpoint}`,
        timeoutMs: opts.startTimeoutMs ?? 60_000,
        intervalMs: 200,
        abort: () => {
          const r = proc.exitReason();
          return r && `moto_server exited (${r}) during start-up; see ${logFile}`;
        },
        hint: `see ${logFile}`,
      });
    } catch (err) {
      await proc.stop();
      const log = await readFile(logFile, 'utf8').catch(() => '');
      if (/address already in use/i.test(log) && opts.port === undefined && attempt < 3) continue;
      throw new Error(`${(err as Error).message}: ${lastLine(log)}`, { cause: err });
    }
    opts.log?.(`moto ${endpoint} (log ${logFile})`);
    const stop = async () => {
      await proc.stop();
      if (opts.dir === undefined) await rm(dir, { recursive: true, force: true });
    };
    return { endpoint, port, logFile, pid: proc.pid, stop };
  }
}

// ---- Account administration over moto's IAM query API ------------------------------------------
// There is no IAM client in this workspace's dependencies, and the few calls we need are simple
// form posts; they are signed (moto routes by the credential scope) and carry the account header.

const ADMIN_CREDENTIALS = { accessKeyId: 'AKIAMOTOADMIN0000000', secretAccessKey: 'moto-admin' };

export class AwsQueryError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(`${code}: ${message}`);
  }
}

/** The text of the first <tag> in an AWS query-API answer, unescaped. */
export function xmlValue(xml: string, tag: string): string | undefined {
  const m = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(xml);
  return m?.[1] === undefined ? undefined : unescapeXml(m[1]);
}

function unescapeXml(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, d: string) => String.fromCharCode(Number(d)))
    .replace(/&amp;/g, '&');
}

/** One IAM query-API call as the administrator of `accountId`. Returns the response XML. */
export async function iamCall(
  endpoint: string,
  accountId: string,
  action: string,
  params: Record<string, string> = {},
): Promise<string> {
  const url = new URL(endpoint);
  const body = new URLSearchParams({ Action: action, Version: '2010-05-08', ...params }).toString();
  const signer = new SignatureV4({
    service: 'iam',
    region: 'us-east-1',
    credentials: ADMIN_CREDENTIALS,
    sha256: Sha256,
  });
  const signed = await signer.sign(
    new HttpRequest({
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      port: Number(url.port),
      path: '/',
      headers: {
        host: url.host,
        'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
        [MOTO_ACCOUNT_HEADER]: accountId,
      },
      body,
    }),
  );
  const res = await fetch(`${endpoint}/`, {
    method: 'POST',
    headers: signed.headers,
    body,
  });
  const xml = await res.text();
  if (!res.ok) {
    throw new AwsQueryError(
      xmlValue(xml, 'Code') ?? `HTTP${res.status}`,
      xmlValue(xml, 'Message') ?? xml.slice(0, 200),
      res.status,
    );
  }
  return xml;
}

export interface TrustPolicyOptions {
  /** Principals allowed to assume the role (role/user ARNs or account ids). */
  principals: string[];
  externalId?: string;
}

export function trustPolicy(opts: TrustPolicyOptions): object {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Principal: { AWS: opts.principals },
        Action: 'sts:AssumeRole',
        ...(opts.externalId
          ? { Condition: { StringEquals: { 'sts:ExternalId': opts.externalId } } }
          : {}),
      },
    ],
  };
}

export interface CreatedRole {
  arn: string;
  roleId: string;
  roleName: string;
  accountId: string;
}

/** Creates an IAM role in `accountId` with the given trust policy (see trustPolicy()). */
export async function createRole(
  endpoint: string,
  opts: { accountId: string; roleName: string; trustPolicy: object; path?: string },
): Promise<CreatedRole> {
  const xml = await iamCall(endpoint, opts.accountId, 'CreateRole', {
    RoleName: opts.roleName,
    AssumeRolePolicyDocument: JSON.stringify(opts.trustPolicy),
    ...(opts.path ? { Path: opts.path } : {}),
  });
  return {
    arn: xmlValue(xml, 'Arn') ?? '',
    roleId: xmlValue(xml, 'RoleId') ?? '',
    roleName: opts.roleName,
    accountId: opts.accountId,
  };
}

/** Attaches an inline policy to a role (what terraform's aws_iam_role_policy does). */
export async function putRolePolicy(
  endpoint: string,
  opts: { accountId: string; roleName: string; policyName: string; policy: object },
): Promise<void> {
  await iamCall(endpoint, opts.accountId, 'PutRolePolicy', {
    RoleName: opts.roleName,
    PolicyName: opts.policyName,
    PolicyDocument: JSON.stringify(opts.policy),
  });
}

export interface Principal {
  arn: string;
  accountId: string;
  credentials: AwsCredentials;
}

/**
 * Long-term credentials of a (new) IAM user in `accountId`: the "base identity" of a hub
 * running on a laptop, or of terraform. Requests signed with them are attributed to that
 * account by moto without any header.
 */
export async function createUserWithAccessKey(
  endpoint: string,
  opts: { accountId: string; userName: string },
): Promise<Principal> {
  const user = await iamCall(endpoint, opts.accountId, 'CreateUser', { UserName: opts.userName });
  const key = await iamCall(endpoint, opts.accountId, 'CreateAccessKey', {
    UserName: opts.userName,
  });
  return {
    arn: xmlValue(user, 'Arn') ?? '',
    accountId: opts.accountId,
    credentials: {
      accessKeyId: xmlValue(key, 'AccessKeyId') ?? '',
      secretAccessKey: xmlValue(key, 'SecretAccessKey') ?? '',
    },
  };
}

export function stsClient(
  endpoint: string,
  credentials: AwsCredentials,
  region = 'us-east-1',
): STSClient {
  return new STSClient({ endpoint, region, credentials, maxAttempts: 2 });
}

/** sts:AssumeRole with `credentials`; the session's keys belong to the role's account. */
export async function assumeRole(
  endpoint: string,
  opts: {
    credentials: AwsCredentials;
    roleArn: string;
    sessionName: string;
    externalId?: string;
    durationSeconds?: number;
    region?: string;
  },
): Promise<Required<Pick<AwsCredentials, 'sessionToken' | 'expiration'>> & AwsCredentials> {
  const sts = stsClient(endpoint, opts.credentials, opts.region);
  try {
    const out = await sts.send(
      new AssumeRoleCommand({
        RoleArn: opts.roleArn,
        RoleSessionName: opts.sessionName,
        ...(opts.externalId ? { ExternalId: opts.externalId } : {}),
        ...(opts.durationSeconds ? { DurationSeconds: opts.durationSeconds } : {}),
      }),
    );
    const c = out.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken || !c.Expiration) {
      throw new Error(`AssumeRole ${opts.roleArn} returned no credentials`);
    }
    return {
      accessKeyId: c.AccessKeyId,
      secretAccessKey: c.SecretAccessKey,
      sessionToken: c.SessionToken,
      expiration: c.Expiration,
    };
  } finally {
    sts.destroy();
  }
}

export interface CallerIdentity {
  arn: string;
  account: string;
  userId: string;
}

/** moto's answer when it does not know the key at all (see moto/sts/models.py). */
export function isMotoFallbackIdentity(id: CallerIdentity): boolean {
  return id.userId === 'AKIAIOSFODNN7EXAMPLE' && id.arn.endsWith(':user/moto');
}

/** sts:GetCallerIdentity, header-signed with `credentials`. */
export async function getCallerIdentity(
  endpoint: string,
  credentials: AwsCredentials,
  region?: string,
): Promise<CallerIdentity> {
  const sts = stsClient(endpoint, credentials, region);
  try {
    const out = await sts.send(new GetCallerIdentityCommand({}));
    return { arn: out.Arn ?? '', account: out.Account ?? '', userId: out.UserId ?? '' };
  } finally {
    sts.destroy();
  }
}

export interface AccessKeyRecord {
  accessKeyId: string;
  secretAccessKey: string;
  /** Set for STS session keys; requests must carry exactly this token. */
  sessionToken: string | undefined;
  active: boolean;
}

interface MotoData {
  iam?: { AccessKey?: Array<Record<string, unknown>> };
  sts?: { AssumedRole?: Array<Record<string, unknown>> };
}

/**
 * The secret behind an access key id, from moto's state dump (/moto-api/data.json). Keys of
 * deleted users stay in the dump, so callers must still ask GetCallerIdentity who the key is.
 */
export async function lookupAccessKey(
  endpoint: string,
  accessKeyId: string,
): Promise<AccessKeyRecord | undefined> {
  return findAccessKey(await motoData(endpoint), accessKeyId);
}

export type AccessKeyLookup = (accessKeyId: string) => Promise<AccessKeyRecord | undefined>;

/**
 * lookupAccessKey for a server that looks a key up on every request (the STS gate, the EKS
 * emulator's API and TokenReview webhook). moto's dump holds every account, user and session,
 * so its cost grows with them (a hundred accounts made each TokenReview wait seconds): here
 * every lookup waiting while one dump is read shares the next one, and session keys, which
 * moto never changes, are remembered. A user's key is read anew each time (it can be
 * deactivated), and a lookup never answers from a dump begun before it was asked.
 */
export function accessKeyLookup(endpoint: string): AccessKeyLookup {
  const sessions = new Map<string, AccessKeyRecord>();
  let reading: Promise<MotoData> | undefined;
  let next: Promise<MotoData> | undefined;
  const read = (): Promise<MotoData> =>
    (reading = motoData(endpoint).finally(() => {
      reading = undefined;
    }));
  const fresh = (): Promise<MotoData> => {
    if (!reading) return read();
    // The dump being read may have begun before this key existed: wait for the next one.
    next ??= reading
      .catch(() => undefined)
      .then(() => {
        next = undefined;
        return read();
      });
    return next;
  };
  return async (accessKeyId) => {
    const known = sessions.get(accessKeyId);
    if (known) return known;
    const key = findAccessKey(await fresh(), accessKeyId);
    if (key?.sessionToken !== undefined) sessions.set(accessKeyId, key);
    return key;
  };
}

async function motoData(endpoint: string): Promise<MotoData> {
  const res = await fetch(`${endpoint}/moto-api/data.json`);
  if (!res.ok) throw new Error(`moto /moto-api/data.json answered HTTP ${res.status}`);
  return (await res.json()) as MotoData;
}

function findAccessKey(data: MotoData, accessKeyId: string): AccessKeyRecord | undefined {
  const session = data.sts?.AssumedRole?.find((r) => r.access_key_id === accessKeyId);
  if (session) {
    return {
      accessKeyId,
      secretAccessKey: String(session.secret_access_key),
      sessionToken: String(session.session_token),
      active: true,
    };
  }
  const key = data.iam?.AccessKey?.find((k) => k.access_key_id === accessKeyId && !k.role_arn);
  if (key) {
    return {
      accessKeyId,
      secretAccessKey: String(key.secret_access_key),
      sessionToken: undefined,
      active: key.status === 'Active',
    };
  }
  return undefined;
}
