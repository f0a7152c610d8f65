/**
 * The options `createKeyhook` cannot start without. An option left out and one set to an empty
 * string (an unset variable passed through compose or Kubernetes as `KEY=`) get the same
 * message: the option's name and how to make a value (docs/decisions.md §19).
 */

/** Absent: `undefined`, `null`, or a string of nothing but spaces. */
export function isBlank(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

export const HOW_TO_MAKE = {
  store:
    'Pass where keyhook keeps its data: createSqliteStore({ filename }) from @keyhook/store-sqlite, ' +
    'createPostgresStore({ connectionString }) from @keyhook/store-postgres, or new MemoryStore() in tests.',
  adminSession:
    "Pass how admin JWTs are verified, one of: { jwksUrl } (your portal's JWKS, e.g. " +
    'https://portal.example.com/.well-known/jwks.json), { publicKey } (its SPKI PEM public key) or ' +
    '{ secret } (HS256, at least 32 bytes: `openssl rand -base64 32`).',
  encryptionKey:
    'Make one once with `node -e "import(\'@keyhook/core\').then(k => console.log(k.generateEncryptionKey()))"` ' +
    '(or `openssl rand -base64 32`), keep it in your secret manager (e.g. KEYHOOK_ENCRYPTION_KEY), ' +
    'and pass it as createKeyhook({ encryptionKey }).',
} as const;

/** `keyhook: <name> is required[ why]. <how>` */
export function missingOption(name: string, how: string, why = ''): TypeError {
  return new TypeError(`keyhook: ${name} is required${why ? ` ${why}` : ''}. ${how}`);
}
