export { type AdminSession, type AdminSessionOptions, AdminSessionRejected } from './admin/session.js';
export { type Clock, cryptoRandomBytes, type RandomBytes, systemClock } from './clock.js';
export {
  ERROR_STATUS,
  type ErrorCode,
  type ErrorDetail,
  isKeyhookError,
  KeyhookError,
  type KeyhookErrorOptions,
} from './errors.js';
export type { ApiKeyContext, GuardResult } from './http/handler.js';
export { bearerToken, header } from './http/headers.js';
export { errorResponse } from './http/response.js';
export type {
  HttpMethod,
  KeyhookRequest,
  KeyhookResponse,
  RequestHeaders,
  RouteDefinition,
} from './http/types.js';
export { type IdPrefix, isWellFormedId, newId } from './ids.js';
export {
  createKeyhook,
  DEFAULT_ADMIN_BODY_LIMIT,
  DEFAULT_PREFIX,
  type Keyhook,
  type KeyhookOptions,
} from './keyhook.js';
export { API_KEY_PATTERN, KEY_PREFIX, mintApiKey, type ParsedApiKey, parseApiKey } from './keys/format.js';
export { digestsEqual, hashApiKey } from './keys/hash.js';
export { LAST_USED_INTERVAL_MS } from './keys/last-used.js';
export { type CreateApiKeyInput, createApiKeySchema } from './keys/schemas.js';
export { ApiKeys, type IssuedApiKey } from './keys/service.js';
export { type ApiKeyView, type ApiKeyViewStatus, toApiKeyView } from './keys/view.js';
export { consoleLogger, type Logger, silentLogger } from './logger.js';
export { isScope, OPERATION_SCOPES, type Operation, SCOPES, type Scope, scopeFor } from './scopes.js';
export { MemoryStore } from './store/memory.js';
export type { ApiKeyRecord, ApiKeyStatus, ListPage, RotateOutcome, Store } from './store/types.js';
