import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { adminToken } from '../support/admin.js';
import type { SuiteContext } from './types.js';

export interface ApiReply {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body; undefined when the body is not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: a reply body is whatever the server sent; expect() checks it.
  body: any;
}

export interface CallOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as JSON with `Content-Type: application/json`. */
  json?: unknown;
  /** Sent as it is, with no Content-Type unless `headers` gives one; a stream goes chunked. */
  body?: Uint8Array | ReadableStream<Uint8Array>;
  headers?: Record<string, string>;
}

/** One real HTTP request to `{baseUrl}{prefix}{path}`. */
export async function call(
  ctx: SuiteContext,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<ApiReply> {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  let body: Uint8Array | ReadableStream<Uint8Array> | string | undefined = options.body;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  Object.assign(headers, options.headers);
  const response = await fetch(`${ctx.baseUrl}${ctx.prefix}${path}`, {
    method,
    headers,
    body,
    ...(body instanceof ReadableStream && { duplex: 'half' }),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
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
  input: { name?: string; scopes?: string[]; expiresAt?: string } = {},
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
