import { createHash } from 'node:crypto';

export const DEFAULT_SCHEMA = 'keyhook';

// Lowercase, so the quoted name equals what an unquoted one would fold to; 63 is NAMEDATALEN - 1.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Returns the name when it is a schema keyhook will use; throws a TypeError otherwise. */
export function assertSchemaName(name: string): string {
  if (typeof name !== 'string' || !SCHEMA_NAME.test(name)) {
    throw new TypeError(
      `Invalid Postgres schema name ${JSON.stringify(name)}: use 1–63 of a-z, 0-9 and _, not starting with a digit.`,
    );
  }
  // Postgres reserves the pg_ prefix for system schemas and refuses to create one.
  if (name.startsWith('pg_')) throw new TypeError(`Invalid Postgres schema name "${name}": pg_ is reserved.`);
  return name;
}

/** The schema as a quoted identifier. The name is validated first, so it holds no quote. */
export function quoteSchema(name: string): string {
  return `"${assertSchemaName(name)}"`;
}

/**
 * The advisory-lock key that serialises migrations of one schema: the first 8 bytes of a
 * SHA-256, as a signed bigint in decimal, so other schemas in the database never contend.
 */
export function migrationLockKey(name: string): string {
  return lockKey('migrations', name);
}

/** The advisory-lock key that lets one instance at a time purge a schema (retention). */
export function purgeLockKey(name: string): string {
  return lockKey('purge', name);
}

function lockKey(purpose: string, name: string): string {
  const digest = createHash('sha256')
    .update(`keyhook:${purpose}:${assertSchemaName(name)}`)
    .digest();
  return digest.readBigInt64BE(0).toString();
}
