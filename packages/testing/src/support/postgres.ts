import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { inCi } from './ci.js';

/** The database the Postgres suites use; trust auth on the local server by default. */
export const POSTGRES_TEST_URL =
  process.env.KEYHOOK_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Whether the Postgres suites can run. Under CI=true an unreachable server is an error,
 * never a skip: a skipped Postgres suite must fail the build.
 */
export async function postgresAvailable(): Promise<boolean> {
  const url = new URL(POSTGRES_TEST_URL);
  const reachable = await new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port || 5432) });
    socket.setTimeout(2000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
  if (!reachable && inCi()) {
    throw new Error(`CI: PostgreSQL is not reachable at ${url.host}; the Postgres suites must run in CI.`);
  }
  if (!reachable) console.warn(`PostgreSQL is not reachable at ${url.host}: skipping the Postgres suites.`);
  return reachable;
}

/** A schema name no other test run uses, so runs can share one database. */
export function uniqueSchemaName(label = 'test'): string {
  return `keyhook_${label}_${randomBytes(5).toString('hex')}`;
}
