import { KeyhookError } from '../errors.js';
import { header } from './headers.js';
import type { KeyhookRequest } from './messages.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

export function tooLarge(limit: number): KeyhookError {
  return new KeyhookError('payload_too_large', `The request body is larger than ${limit} bytes.`);
}

/**
 * Size first, then media type, then JSON. The body is parsed here, from the raw bytes the
 * adapter passed, and nowhere else.
 */
export function readJsonBody(request: KeyhookRequest, limit: number): unknown {
  if (request.bodyError === 'too_large') throw tooLarge(limit);
  // Judge the headers before an unreadable body, so every adapter gives the same answer.
  assertIdentityEncoding(header(request.headers, 'content-encoding'));
  if (request.bodyError === 'unreadable') {
    assertJsonMediaType(header(request.headers, 'content-type'));
    throw new KeyhookError('invalid_json', 'The request body could not be read.');
  }
  const raw = request.rawBody;
  if (raw && raw.byteLength > limit) throw tooLarge(limit);
  if (!raw || raw.byteLength === 0) {
    throw new KeyhookError('invalid_json', 'The request body is empty; send a JSON object.');
  }
  assertJsonMediaType(header(request.headers, 'content-type'));
  let text: string;
  try {
    text = decoder.decode(raw);
  } catch {
    throw new KeyhookError('invalid_json', 'The request body is not valid UTF-8.');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new KeyhookError('invalid_json', 'The request body is not valid JSON.');
  }
}

/** Whether the client sent a body at all: bytes, or one the adapter could not read. */
export function hasBody(request: KeyhookRequest): boolean {
  return request.bodyError !== undefined || (request.rawBody?.byteLength ?? 0) > 0;
}

/** A route without a body still refuses a huge one rather than ignoring it. */
export function assertBodyWithinLimit(request: KeyhookRequest, limit: number): void {
  if (request.bodyError === 'too_large' || (request.rawBody && request.rawBody.byteLength > limit)) {
    throw tooLarge(limit);
  }
}

/** Bodies are taken as sent: a compressed body is refused rather than inflated. */
function assertIdentityEncoding(contentEncoding: string | undefined): void {
  const encoding = contentEncoding?.trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    throw new KeyhookError(
      'unsupported_media_type',
      `Content-Encoding ${encoding.slice(0, 40)} is not supported; send the body uncompressed.`,
    );
  }
}

function assertJsonMediaType(contentType: string | undefined): void {
  const [type = '', ...params] = (contentType ?? '').split(';').map((part) => part.trim().toLowerCase());
  const charset = params
    .find((p) => p.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/"/g, '');
  if (type !== 'application/json' || (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')) {
    throw new KeyhookError('unsupported_media_type', 'Send the request body as application/json (UTF-8).');
  }
}
