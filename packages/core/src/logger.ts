/** Pino-shaped, so a Fastify or pino logger can be passed as it is. */
export interface Logger {
  info(context: object, message: string): void;
  warn(context: object, message: string): void;
  error(context: object, message: string): void;
}

export const consoleLogger: Logger = {
  info: () => {},
  warn: (context, message) => console.warn(`[keyhook] ${message}`, context),
  error: (context, message) => console.error(`[keyhook] ${message}`, context),
};

export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };
