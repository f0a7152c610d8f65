import { buildInvoicesApp } from './app.js';

// node dist/main.js: DATABASE_URL and KEYHOOK_ADMIN_JWT_SECRET (required), KEYHOOK_ENCRYPTION_KEY
// (required: without it keyhook refuses to start, and says how to make one), PORT (3002).
const databaseUrl = process.env['DATABASE_URL'];
const adminSecret = process.env['KEYHOOK_ADMIN_JWT_SECRET'];
if (!databaseUrl || !adminSecret) {
  console.error(
    'Set DATABASE_URL (postgres://…) and KEYHOOK_ADMIN_JWT_SECRET (at least 32 bytes: the admin portal signs its JWTs with it).',
  );
  process.exit(1);
}
// No fallback for the key: createKeyhook's own TypeError (naming generateEncryptionKey()) ends the process.
const invoices = await buildInvoicesApp({
  databaseUrl,
  adminSecret,
  encryptionKey: process.env['KEYHOOK_ENCRYPTION_KEY'],
  logger: true,
});
const port = Number(process.env['PORT'] ?? 3002);
await invoices.app.listen({ port, host: '127.0.0.1' });
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, async () => {
    await invoices.close();
    process.exit(0);
  });
}
