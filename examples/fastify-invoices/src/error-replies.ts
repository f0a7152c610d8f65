import { isKeyhookError } from '@keyhook/core';
import { errorEnvelope, errorResponse, type KeyhookResponse } from '@keyhook/core/http';
import { toStoreError } from '@keyhook/store-postgres';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';

/**
 * The app's own routes answer errors in keyhook's envelope, so a client reads a refused key,
 * an invalid body and an unknown invoice the same way. keyhook's own routes answer for themselves.
 */
export function registerErrorReplies(app: FastifyInstance): void {
  app.setNotFoundHandler((_request, reply) => send(reply, errorEnvelope(404, 'not_found', 'No such route.')));
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known = isKeyhookError(error) ? error : toStoreError(error);
    if (isKeyhookError(known)) {
      if (known.status >= 500) request.log.error({ err: error }, 'request failed');
      return send(reply, errorResponse(known));
    }
    const response = fastifyRefusal(error);
    if (response.status >= 500) request.log.error({ err: error }, 'request failed');
    return send(reply, response);
  });
}

/** Fastify's own refusals (body parsing) as keyhook's codes; anything else is a bug, told to nobody. */
function fastifyRefusal(error: FastifyError): KeyhookResponse {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errorEnvelope(413, 'payload_too_large', 'The request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errorEnvelope(415, 'unsupported_media_type', 'Send the body as application/json.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errorEnvelope(400, 'invalid_json', 'The request body is not valid JSON.');
    default:
      // Any other client error Fastify raises (a bad Content-Length, say) stays a client error.
      return error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500
        ? errorEnvelope(error.statusCode, 'validation_failed', 'The request is not valid.')
        : errorEnvelope(500, 'internal_error', 'An internal error occurred.');
  }
}

/** A finished response of keyhook's (or in its envelope), sent as it is. */
export function send(reply: FastifyReply, response: KeyhookResponse): FastifyReply {
  return reply
    .code(response.status)
    .headers(response.headers)
    .send(response.body ?? undefined);
}
