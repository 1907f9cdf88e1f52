/**
 * The one logger factory for hub and agent.
 *
 * - Configured once at start-up from a config object (`createLogger(config)`); nothing reads the
 *   environment at module load. `logConfigFromEnv()` is a helper main.ts may call explicitly.
 * - Child loggers carry `{component, controller, cluster, key}` (`childLogger`).
 * - Redaction is the second line of defence: the first is that payloads never reach a logger.
 *   `REDACT_PATHS` censors Secret-shaped fields (`data`, `stringData`, tokens, auth headers) at
 *   the top level and up to three levels deep, so a stray `{ secret }` or `{ obj: { secret } }`
 *   binding still prints no value.
 * - Errors go under `err` and are serialised from a whitelist (type, message, stack, code,
 *   reason, cause chain): arbitrary enumerable properties of an error — such as the response
 *   body and headers client-node attaches to ApiException — are never printed.
 */
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { errorMessage, httpStatusOf, isObject, reasonOf } from './errors.js';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** `json`: one JSON object per line (production). `text`: one readable line (laptops, demo). */
export type LogFormat = 'json' | 'text';

export interface LogConfig {
  level?: LogLevel;
  format?: LogFormat;
  /** Bound on every line, e.g. `{ component: 'hub', version }`. */
  base?: Record<string, string | number>;
  /** Extra paths to censor on top of `REDACT_PATHS`. */
  redact?: string[];
  /** Where lines go; default stdout. Tests pass a collecting stream. */
  destination?: DestinationStream;
}

/** What a child logger may be bound with. Values are names (never payload). */
export interface LogBindings {
  component?: string;
  controller?: string;
  cluster?: string;
  /** Work-queue key: `namespace/name` or `name`. */
  key?: string;
  [extra: string]: string | number | boolean | undefined;
}

const SENSITIVE_KEYS = [
  'data',
  'stringData',
  'binaryData',
  'token',
  'password',
  'secretAccessKey',
  'sessionToken',
  'clientKey',
  'client-key-data',
  'secret_id',
];

function sensitivePaths(): string[] {
  const out: string[] = [];
  for (const k of SENSITIVE_KEYS) {
    const seg = /^[A-Za-z_$][\w$]*$/.test(k) ? k : `["${k}"]`;
    const dot = seg.startsWith('[') ? '' : '.';
    out.push(seg, `*${dot}${seg}`, `*.*${dot}${seg}`, `*.*.*${dot}${seg}`);
  }
  for (const h of ['authorization', 'Authorization', 'cookie', 'x-vault-token', 'X-Vault-Token']) {
    const seg = /^[A-Za-z_$][\w$]*$/.test(h) ? `.${h}` : `["${h}"]`;
    out.push(`headers${seg}`, `*.headers${seg}`, `*.*.headers${seg}`);
  }
  return out;
}

/** Paths censored in every log line. */
export const REDACT_PATHS: readonly string[] = Object.freeze(sensitivePaths());
export const REDACTED = '[REDACTED]';

/** The serialised shape of an error in a log line. */
export interface SerializedError {
  type: string;
  message: string;
  stack?: string;
  code?: number | string;
  reason?: string;
  cause?: SerializedError;
  errors?: SerializedError[];
}

/**
 * Whitelisted error serialisation with the `cause` chain (depth-limited, cycle-safe).
 * API errors print `"<code> <reason>: <Status.message>"` as their message, not the raw body.
 */
export function serializeError(
  err: unknown,
  depth = 0,
  seen = new Set<unknown>(),
): SerializedError {
  if (!isObject(err)) return { type: typeof err, message: errorMessage(err) };
  seen.add(err);
  const out: SerializedError = {
    type:
      (err instanceof Error ? err.constructor?.name || err.name : undefined) ??
      (typeof err['name'] === 'string' ? err['name'] : 'Object'),
    message: errorMessage(err),
  };
  if (typeof err['stack'] === 'string') out.stack = err['stack'];
  const status = httpStatusOf(err);
  if (status !== undefined) out.code = status;
  else if (typeof err['code'] === 'string') out.code = err['code'];
  const reason = reasonOf(err);
  if (reason) out.reason = reason;
  if (depth < 8) {
    const cause = err['cause'];
    if (cause !== undefined && !seen.has(cause)) out.cause = serializeError(cause, depth + 1, seen);
    const errors = err['errors'];
    if (Array.isArray(errors)) {
      out.errors = errors.slice(0, 10).map((e) => serializeError(e, depth + 1, seen));
    }
  }
  return out;
}

/** Read `LOG_LEVEL` / `LOG_FORMAT` from an env-like record (call once, in main). */
export function logConfigFromEnv(env: Record<string, string | undefined>): LogConfig {
  const cfg: LogConfig = {};
  const level = env['LOG_LEVEL']?.trim().toLowerCase();
  if (level) {
    if (!(LOG_LEVELS as readonly string[]).includes(level)) {
      throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; got "${level}"`);
    }
    cfg.level = level as LogLevel;
  }
  const format = env['LOG_FORMAT']?.trim().toLowerCase();
  if (format) {
    if (format !== 'json' && format !== 'text') {
      throw new Error(`LOG_FORMAT must be json or text; got "${format}"`);
    }
    cfg.format = format;
  }
  return cfg;
}

/** Build the process logger. */
export function createLogger(config: LogConfig = {}): Logger {
  const options: LoggerOptions = {
    level: config.level ?? 'info',
    base: { ...(config.base ?? {}) },
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: 'msg',
    errorKey: 'err',
    redact: { paths: [...REDACT_PATHS, ...(config.redact ?? [])], censor: REDACTED },
    serializers: {
      err: (e: unknown) => serializeError(e),
      cause: (e: unknown) => serializeError(e),
    },
    formatters: { level: (label) => ({ level: label }) },
  };
  const dest =
    config.format === 'text'
      ? textDestination(config.destination ?? process.stdout)
      : config.destination;
  return dest ? pino(options, dest) : pino(options);
}

/** A logger that drops everything (tests, libraries used without a logger). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** Child logger bound with names; undefined values are left out. */
export function childLogger(parent: Logger, bindings: LogBindings): Logger {
  const clean: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(bindings)) if (v !== undefined) clean[k] = v;
  return parent.child(clean);
}

const TEXT_SKIP = new Set(['time', 'level', 'msg', 'pid', 'hostname', 'component', 'controller']);

/**
 * Render pino's JSON lines as `time LEVEL [component/controller] msg k=v ... err=...`.
 * Runs after redaction (pino redacts before writing), so it never sees censored values.
 */
export function textDestination(out: { write(s: string): unknown }): DestinationStream {
  return {
    write(line: string): void {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(line) as Record<string, unknown>;
      } catch {
        out.write(line);
        return;
      }
      const where = [rec['component'], rec['controller']].filter(Boolean).join('/');
      let s = `${String(rec['time'] ?? '')} ${String(rec['level'] ?? '')
        .toUpperCase()
        .padEnd(5)}`;
      if (where) s += ` [${where}]`;
      s += ` ${String(rec['msg'] ?? '')}`;
      for (const [k, v] of Object.entries(rec)) {
        if (TEXT_SKIP.has(k) || k === 'err') continue;
        s += ` ${k}=${typeof v === 'string' ? quote(v) : JSON.stringify(v)}`;
      }
      const err = rec['err'];
      if (isObject(err)) {
        let e: unknown = err;
        const msgs: string[] = [];
        while (isObject(e) && msgs.length < 8) {
          msgs.push(String(e['message'] ?? ''));
          e = e['cause'];
        }
        s += ` err=${quote(msgs.join(': caused by: '))}`;
      }
      out.write(s + '\n');
    },
  };
}

function quote(v: string): string {
  return /^[\w./:@-]*$/.test(v) && v !== '' ? v : JSON.stringify(v);
}
