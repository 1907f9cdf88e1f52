// The kit's STS endpoint: a loopback HTTP server in front of moto that makes sts:AssumeRole
// behave like AWS where moto 5.2.1 does not. moto never evaluates the trust policy of a role in
// another account (and, with auth on, treats a missing ExternalId as satisfying
// `StringEquals sts:ExternalId`); real STS refuses both, and mirrorhub has to show "role does not
// trust the hub" and "ExternalId mismatch" as errors, so the kit's STS must refuse them too.
//
// Every request is forwarded to moto unchanged (IAM, other STS actions, /moto-api/...), except
// Action=AssumeRole (form POST or query GET, header-signed or presigned), which is first:
//   1. authenticated like STS: SigV4 recomputed with the key's secret from moto, session token
//      checked, caller named by moto's GetCallerIdentity (request-auth.ts, shared with the EKS
//      emulator);
//   2. validated: RoleArn and RoleSessionName present, DurationSeconds 900..43200;
//   3. authorised by the role's trust policy, read with IAM GetRole in the role's account
//      (evaluateTrustPolicy below); a role that does not exist is AccessDenied, as AWS answers;
//   4. held to the role's MaxSessionDuration, and to one hour when the caller is itself an
//      assumed role (role chaining).
// Refusals use STS's query-protocol error XML, codes and wording. What passes goes to moto,
// whose answer is returned as is. (One adjustment on the way: a presigned request gets its query
// signature restated as an Authorization header, which is all moto routes by.)
//
// Two fault hooks for tests: setAvailable(false) is an STS outage (every request answered 503
// ServiceUnavailable until setAvailable(true)), and `sessionLifetimeSeconds` caps the Expiration
// of the sessions AssumeRole and AssumeRoleWithWebIdentity hand out, rewritten in moto's answer.
//
// Action=AssumeRoleWithWebIdentity (IRSA: unsigned, the token is the credential) is checked as
// STS checks it, where moto 5.2.1 accepts any token for any role: the role's account must have an
// IAM OIDC provider for the token's issuer listing its audience; the token must be signed by the
// issuer (the kit registers each cluster's ServiceAccount signing key with trustIssuer(), what
// STS would fetch from the issuer's JWKS) and unexpired; and the role's trust policy must name
// that provider as Federated principal, with its `<issuer>:sub` / `:aud` conditions holding.
//
// Not evaluated: the caller's identity policies (AWS also requires the hub's own policy to allow
// sts:AssumeRole on a role in another account), SCPs, permission boundaries, session policies.
import { createPublicKey, randomUUID, verify, type KeyObject } from 'node:crypto';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { AwsQueryError, accessKeyLookup, iamCall, xmlValue } from './moto.js';
import { authenticateRequest, type RequestAuthFailure } from './request-auth.js';
import { SIGV4_ALGORITHM, parseRawQuery } from './sigv4.js';
import { canonicalPrincipalArn, canonicalizeIdentity } from './token-verifier.js';

export const STS_XMLNS = 'https://sts.amazonaws.com/doc/2011-06-15/';
/** STS accepts header-signed requests up to 15 minutes away from its clock. */
export const STS_SIGNATURE_SKEW_MS = 15 * 60_000;
export const ROLE_CHAINING_MAX_S = 3600;
const MAX_BODY = 16 << 20;

export interface StsGateOptions {
  /** moto's endpoint: where requests go, and who keys belong to. */
  motoEndpoint: string;
  /** Clock for signature expiry (default: wall clock). */
  now?: () => Date;
  /**
   * Sessions from AssumeRole and AssumeRoleWithWebIdentity expire at most this many seconds from
   * now: the `Expiration` in moto's answer is lowered to it (default: the asked duration).
   */
  sessionLifetimeSeconds?: number;
  log?: (line: string) => void;
}

export interface StsGate {
  /** http://127.0.0.1:<port>: the `endpoint` of STS (and IAM) clients. */
  readonly endpoint: string;
  readonly port: number;
  /**
   * Web identity tokens from `issuer` (e.g. https://hub.kit.mirrorhub.local) are verified with
   * this public key (PEM, EC or RSA). An issuer never registered has no keys to verify with.
   */
  trustIssuer(issuer: string, publicKeyPem: string): void;
  /**
   * false starts an STS outage: every request (IAM and /moto-api/ too) is answered HTTP 503 with
   * STS's `ServiceUnavailable` error XML, until true ends it. Available when started.
   */
  setAvailable(available: boolean): void;
  available(): boolean;
  /** How many requests an outage refused since the gate started. */
  refused(): number;
  /**
   * AssumeRole requests by RoleArn since the gate started: every one that reached the gate,
   * whatever its answer (allowed, denied, invalid, or refused by an outage); one without a
   * RoleArn names no role and is not counted.
   */
  assumeRoleCalls(): Record<string, number>;
  stop(): Promise<void>;
}

class StsError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const accessDenied = (callerArn: string, roleArn: string) =>
  new StsError(
    403,
    'AccessDenied',
    `User: ${callerArn} is not authorized to perform: sts:AssumeRole on resource: ${roleArn}`,
  );
const validation = (message: string) => new StsError(400, 'ValidationError', message);
const unavailable = () =>
  new StsError(503, 'ServiceUnavailable', 'The service is unavailable. Please try again later.');
const invalidToken = (message: string) => new StsError(400, 'InvalidIdentityToken', message);

/** DurationSeconds as STS validates it (900..43200), or undefined when absent. */
function validDuration(raw: string | null): number | undefined {
  if (raw === null) return undefined;
  if (!/^\d+$/.test(raw))
    throw validation(`Value '${raw}' for parameter DurationSeconds is invalid.`);
  const duration = Number(raw);
  if (duration < 900) throw validation(constraint(raw, 'greater', 900));
  if (duration > 43_200) throw validation(constraint(raw, 'less', 43_200));
  return duration;
}

interface Jwt {
  alg: string;
  signingInput: string;
  signature: Buffer;
  claims: Record<string, unknown>;
}

function parseJwt(token: string): Jwt | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as unknown;
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown;
    if (!isObject(header) || typeof header.alg !== 'string' || !isObject(claims)) return undefined;
    return {
      alg: header.alg,
      signingInput: `${parts[0]}.${parts[1]}`,
      signature: Buffer.from(parts[2]!, 'base64url'),
      claims,
    };
  } catch {
    return undefined;
  }
}

/** JWS signature check for the algorithms Kubernetes signs ServiceAccount tokens with. */
function verifyJwt(jwt: Jwt, key: KeyObject): boolean {
  const hash = { ES256: 'sha256', ES384: 'sha384', RS256: 'sha256', RS384: 'sha384' }[jwt.alg];
  if (!hash) return false;
  const ec = jwt.alg.startsWith('ES');
  if (ec !== (key.asymmetricKeyType === 'ec')) return false;
  try {
    return verify(
      hash,
      Buffer.from(jwt.signingInput),
      ec ? { key, dsaEncoding: 'ieee-p1363' } : key,
      jwt.signature,
    );
  } catch {
    return false;
  }
}

export async function startStsGate(opts: StsGateOptions): Promise<StsGate> {
  const moto = new URL(opts.motoEndpoint);
  const motoEndpoint = moto.origin;
  const keys = accessKeyLookup(motoEndpoint);
  const now = opts.now ?? (() => new Date());
  const log = opts.log ?? (() => {});
  const agent = new Agent({ keepAlive: true });
  const lifetimeMs =
    opts.sessionLifetimeSeconds === undefined ? undefined : opts.sessionLifetimeSeconds * 1000;
  let available = true;
  let refused = 0;
  const assumeRoleCalls = new Map<string, number>();

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const e =
        err instanceof StsError
          ? err
          : new StsError(500, 'InternalFailure', err instanceof Error ? err.message : String(err));
      if (e.status >= 500) log(`sts-gate: ${req.method} ${req.url?.split('?')[0]}: ${e.message}`);
      sendError(res, e);
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const [rawPath = '/', rawQuery = ''] = (req.url ?? '/').split(/\?(.*)/s, 2);
    const params = requestParams(req, rawQuery, body);
    const action = params.get('Action');
    // Counted before anything can refuse it: the count is what callers asked for.
    const calledRole = action === 'AssumeRole' ? params.get('RoleArn') : null;
    if (calledRole !== null)
      assumeRoleCalls.set(calledRole, (assumeRoleCalls.get(calledRole) ?? 0) + 1);
    if (!available) {
      refused++;
      sendError(res, unavailable());
      return;
    }
    if (action === 'AssumeRole') {
      const query = parseRawQuery(rawQuery);
      if (!query) throw new StsError(400, 'MalformedQueryString', 'malformed query string');
      await gateAssumeRole(req, rawPath, query, body, params);
    } else if (action === 'AssumeRoleWithWebIdentity') {
      await gateWebIdentity(params);
    }
    const session = action === 'AssumeRole' || action === 'AssumeRoleWithWebIdentity';
    await forward(req, res, body, session && lifetimeMs !== undefined ? capExpiration : undefined);
  }

  /** Lowers a session's <Expiration> to now + sessionLifetimeSeconds. */
  function capExpiration(xml: string): string {
    const cap = now().getTime() + lifetimeMs!;
    return xml.replace(/<Expiration>([^<]*)<\/Expiration>/g, (whole, value: string) => {
      const at = Date.parse(value.trim());
      if (Number.isFinite(at) && at <= cap) return whole;
      return `<Expiration>${new Date(cap).toISOString()}</Expiration>`;
    });
  }

  const issuerKeys = new Map<string, KeyObject[]>();

  async function gateWebIdentity(params: URLSearchParams): Promise<void> {
    const roleArn = params.get('RoleArn');
    const token = params.get('WebIdentityToken');
    if (roleArn === null) throw validation(notNull('roleArn'));
    if (params.get('RoleSessionName') === null) throw validation(notNull('roleSessionName'));
    if (token === null) throw validation(notNull('webIdentityToken'));
    const duration = validDuration(params.get('DurationSeconds'));
    const jwt = parseJwt(token);
    if (!jwt) throw invalidToken('the web identity token is not a JWT (header.payload.signature)');
    const { iss, sub, exp } = jwt.claims;
    const auds = list(jwt.claims.aud).filter((a): a is string => typeof a === 'string');
    if (
      typeof iss !== 'string' ||
      typeof sub !== 'string' ||
      typeof exp !== 'number' ||
      !auds.length
    )
      throw invalidToken('the web identity token lacks iss, sub, aud or exp');
    const target = parseRoleArn(roleArn);
    if (!target) throw validation(`${roleArn} is invalid`);
    const deny = (reason: string) => {
      log(`sts-gate: AssumeRoleWithWebIdentity ${roleArn} by ${iss} ${sub} denied: ${reason}`);
      return new StsError(
        403,
        'AccessDenied',
        'Not authorized to perform sts:AssumeRoleWithWebIdentity',
      );
    };
    const providerArn = `arn:aws:iam::${target.account}:oidc-provider/${iss.replace(/^https:\/\//, '')}`;
    const clientIds = await oidcProviderClientIds(target.account, providerArn);
    if (!clientIds)
      throw invalidToken(`No OpenIDConnect provider found in your account for ${iss}`);
    const aud = auds.find((a) => clientIds.includes(a));
    if (aud === undefined) throw invalidToken('Incorrect token audience');
    const keys = issuerKeys.get(iss) ?? [];
    if (keys.length === 0)
      throw invalidToken(
        "Couldn't retrieve verification key from your identity provider, please reference AssumeRoleWithWebIdentity documentation for requirements",
      );
    if (!keys.some((k) => verifyJwt(jwt, k)))
      throw invalidToken('The web identity token signature could not be verified');
    const at = now();
    if (exp * 1000 <= at.getTime()) {
      throw new StsError(
        400,
        'ExpiredTokenException',
        `Token expired: current date/time ${Math.floor(at.getTime() / 1000)} must be before the expiration date/time ${exp}`,
      );
    }
    const role = await getRole(target.account, target.name);
    if (!role) throw deny('the role does not exist');
    const decision = evaluateWebIdentityTrust(role.trustPolicy, { providerArn, sub, aud });
    if (!decision.allowed) throw deny(decision.reason);
    if (duration !== undefined && duration > role.maxSessionDuration) {
      throw validation(
        'The requested DurationSeconds exceeds the MaxSessionDuration set for this role.',
      );
    }
    log(`sts-gate: AssumeRoleWithWebIdentity ${roleArn} by ${sub} allowed: ${decision.reason}`);
  }

  /** The provider's ClientIDList, or undefined when the account has no such provider. */
  async function oidcProviderClientIds(
    account: string,
    providerArn: string,
  ): Promise<string[] | undefined> {
    let xml: string;
    try {
      xml = await iamCall(motoEndpoint, account, 'GetOpenIDConnectProvider', {
        OpenIDConnectProviderArn: providerArn,
      });
    } catch (err) {
      if (err instanceof AwsQueryError && err.code === 'NoSuchEntity') return undefined;
      throw err;
    }
    const block = /<ClientIDList>([\s\S]*?)<\/ClientIDList>/.exec(xml)?.[1] ?? '';
    return [...block.matchAll(/<member>([\s\S]*?)<\/member>/g)].map((m) => m[1]!.trim());
  }

  async function gateAssumeRole(
    req: IncomingMessage,
    rawPath: string,
    query: Array<[string, string]>,
    body: Buffer,
    params: URLSearchParams,
  ): Promise<void> {
    const auth = await authenticateRequest(
      motoEndpoint,
      { method: req.method ?? 'GET', rawPath, query, header: (h) => header(req, h), body },
      { service: 'sts', now: now(), maxSkewMs: STS_SIGNATURE_SKEW_MS, lookupKey: keys },
    );
    if (!auth.ok) throw authError(auth.failure, now());
    const caller = auth.caller;

    const roleArn = params.get('RoleArn');
    const sessionName = params.get('RoleSessionName');
    const externalId = params.get('ExternalId') ?? undefined;
    if (roleArn === null) throw validation(notNull('roleArn'));
    if (sessionName === null) throw validation(notNull('roleSessionName'));
    const duration = validDuration(params.get('DurationSeconds'));
    const target = parseRoleArn(roleArn);
    if (!target) throw validation(`${roleArn} is invalid`);

    const deny = (reason: string) => {
      log(`sts-gate: AssumeRole ${roleArn} by ${caller.arn} denied: ${reason}`);
      return accessDenied(caller.arn, roleArn);
    };
    const role = await getRole(target.account, target.name);
    if (!role) throw deny('the role does not exist');
    if (role.arn !== roleArn) throw deny(`the role is ${role.arn}`);
    const decision = evaluateTrustPolicy(role.trustPolicy, {
      caller: { arn: caller.arn, account: caller.account, userId: caller.userId },
      externalId,
    });
    if (!decision.allowed) throw deny(decision.reason);

    if (duration !== undefined && caller.session && duration > ROLE_CHAINING_MAX_S) {
      throw validation(
        'The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by role chaining.',
      );
    }
    if (duration !== undefined && duration > role.maxSessionDuration) {
      throw validation(
        'The requested DurationSeconds exceeds the MaxSessionDuration set for this role.',
      );
    }
    log(`sts-gate: AssumeRole ${roleArn} by ${caller.arn} allowed: ${decision.reason}`);
  }

  async function getRole(
    account: string,
    name: string,
  ): Promise<{ arn: string; trustPolicy: unknown; maxSessionDuration: number } | undefined> {
    let xml: string;
    try {
      xml = await iamCall(motoEndpoint, account, 'GetRole', { RoleName: name });
    } catch (err) {
      if (err instanceof AwsQueryError && err.code === 'NoSuchEntity') return undefined;
      throw err;
    }
    const doc = xmlValue(xml, 'AssumeRolePolicyDocument') ?? '';
    let trustPolicy: unknown;
    for (const text of [doc, safeDecode(doc)]) {
      try {
        trustPolicy = JSON.parse(text);
        break;
      } catch {
        // IAM answers the document URL-encoded; try the decoded form next.
      }
    }
    const max = Number(xmlValue(xml, 'MaxSessionDuration') ?? 3600);
    return {
      arn: xmlValue(xml, 'Arn') ?? '',
      trustPolicy,
      maxSessionDuration: Number.isFinite(max) ? max : 3600,
    };
  }

  /** Sends the request to moto and its answer back; `rewrite` edits a 200 answer's body. */
  function forward(
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    rewrite?: (text: string) => string,
  ): Promise<void> {
    const headers = { ...req.headers };
    delete headers['transfer-encoding'];
    headers['content-length'] = String(body.length);
    // moto routes a request to a service by the credential scope of its Authorization header
    // only, so a presigned request (any service) would land in S3; restate its query signature
    // as the header moto reads. Only the routing changes: moto does not check signatures here.
    const presigned = new URLSearchParams(req.url?.split('?')[1] ?? '');
    const credential = presigned.get('X-Amz-Credential');
    if (headers.authorization === undefined && credential) {
      headers.authorization =
        `${SIGV4_ALGORITHM} Credential=${credential}, ` +
        `SignedHeaders=${presigned.get('X-Amz-SignedHeaders') ?? 'host'}, ` +
        `Signature=${presigned.get('X-Amz-Signature') ?? ''}`;
      const token = presigned.get('X-Amz-Security-Token');
      if (token) headers['x-amz-security-token'] = token;
    }
    return new Promise((resolve, reject) => {
      const up = httpRequest(
        {
          host: moto.hostname,
          port: moto.port,
          method: req.method,
          path: req.url,
          headers,
          agent,
        },
        (upRes) => {
          const out = { ...upRes.headers };
          delete out['transfer-encoding'];
          delete out.connection;
          delete out['keep-alive'];
          if (rewrite && upRes.statusCode === 200 && out['content-encoding'] === undefined) {
            const chunks: Buffer[] = [];
            upRes.on('data', (c: Buffer) => chunks.push(c));
            upRes.on('end', () => {
              const text = Buffer.from(rewrite(Buffer.concat(chunks).toString('utf8')), 'utf8');
              out['content-length'] = String(text.length);
              res.writeHead(200, out);
              res.end(text);
              resolve();
            });
            upRes.on('error', reject);
            return;
          }
          res.writeHead(upRes.statusCode ?? 502, out);
          upRes.pipe(res);
          upRes.on('end', resolve);
          upRes.on('error', reject);
        },
      );
      up.on('error', (err) =>
        reject(new StsError(503, 'ServiceUnavailable', `moto: ${err.message}`)),
      );
      up.end(body);
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  log(`sts-gate: ${endpoint} (moto ${motoEndpoint})`);
  return {
    endpoint,
    port,
    trustIssuer(issuer, publicKeyPem) {
      const keys = issuerKeys.get(issuer) ?? [];
      keys.push(createPublicKey(publicKeyPem));
      issuerKeys.set(issuer, keys);
    },
    setAvailable(up) {
      available = up;
    },
    available: () => available,
    refused: () => refused,
    assumeRoleCalls: () => Object.fromEntries(assumeRoleCalls),
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      agent.destroy();
    },
  };
}

// ---- trust policy evaluation ---------------------------------------------------------------------

export interface TrustRequest {
  /** The caller as GetCallerIdentity names it (an assumed role is its session ARN). */
  caller: { arn: string; account: string; userId: string };
  externalId: string | undefined;
}

export type TrustDecision = { allowed: boolean; reason: string };

type Tri = true | false | 'unsupported';

/**
 * Evaluates a role's trust policy for sts:AssumeRole like IAM does for the cases mirrorhub uses:
 * an explicit Deny wins, otherwise some Allow must match, otherwise it is an implicit deny.
 * A statement matches when its Action (or NotAction) covers sts:AssumeRole, its Principal (or
 * NotPrincipal) covers the caller and every Condition holds.
 *
 * Principal `{"AWS": ...}` takes an IAM user or role ARN (compared without path, an assumed-role
 * caller matching its role), an assumed-role session ARN (exact), an account id or
 * `arn:aws:iam::ACCT:root` (any principal of that account), or "*". `Service`, `Federated` and
 * other principal types never match an AWS caller. Conditions: StringEquals, StringNotEquals,
 * StringLike, StringNotLike (and their IfExists forms) on sts:ExternalId, aws:PrincipalArn and
 * aws:PrincipalAccount. A missing key fails StringEquals/StringLike and satisfies the negated
 * ones, as in IAM. Anything else is unsupported and fails closed: such an Allow does not match,
 * such a Deny does.
 */
export function evaluateTrustPolicy(policy: unknown, req: TrustRequest): TrustDecision {
  const id = canonicalizeIdentity(req.caller);
  if ('error' in id) return { allowed: false, reason: id.error };
  const caller = { arn: req.caller.arn, account: req.caller.account, canonical: id.canonicalArn };
  return evaluate(policy, {
    action: 'sts:AssumeRole',
    principal: (p) =>
      list(p.AWS).some((v) => typeof v === 'string' && awsPrincipalCovers(v, caller)),
    condition: (key) => {
      switch (key.toLowerCase()) {
        case 'sts:externalid':
          return req.externalId;
        case 'aws:principalarn':
          return caller.canonical;
        case 'aws:principalaccount':
          return caller.account;
        default:
          return null;
      }
    },
  });
}

export interface WebIdentityTrustRequest {
  /** The IAM OIDC provider of the token's issuer: arn:aws:iam::ACCT:oidc-provider/HOST[/PATH]. */
  providerArn: string;
  /** The token's claims. */
  sub: string;
  aud: string;
}

/**
 * Evaluates a role's trust policy for sts:AssumeRoleWithWebIdentity (IRSA): the statement must
 * name the provider as `Principal.Federated`, and its conditions may test `<HOST[/PATH]>:sub`
 * and `<HOST[/PATH]>:aud` (also `:oaud`), with the operators evaluateTrustPolicy knows.
 */
export function evaluateWebIdentityTrust(
  policy: unknown,
  req: WebIdentityTrustRequest,
): TrustDecision {
  const issuer = req.providerArn.replace(/^arn:aws[a-z-]*:iam::\d{12}:oidc-provider\//, '');
  return evaluate(policy, {
    action: 'sts:AssumeRoleWithWebIdentity',
    principal: (p) => list(p.Federated).includes(req.providerArn),
    condition: (key) => {
      const k = key.toLowerCase();
      if (k === `${issuer}:sub`.toLowerCase()) return req.sub;
      if (k === `${issuer}:aud`.toLowerCase() || k === `${issuer}:oaud`.toLowerCase())
        return req.aud;
      return null;
    },
  });
}

interface Evaluation {
  action: string;
  /** Whether a Principal object (not "*") covers the requester. */
  principal: (p: Record<string, unknown>) => boolean;
  /** A condition key's value: undefined when absent, null when not supported. */
  condition: (key: string) => string | undefined | null;
}

function evaluate(policy: unknown, e: Evaluation): TrustDecision {
  if (!isObject(policy)) return { allowed: false, reason: 'the role has no readable trust policy' };
  const raw = policy.Statement;
  const statements = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  let allow: string | undefined;
  const notes: string[] = [];
  for (const [i, st] of statements.entries()) {
    if (!isObject(st)) continue;
    const name = typeof st.Sid === 'string' ? `statement ${st.Sid}` : `statement ${i}`;
    const action = matchAction(st, e.action);
    const principal = matchPrincipal(st, e);
    const condition = matchConditions(st.Condition, e);
    if (condition === 'unsupported') notes.push(`${name} has an unsupported condition`);
    const parts = [action, principal, condition];
    if (st.Effect === 'Deny') {
      if (!parts.includes(false)) return { allowed: false, reason: `${name} denies it` };
    } else if (st.Effect === 'Allow' && parts.every((p) => p === true)) {
      allow ??= `${name} allows it`;
    } else if (st.Effect === 'Allow' && action === true && principal === true) {
      notes.push(`${name} names the caller but its condition does not hold`);
    }
  }
  if (allow) return { allowed: true, reason: allow };
  const why = notes.length > 0 ? notes.join('; ') : 'no statement allows the caller';
  return { allowed: false, reason: why };
}

interface Caller {
  arn: string;
  account: string;
  canonical: string;
}

function matchAction(st: Record<string, unknown>, action: string): Tri {
  const covers = (v: unknown) =>
    list(v).some((a) => typeof a === 'string' && globMatch(a, action, true));
  if (st.Action !== undefined) return covers(st.Action);
  if (st.NotAction !== undefined) return !covers(st.NotAction);
  return false;
}

function matchPrincipal(st: Record<string, unknown>, e: Evaluation): Tri {
  const covers = (p: unknown) => p === '*' || (isObject(p) && e.principal(p));
  if (st.Principal !== undefined) return covers(st.Principal);
  if (st.NotPrincipal !== undefined) return !covers(st.NotPrincipal);
  return false;
}

function awsPrincipalCovers(p: string, caller: Caller): boolean {
  if (p === '*') return true;
  if (/^\d{12}$/.test(p)) return p === caller.account;
  const root = /^arn:aws[a-z-]*:iam::(\d{12}):root$/.exec(p);
  if (root) return root[1] === caller.account;
  if (/^arn:aws[a-z-]*:sts::\d{12}:assumed-role\//.test(p)) return p === caller.arn;
  const canonical = canonicalPrincipalArn(p);
  return canonical !== undefined && canonical === caller.canonical;
}

const NEGATED = new Set(['StringNotEquals', 'StringNotLike']);
const STRING_OPS = new Set(['StringEquals', 'StringLike', ...NEGATED]);

function matchConditions(cond: unknown, e: Evaluation): Tri {
  if (cond === undefined) return true;
  if (!isObject(cond)) return 'unsupported';
  let result: Tri = true;
  for (const [rawOp, block] of Object.entries(cond)) {
    const ifExists = rawOp.endsWith('IfExists');
    const op = ifExists ? rawOp.slice(0, -'IfExists'.length) : rawOp;
    if (!STRING_OPS.has(op) || !isObject(block)) return 'unsupported';
    for (const [key, want] of Object.entries(block)) {
      const value = e.condition(key);
      if (value === null) return 'unsupported';
      const wants = list(want).filter((w): w is string => typeof w === 'string');
      let holds: boolean;
      if (value === undefined) {
        holds = ifExists || NEGATED.has(op);
      } else {
        const like = op.endsWith('Like');
        const any = wants.some((w) => (like ? globMatch(w, value, false) : w === value));
        holds = NEGATED.has(op) ? !any : any;
      }
      if (!holds) result = false;
    }
  }
  return result;
}

/** IAM wildcards: `*` any run of characters, `?` exactly one. */
function globMatch(pattern: string, value: string, ignoreCase: boolean): boolean {
  const re = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${re}$`, ignoreCase ? 'is' : 's').test(value);
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : v === undefined ? [] : [v];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// ---- STS wire helpers ----------------------------------------------------------------------------

/** The role's account and name from `arn:aws:iam::ACCT:role[/path]/NAME`. */
export function parseRoleArn(arn: string): { account: string; name: string } | undefined {
  const m = /^arn:aws[a-z-]*:iam::(\d{12}):role\/(?:[^/]+\/)*([\w+=,.@-]{1,64})$/.exec(arn);
  return m ? { account: m[1]!, name: m[2]! } : undefined;
}

const notNull = (member: string) =>
  `1 validation error detected: Value null at '${member}' failed to satisfy constraint: Member must not be null`;
const constraint = (value: string, dir: 'greater' | 'less', limit: number) =>
  `1 validation error detected: Value '${value}' at 'durationSeconds' failed to satisfy constraint: Member must have value ${dir} than or equal to ${limit}`;

const amz = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

function authError(f: RequestAuthFailure, at: Date): StsError {
  switch (f.kind) {
    case 'missing':
      return new StsError(
        403,
        'MissingAuthenticationToken',
        'Request is missing Authentication Token',
      );
    case 'incomplete':
      return new StsError(400, 'IncompleteSignature', f.message);
    case 'expired': {
      if (f.presigned && !f.future) return new StsError(403, 'ExpiredToken', 'Request has expired');
      const skew = new Date(at.getTime() + (f.future ? 1 : -1) * STS_SIGNATURE_SKEW_MS);
      return new StsError(
        403,
        'SignatureDoesNotMatch',
        f.future
          ? `Signature not yet current: ${f.amzDate} is still later than ${amz(skew)} (${amz(at)} + 15 min.)`
          : `Signature expired: ${f.amzDate} is now earlier than ${amz(skew)} (${amz(at)} - 15 min.)`,
      );
    }
    case 'wrong-service':
      return new StsError(
        403,
        'SignatureDoesNotMatch',
        `Credential should be scoped to correct service: '${f.service}'. `,
      );
    case 'unknown-key':
      return new StsError(
        403,
        'InvalidClientTokenId',
        'The security token included in the request is invalid.',
      );
    case 'signature':
      return new StsError(
        403,
        'SignatureDoesNotMatch',
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
      );
  }
}

/** Action and parameters from the query and, for a form POST, the body. */
function requestParams(req: IncomingMessage, rawQuery: string, body: Buffer): URLSearchParams {
  const params = new URLSearchParams(rawQuery);
  const type = header(req, 'content-type') ?? '';
  if (req.method === 'POST' && type.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    for (const [k, v] of new URLSearchParams(body.toString('utf8'))) params.append(k, v);
  }
  return params;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(',') : v;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new StsError(413, 'RequestEntityTooLarge', 'request body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function escapeXml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

function sendError(res: ServerResponse, e: StsError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const requestId = randomUUID();
  const type = e.status >= 500 ? 'Receiver' : 'Sender';
  const text =
    `<ErrorResponse xmlns="${STS_XMLNS}">` +
    `<Error><Type>${type}</Type><Code>${escapeXml(e.code)}</Code><Message>${escapeXml(e.message)}</Message></Error>` +
    `<RequestId>${requestId}</RequestId></ErrorResponse>`;
  res.writeHead(e.status, {
    'content-type': 'text/xml',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': requestId,
  });
  res.end(text);
}
