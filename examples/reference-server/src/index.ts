export {
  REFERENCE_EVENTS,
  REFERENCE_HEADERS,
  REFERENCE_SCOPES,
  type ReferenceEvent,
  type ReferenceKeyhook,
  type Scope,
} from './catalog.js';
export {
  type AdminAuthConfig,
  ConfigError,
  DEFAULT_HOST,
  DEFAULT_PG_SCHEMA,
  DEFAULT_PORT,
  DEFAULT_SQLITE_PATH,
  type LoadConfigOptions,
  loadConfig,
  type ServerConfig,
  type StoreConfig,
} from './config.js';
export {
  DEV_PORTAL_LINK_MAX_SECONDS,
  DEV_SUBJECT,
  DEV_TENANT_ID,
  DEV_TOKEN_TTL_SECONDS,
  type DevPortalLink,
  devTokenBanner,
  mintDevAdminToken,
  mintDevPortalLink,
  reachableBaseUrl,
} from './dev-token.js';
export { parseDuration } from './duration.js';
export { HEALTH_PING_TIMEOUT_MS } from './healthz.js';
export { type LineSink, processLogger } from './log-format.js';
export {
  API_PREFIX,
  type BuildServerOptions,
  buildServer,
  PORTAL_PATH,
  type ReferenceServer,
} from './server.js';
export { DRAIN_TIMEOUT_MS, type DrainOptions, drainOnSignals } from './shutdown.js';
