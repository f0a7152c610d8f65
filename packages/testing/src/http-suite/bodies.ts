import { describe, expect, it } from 'vitest';
import { type ApiReply, admin, call } from './client.js';
import type { SuiteContext } from './suite-context.js';

const JSON_TYPE = { 'content-type': 'application/json' };
const encode = (text: string) => new TextEncoder().encode(text);

/** A valid create body padded with spaces to exactly `size` bytes. */
function paddedCreate(size: number): Uint8Array {
  const json = JSON.stringify({ name: 'padded', scopes: ['items:read'] });
  return encode(json + ' '.repeat(size - json.length));
}

/** The bytes as a stream, so fetch sends them chunked, without Content-Length. */
function chunked(bytes: Uint8Array, chunkSize = 8192): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + chunkSize));
      offset += chunkSize;
    },
  });
}

function expectError(reply: ApiReply, status: number, code: string): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.body.error.code).toBe(code);
}

export function bodyCases(ctx: SuiteContext): void {
  describe('request bodies (docs/http-api.md §7 error table)', () => {
    const post = async (body: Uint8Array | ReadableStream<Uint8Array>, headers: Record<string, string>) =>
      call(ctx, 'POST', '/admin/keys', { token: await admin(ctx), body, headers });

    it('malformed JSON → 400 invalid_json', async () => {
      expectError(await post(encode('{"name": "x", "scopes": ['), JSON_TYPE), 400, 'invalid_json');
    });

    it('an empty body → 400 invalid_json', async () => {
      expectError(await post(new Uint8Array(0), JSON_TYPE), 400, 'invalid_json');
    });

    it('bytes that are not UTF-8 → 400 invalid_json: core reads the raw bytes, not a decoded copy', async () => {
      const bytes = Uint8Array.from([
        ...encode('{"name":"'),
        0xff,
        0xfe,
        ...encode('","scopes":["items:read"]}'),
      ]);
      expectError(await post(bytes, JSON_TYPE), 400, 'invalid_json');
    });

    it('a JSON array or number → 400 validation_failed', async () => {
      expectError(
        await post(encode('[{"name":"x","scopes":["items:read"]}]'), JSON_TYPE),
        400,
        'validation_failed',
      );
      expectError(await post(encode('42'), JSON_TYPE), 400, 'validation_failed');
      expectError(await post(encode('null'), JSON_TYPE), 400, 'validation_failed');
    });

    it('a body of exactly the 64 KiB limit is read (not 413)', async () => {
      const limit = ctx.keyhook.maxBodyBytes;
      expect(limit).toBe(64 * 1024);
      const reply = await post(paddedCreate(limit), JSON_TYPE);
      expect(reply.status, reply.text).toBe(201);
    });

    it('a body over 64 KiB with Content-Length → 413 payload_too_large', async () => {
      const reply = await post(paddedCreate(ctx.keyhook.maxBodyBytes + 1), JSON_TYPE);
      expectError(reply, 413, 'payload_too_large');
      expect(reply.headers.get('cache-control')).toBe('no-store');
    });

    it('a body over 64 KiB sent chunked, without Content-Length → 413 payload_too_large', async () => {
      const reply = await post(chunked(paddedCreate(ctx.keyhook.maxBodyBytes + 8000)), JSON_TYPE);
      expectError(reply, 413, 'payload_too_large');
    });

    it('a small body sent chunked is read whole', async () => {
      const reply = await post(chunked(paddedCreate(20_000), 1000), JSON_TYPE);
      expect(reply.status, reply.text).toBe(201);
    });

    it('a huge body on a route that takes none → 413, not ignored', async () => {
      const list = await call(ctx, 'DELETE', '/admin/keys/key_01jbz0000000000000000000zz', {
        token: await admin(ctx),
        body: new Uint8Array(ctx.keyhook.maxBodyBytes + 1),
        headers: { 'content-type': 'application/octet-stream' },
      });
      expectError(list, 413, 'payload_too_large');
    });

    it('a text/plain body → 415 unsupported_media_type', async () => {
      const body = encode(JSON.stringify({ name: 'x', scopes: ['items:read'] }));
      expectError(await post(body, { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
    });

    it('a JSON body with no Content-Type at all → 415 unsupported_media_type', async () => {
      const body = encode(JSON.stringify({ name: 'x', scopes: ['items:read'] }));
      expectError(await post(body, {}), 415, 'unsupported_media_type');
    });

    it('a Content-Type that is not a media type at all → 415 unsupported_media_type', async () => {
      const body = encode(JSON.stringify({ name: 'x', scopes: ['items:read'] }));
      expectError(await post(body, { 'content-type': 'json' }), 415, 'unsupported_media_type');
    });

    it('application/json in another charset → 415 unsupported_media_type', async () => {
      const body = encode(JSON.stringify({ name: 'x', scopes: ['items:read'] }));
      const reply = await post(body, { 'content-type': 'application/json; charset=iso-8859-1' });
      expectError(reply, 415, 'unsupported_media_type');
    });

    it('application/json with charset=utf-8 and odd casing is accepted', async () => {
      const body = encode(JSON.stringify({ name: 'x', scopes: ['items:read'] }));
      const reply = await post(body, { 'content-type': 'Application/JSON; Charset="UTF-8"' });
      expect(reply.status, reply.text).toBe(201);
    });
  });
}
