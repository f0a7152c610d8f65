import { ERROR_STATUS, isKeyhookError, KeyhookError } from '@keyhook/core';
import { errorResponse } from '@keyhook/core/http';
import { describe, expect, it } from 'vitest';

describe('errors', () => {
  it('maps every code through the one table', () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      expect(new KeyhookError(code as keyof typeof ERROR_STATUS, 'x').status).toBe(status);
    }
  });

  it('lets only key_revoked and key_expired answer 409 as well (docs/http-api.md §7: rotate on a revoked key)', () => {
    expect(new KeyhookError('key_revoked', 'x', { status: 409 }).status).toBe(409);
    expect(new KeyhookError('key_expired', 'x', { status: 409 }).status).toBe(409);
    expect(() => new KeyhookError('not_found', 'x', { status: 409 })).toThrow(TypeError);
  });

  it('recognises errors from another copy of the library, and nothing else', () => {
    const foreign = Object.assign(new Error('x'), { [Symbol.for('keyhook.error')]: true, code: 'not_found' });
    expect(isKeyhookError(foreign)).toBe(true);
    expect(isKeyhookError(new Error('x'))).toBe(false);
    expect(isKeyhookError({ code: 'not_found' })).toBe(false);
    expect(isKeyhookError(null)).toBe(false);
  });

  it('never leaks the message or details of an internal error', () => {
    const response = errorResponse(
      new KeyhookError('internal_error', 'password=hunter2 at db.ts:12', { details: [{ message: 'stack' }] }),
    );
    expect(response.status).toBe(500);
    expect(JSON.parse(response.body!)).toEqual({
      error: { code: 'internal_error', message: 'An internal error occurred.' },
    });
  });

  it('adds Retry-After to 503 and RFC 6750 challenges to 401 and 403', () => {
    const unavailable = errorResponse(new KeyhookError('unavailable', 'down', { retryAfter: 2 }));
    expect(unavailable.headers['retry-after']).toBe('2');
    expect(errorResponse(new KeyhookError('missing_credentials', 'x')).headers['www-authenticate']).toBe(
      'Bearer realm="keyhook"',
    );
    expect(errorResponse(new KeyhookError('key_revoked', 'gone "now"')).headers['www-authenticate']).toBe(
      'Bearer realm="keyhook", error="invalid_token", error_description="gone now"',
    );
    const scope = errorResponse(
      new KeyhookError('insufficient_scope', 'x', { details: [{ message: 'm', scope: 'runs:apply' }] }),
    );
    expect(scope.headers['www-authenticate']).toBe(
      'Bearer realm="keyhook", error="insufficient_scope", scope="runs:apply"',
    );
  });
});
