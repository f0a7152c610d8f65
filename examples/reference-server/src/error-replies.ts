import { type Server, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { bodyUnread } from '@keyhook/adapter-fastify';
import { KeyhookError } from '@keyhook/core';
import {
  errorResponse,
  type KeyhookResponse,
  lingerAfterAnswer,
  lingeringClose,
  newId,
} from '@keyhook/core/http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * Routes outside keyhook's own (unknown paths, Fastify's parser errors) answer with the same
 * error envelope as keyhook (docs/decisions.md §1.2), and bad client input never becomes a 500.
 * No answer repeats the request's path, query or headers: they may hold a credential.
 */
export function registerErrorReplies(app: FastifyInstance): void {
  app.setNotFoundHandler((_request, reply) => send(reply, NO_ROUTE()));

  // HTTP/1.1 requires a Host header. Node's own refusal (its requireHostHeader, turned off in
  // server.ts) is a bare 400 with no body and no request id.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.headers.host !== undefined || request.raw.httpVersion !== '1.1') return done();
    reply.header('connection', 'close');
    send(reply, new KeyhookError('validation_failed', 'The request has no Host header.'));
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return send(reply, toKeyhookError(error, status));
  });
}

/** A request id like Fastify's `genReqId` makes, for answers given outside a request. */
export const newRequestId = (): string => newId('req');

/**
 * Fastify's `frameworkErrors`: what its router refuses before any route or hook runs. Its own
 * answers echo the path (`'/a%zz' is not a valid url component`); these do not.
 */
export function frameworkErrorReply(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  // No hook runs for these: the request id goes on here. The request goes no further, and any
  // body it has stays unread: the connection ends with the answer, lingering for that body.
  reply.header('x-request-id', request.id).header('connection', 'close');
  if (bodyUnread(request))
    lingerAfterAnswer(request.raw.socket, { maxMs: request.server.server.requestTimeout });
  if (error.code === 'FST_ERR_BAD_URL') {
    send(reply, new KeyhookError('validation_failed', 'The request path is not a valid URL path.'));
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    send(reply, new KeyhookError('uri_too_long', 'A path segment is longer than this server accepts.'));
  } else {
    request.log.error({ err: error }, 'request failed');
    send(reply, new KeyhookError('internal_error', 'An internal error occurred.'));
  }
}

/**
 * Node's `clientError`: a request the HTTP parser refused (headers too large, a control byte in
 * a header, Content-Length with Transfer-Encoding), or one not received in time. There is no
 * request object: the answer is written on the socket (answerOnSocket).
 */
export function clientErrorReply(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection, or one already gone: there is nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // An answer already begun on this socket cannot be followed by another: only close it.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const requestId = newRequestId();
  this.log.debug({ err: error, requestId }, 'client error');
  answerOnSocket(socket, clientError(error.code), requestId, this.server.requestTimeout);
}

/**
 * The server's `connect` event: Node hands a CONNECT request's socket to its listener, and
 * without one closes it with no answer. This server serves no CONNECT: it is a route it does
 * not have, as for any other method (Fastify's 404 for `PROPFIND /healthz`).
 */
export function connectReply(server: Server, socket: Socket): void {
  answerOnSocket(socket, NO_ROUTE(), newRequestId(), server.requestTimeout);
}

/**
 * An answer outside any request: written on the socket as it is, in the envelope, with a request
 * id of its own and `Connection: close`, and then the connection ends (lingeringClose: whatever
 * the client was still sending is read and dropped, so it reads this answer, not a reset).
 */
function answerOnSocket(socket: Socket, error: KeyhookError, requestId: string, lingerMs: number): void {
  const response = errorResponse(error);
  const body = response.body ?? '';
  const headers: Record<string, string> = {
    ...response.headers,
    'content-length': String(Buffer.byteLength(body)),
    'x-request-id': requestId,
    connection: 'close',
  };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status]}\r\n${head}\r\n${body}`);
  lingeringClose(socket, { maxMs: lingerMs });
}

const NO_ROUTE = (): KeyhookError => new KeyhookError('not_found', 'No such route.');

function clientError(code: string | undefined): KeyhookError {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new KeyhookError('request_timeout', 'The request was not received in time.');
    case 'HPE_HEADER_OVERFLOW':
      return new KeyhookError(
        'headers_too_large',
        'The request headers are larger than this server accepts.',
      );
    case 'HPE_URI_TOO_LONG':
      return new KeyhookError('uri_too_long', 'The request URL is longer than this server accepts.');
    default:
      return new KeyhookError('validation_failed', 'The request is not valid HTTP.');
  }
}

function toKeyhookError(error: FastifyError, status: number): KeyhookError {
  if (status === 413) return new KeyhookError('payload_too_large', 'The request body is too large.');
  if (status === 415) return new KeyhookError('unsupported_media_type', 'Unsupported content type.');
  if (status === 400 && error.code?.startsWith('FST_ERR_CTP')) {
    return new KeyhookError('invalid_json', 'The request body is not valid JSON.');
  }
  if (status === 404) return NO_ROUTE();
  if (status === 408) return new KeyhookError('request_timeout', 'The request was not received in time.');
  if (status === 414) return new KeyhookError('uri_too_long', 'The request URL is too long.');
  if (status === 431) return new KeyhookError('headers_too_large', 'The request headers are too large.');
  if (status >= 400 && status < 500)
    return new KeyhookError('validation_failed', 'The request is not valid.');
  return new KeyhookError('internal_error', 'An internal error occurred.');
}

function send(reply: FastifyReply, error: KeyhookError): FastifyReply {
  const response: KeyhookResponse = errorResponse(error);
  return reply.code(response.status).headers(response.headers).send(response.body);
}
