/** The HS256 secret every suite signs admin tokens with (at least 32 bytes). */
export const TEST_ADMIN_SECRET = 'keyhook-test-admin-secret-0123456789abcdef';

/** The master key every suite seals secrets with: 32 bytes, base64. */
export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');
