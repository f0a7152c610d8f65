import { ConfigError, loadConfig } from './config.js';
import {
  DEV_TOKEN_TTL_SECONDS,
  devTokenBanner,
  mintDevAdminToken,
  mintDevPortalLink,
  reachableBaseUrl,
} from './dev-token.js';
import { DevEncryptionKeyMissingError } from './encryption-key.js';
import { processLogger } from './log-format.js';
import { buildServer } from './server.js';
import { drainOnSignals } from './shutdown.js';

/** The process entry: `node dist/main.js` (`npm start` at the repository root). */
async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(1);
  }

  let server: Awaited<ReturnType<typeof buildServer>>;
  try {
    // One logger for Fastify, keyhook, the stores and the data plane: one format (data-plane.md §7.5).
    server = await buildServer(config, { logger: processLogger(config.production) });
  } catch (error) {
    // Said plainly, without a stack: the operator has a choice to make, not a bug to read.
    if (!(error instanceof DevEncryptionKeyMissingError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
  const { app } = server;
  drainOnSignals({
    close: server.close,
    log: (message, error) => (error ? app.log.error({ err: error }, message) : app.log.info(message)),
  });

  const store =
    config.store.kind === 'postgres' ? `postgres (schema ${config.store.schema})` : config.store.filename;
  // Fastify's own line, said once per address it listens on, names the store too.
  await app.listen({
    port: config.port,
    host: config.host,
    listenTextResolver: (address) => `keyhook reference server listening on ${address}  store: ${store}`,
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const baseUrl = reachableBaseUrl(config.host, port);
  if (server.metricsUrl) app.log.info(`metrics (Prometheus text) at ${server.metricsUrl}`);

  // Only a secret this process made up is ever used for a printed token; an operator's never.
  // So a portal link is printed in development only, beside that token.
  if (config.admin.kind === 'secret' && config.admin.generated) {
    // Never longer than the server accepts (KEYHOOK_ADMIN_JWT_MAX_LIFETIME).
    const ttlSeconds = Math.min(DEV_TOKEN_TTL_SECONDS, config.adminMaxTokenLifetimeSeconds);
    const token = await mintDevAdminToken({
      expiresInSeconds: ttlSeconds,
      secret: config.admin.secret,
      ...(config.admin.issuer !== undefined && { issuer: config.admin.issuer }),
      ...(config.admin.audience !== undefined && { audience: config.admin.audience }),
    });
    const portalLink = await mintDevPortalLink(server.keyhook.portal, ttlSeconds);
    console.log(devTokenBanner(token, baseUrl, ttlSeconds, portalLink));
  }
}

main().catch((error: unknown) => {
  console.error('keyhook reference server failed to start:', error);
  process.exit(1);
});
