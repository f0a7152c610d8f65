import { errorResponse, KeyhookError, type KeyhookResponse } from '@keyhook/core';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';

/**
 * Routes outside keyhook's own (unknown paths, Fastify's parser errors) answer with the same
 * error envelope as keyhook (DESIGN.md §2), and bad client input never becomes a 500.
 */
export function registerErrorReplies(app: FastifyInstance): void {
  app.setNotFoundHandler((_request, reply) => send(reply, new KeyhookError('not_found', 'No such route.')));

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return send(reply, toKeyhookError(error, status));
  });
}

function toKeyhookError(error: FastifyError, status: number): KeyhookError {
  if (status === 413) return new KeyhookError('payload_too_large', 'The request body is too large.');
  if (status === 415) return new KeyhookError('unsupported_media_type', 'Unsupported content type.');
  if (status === 400 && error.code?.startsWith('FST_ERR_CTP')) {
    return new KeyhookError('invalid_json', 'The request body is not valid JSON.');
  }
  if (status === 404) return new KeyhookError('not_found', 'No such route.');
  if (status >= 400 && status < 500)
    return new KeyhookError('validation_failed', 'The request is not valid.');
  return new KeyhookError('internal_error', 'An internal error occurred.');
}

function send(reply: FastifyReply, error: KeyhookError): FastifyReply {
  const response: KeyhookResponse = errorResponse(error);
  return reply.code(response.status).headers(response.headers).send(response.body);
}
