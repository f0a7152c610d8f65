/**
 * Pino-shaped, so a Fastify or pino logger can be passed as it is. `debug` is optional: keyhook
 * logs details there (a migration's start, its file and checksum) that a logger without it drops.
 */
export interface Logger {
  debug?(context: object, message: string): void;
  info(context: object, message: string): void;
  warn(context: object, message: string): void;
  error(context: object, message: string): void;
}

/**
 * The default: every line at `info` and above to the console; `debug` is left out. keyhook logs
 * little at `info` (a migration applied, a worker reaching its store again), so nothing here is
 * per request.
 */
export const consoleLogger: Logger = {
  info: (context, message) => console.info(`[keyhook] ${message}`, context),
  warn: (context, message) => console.warn(`[keyhook] ${message}`, context),
  error: (context, message) => console.error(`[keyhook] ${message}`, context),
};

export const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
