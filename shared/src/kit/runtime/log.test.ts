import { describe, expect, it } from 'vitest';
import {
  childLogger,
  createLogger,
  logConfigFromEnv,
  REDACTED,
  serializeError,
  type LogConfig,
} from './log.js';

function capture(cfg: LogConfig = {}) {
  const lines: string[] = [];
  const log = createLogger({ ...cfg, destination: { write: (s: string) => void lines.push(s) } });
  const records = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log, lines, records };
}

const SECRET = 'c3VwZXItc2VjcmV0';

describe('log redaction', () => {
  it.each([
    { name: 'top-level data', bindings: { data: { password: SECRET } } },
    { name: 'a Secret object', bindings: { secret: { kind: 'Secret', data: { k: SECRET } } } },
    { name: 'stringData', bindings: { obj: { stringData: { k: SECRET } } } },
    { name: 'binaryData', bindings: { cm: { binaryData: { k: SECRET } } } },
    { name: 'nested two deep', bindings: { delivery: { payload: { data: { k: SECRET } } } } },
    { name: 'nested three deep', bindings: { a: { b: { c: { data: SECRET } } } } },
    { name: 'a token', bindings: { creds: { token: SECRET } } },
    {
      name: 'an authorization header',
      bindings: { headers: { authorization: `Bearer ${SECRET}` } },
    },
    {
      name: 'a request authorization header',
      bindings: { req: { headers: { authorization: `Bearer ${SECRET}` } } },
    },
    {
      name: 'AWS session credentials',
      bindings: { credentials: { secretAccessKey: SECRET, sessionToken: SECRET } },
    },
    { name: 'a kubeconfig key', bindings: { user: { 'client-key-data': SECRET } } },
  ])('censors $name', ({ bindings }) => {
    const { log, lines } = capture();
    log.info(bindings, 'message');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(SECRET);
    expect(lines[0]).toContain(REDACTED);
  });

  it('censors bindings of child loggers too', () => {
    const { log, lines } = capture();
    log.child({ obj: { data: SECRET } }).info('x');
    expect(lines[0]).not.toContain(SECRET);
  });

  it('keeps names and keys readable', () => {
    const { log, records } = capture();
    log.info({ name: 'tls', namespace: 'project-a-1', keys: ['tls.crt', 'tls.key'] }, 'synced');
    expect(records()[0]).toMatchObject({
      name: 'tls',
      namespace: 'project-a-1',
      keys: ['tls.crt', 'tls.key'],
    });
  });

  it('censors in text format as well', () => {
    const { log, lines } = capture({ format: 'text' });
    log.warn({ secret: { data: SECRET }, key: 'ns/a' }, 'hello');
    expect(lines[0]).not.toContain(SECRET);
    expect(lines[0]).toMatch(/WARN +hello /);
    expect(lines[0]).toContain(' key=ns/a');
    expect(lines[0]).toContain(' secret={"data":"[REDACTED]"}');
  });
});

describe('log bindings and levels', () => {
  it('binds component, controller, cluster and key, leaving out undefined', () => {
    const { log, records } = capture({ base: { component: 'agent' } });
    childLogger(log, {
      controller: 'delivery',
      cluster: 'eu-1',
      key: 'mirrorhub-system/sm-a',
      extra: undefined,
    }).info('x');
    const r = records()[0];
    expect(r).toMatchObject({
      component: 'agent',
      controller: 'delivery',
      cluster: 'eu-1',
      key: 'mirrorhub-system/sm-a',
      level: 'info',
      msg: 'x',
    });
    expect(r).not.toHaveProperty('extra');
    expect(typeof r?.['time']).toBe('string');
  });

  it.each([
    { level: 'warn' as const, printed: ['warn', 'error'] },
    { level: 'debug' as const, printed: ['debug', 'info', 'warn', 'error'] },
    { level: 'silent' as const, printed: [] },
  ])('level $level prints $printed', ({ level, printed }) => {
    const { log, records } = capture({ level });
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error('e');
    expect(records().map((r) => r['level'])).toEqual(printed);
  });

  it.each([
    { env: {}, want: {} },
    { env: { LOG_LEVEL: 'DEBUG', LOG_FORMAT: 'text' }, want: { level: 'debug', format: 'text' } },
    { env: { LOG_LEVEL: 'loud' }, error: /LOG_LEVEL must be one of/ },
    { env: { LOG_FORMAT: 'xml' }, error: /LOG_FORMAT must be json or text/ },
  ])('logConfigFromEnv($env)', ({ env, want, error }) => {
    if (error) expect(() => logConfigFromEnv(env)).toThrow(error);
    else expect(logConfigFromEnv(env)).toEqual(want);
  });
});

describe('error serialisation', () => {
  it('logs err with its cause chain', () => {
    const { log, records } = capture();
    const root = new Error('ECONNREFUSED 10.0.0.1:443');
    const mid = new Error('listing secrets in eu-1', { cause: root });
    log.error({ err: new Error('reconcile failed', { cause: mid }) }, 'failed');
    const err = records()[0]?.['err'] as Record<string, unknown>;
    expect(err).toMatchObject({
      type: 'Error',
      message: 'reconcile failed',
      cause: {
        message: 'listing secrets in eu-1',
        cause: { message: 'ECONNREFUSED 10.0.0.1:443' },
      },
    });
  });

  it('prints API errors as code, reason and Status message; never the body or headers', () => {
    const apiErr = Object.assign(
      new Error('HTTP-Code: 409 Message: ... Body: {...} Headers: {...}'),
      {
        code: 409,
        body: JSON.stringify({
          kind: 'Status',
          reason: 'Conflict',
          message: 'the object has been modified',
          details: { data: SECRET },
        }),
        headers: { authorization: SECRET },
      },
    );
    const { log, lines, records } = capture();
    log.error({ err: apiErr }, 'write failed');
    expect(lines[0]).not.toContain(SECRET);
    expect(records()[0]?.['err']).toMatchObject({
      message: '409 Conflict: the object has been modified',
      code: 409,
      reason: 'Conflict',
    });
  });

  it('survives cycles and non-errors', () => {
    const a: Error & { cause?: unknown } = new Error('a');
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(() => serializeError(a)).not.toThrow();
    expect(serializeError('plain')).toEqual({ type: 'string', message: 'plain' });
    expect(serializeError(undefined).message).toBe('undefined');
  });
});
