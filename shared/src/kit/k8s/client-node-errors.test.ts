// The error predicates (rest.ts) and errorMessage (runtime/errors.ts) take client-node's
// ApiException as well as our own errors: code that still calls client-node (tests, the exec
// plugin path) gets the same answers. client-node is only loaded by this test.
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { errorMessage } from '../runtime/errors.js';
import { K8sHttpError } from './listwatch.js';
import {
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isNotFound,
  isRetriable,
  isUnauthorized,
} from './rest.js';

function apiErr(code: number, reason?: string, message = 'x'): ApiException<string> {
  return new ApiException(
    code,
    'msg',
    JSON.stringify({ kind: 'Status', code, reason, message }),
    {},
  );
}

describe('error predicates', () => {
  const cases: [string, unknown, Record<string, boolean>][] = [
    ['404 NotFound', apiErr(404, 'NotFound'), { isNotFound: true }],
    ['409 Conflict', apiErr(409, 'Conflict'), { isConflict: true }],
    ['409 AlreadyExists', apiErr(409, 'AlreadyExists'), { isAlreadyExists: true }],
    ['409 without body', new ApiException(409, 'm', undefined, {}), { isConflict: true }],
    ['410 Expired', apiErr(410, 'Expired'), { isGone: true }],
    ['403 Forbidden', apiErr(403, 'Forbidden'), { isForbidden: true }],
    ['401 Unauthorized', apiErr(401, 'Unauthorized'), { isUnauthorized: true }],
    ['500', apiErr(500, 'InternalError'), { isRetriable: true }],
    ['429', apiErr(429, 'TooManyRequests'), { isRetriable: true }],
    ['transport 410', new K8sHttpError(410, { reason: 'Expired' }, 'watch'), { isGone: true }],
    [
      'transport 409 AlreadyExists',
      new K8sHttpError(409, { reason: 'AlreadyExists' }, 'x'),
      { isAlreadyExists: true },
    ],
    ['network error', new Error('ECONNRESET'), { isRetriable: true }],
    ['undefined', undefined, { isRetriable: true }],
  ];
  const preds = {
    isNotFound,
    isConflict,
    isAlreadyExists,
    isGone,
    isForbidden,
    isUnauthorized,
    isRetriable,
  };
  it.each(cases)('%s', (_name, err, truthy) => {
    for (const [name, p] of Object.entries(preds)) expect(p(err), name).toBe(truthy[name] ?? false);
  });

  it('summarises API errors without the body dump', () => {
    expect(errorMessage(apiErr(409, 'Conflict', 'the object has been modified'))).toBe(
      '409 Conflict: the object has been modified',
    );
  });
});
