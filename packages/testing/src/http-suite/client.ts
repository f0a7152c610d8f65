import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { adminToken } from '../support/credentials.js';
import { type JsonReply, type JsonRequestOptions, requestJson } from '../support/http.js';
import type { SuiteContext } from './suite-context.js';

export type ApiReply = JsonReply;
export type CallOptions = JsonRequestOptions;

/** One real HTTP request to `{baseUrl}{prefix}{path}`. */
export function call(
  ctx: Pick<SuiteContext, 'baseUrl' | 'prefix' | 'contract'>,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<ApiReply> {
  return requestJson(method, `${ctx.baseUrl}${ctx.prefix}${path}`, { contract: ctx.contract, ...options });
}

/** A valid admin session for `tenantId`, minted at the suite clock's time. */
export function admin(ctx: SuiteContext, tenantId = 'tenant_a'): Promise<string> {
  return adminToken({ tenantId, now: ctx.clock.now() });
}

export interface CreatedKey {
  key: { id: string; keyLookup: string; scopes: string[]; status: string; revokedAt: string | null };
  secret: string;
}

/** Creates a key through the admin endpoint and insists it worked. */
export async function createKey(
  ctx: SuiteContext,
  input: {
    name?: string;
    scopes?: string[];
    expiresAt?: string;
    rateLimit?: { limit: number; window: number };
  } = {},
  tenantId = 'tenant_a',
): Promise<CreatedKey> {
  const reply = await call(ctx, 'POST', '/admin/keys', {
    token: await admin(ctx, tenantId),
    json: { name: 'test key', scopes: ['items:read'], ...input },
  });
  expect(reply.status, reply.text).toBe(201);
  return reply.body as CreatedKey;
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export function randomHex(chars: number): string {
  return randomBytes(chars / 2).toString('hex');
}

/** A well-formed key id that no store holds. */
export const UNKNOWN_KEY_ID = 'key_01jbz0000000000000000000zz';
