import { keyhookFastify } from '@keyhook/adapter-fastify';
import type { EncryptionKeyInput, KeyhookOptions } from '@keyhook/core';
import { DEFAULT_PREFIX } from '@keyhook/core/http';
import { createPostgresStore, guardPool, type PostgresStore } from '@keyhook/store-postgres';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import pg from 'pg';
import { registerErrorReplies } from './error-replies.js';
import { invoiceRoutes, registerInvoiceRoutes } from './invoice-routes.js';
import { createInvoiceTable, type InvoiceTable, invoiceTable } from './invoice-table.js';
import { Invoices } from './invoices.js';
import { createInvoicesKeyhook, type InvoicesKeyhook } from './keyhook.js';
import { invoicesApiDocument, OPENAPI_PATH } from './openapi.js';

export { type Invoice, type InvoiceStatus, type InvoiceTable, invoiceTable } from './invoice-table.js';
export { Invoices, invoiceEventId, toInvoiceView } from './invoices.js';
export {
  createInvoicesKeyhook,
  type InvoiceEvents,
  type InvoicesKeyhook,
  invoiceCreatedData,
  invoicePaidData,
} from './keyhook.js';
export { INVOICE_WEBHOOK_HEADERS } from './webhook-headers.js';

export interface InvoicesAppOptions {
  /** `postgres://…`: one database for the app's table and keyhook's. */
  databaseUrl: string;
  /** The schema of the app's own `invoices` table. Default `invoices`. */
  schema?: string;
  /** The schema keyhook's store keeps its tables in. Default `keyhook`. */
  keyhookSchema?: string;
  /** 32 bytes, or their base64 (`generateEncryptionKey()`). Required: without it the build rejects. */
  encryptionKey?: EncryptionKeyInput | undefined;
  /** The HS256 secret the admin portal signs its JWTs with (at least 32 bytes). */
  adminSecret: string;
  /** `development` allows http:// and private webhook URLs. Default from NODE_ENV, as keyhook's. */
  mode?: KeyhookOptions['mode'];
  /** Fastify's `logger`: `false` (default) for silence. */
  logger?: FastifyServerOptions['logger'];
  /** Connections in the app's pool, shared with keyhook's store. Default 10. */
  poolSize?: number;
}

export interface InvoicesApp {
  app: FastifyInstance;
  keyhook: InvoicesKeyhook;
  /** The app's pool; keyhook's store runs on it too, so one client can hold both in a transaction. */
  pool: pg.Pool;
  /** Drizzle on `pool`: the app's reads, writes and transactions. */
  db: NodePgDatabase;
  /** The app's `invoices` table, as Drizzle sees it. */
  table: InvoiceTable;
  invoices: Invoices;
  /** Every route the app registered (method and URL), HEAD included. */
  routes: readonly { method: string; url: string }[];
  /** Stops taking requests, stops the delivery worker (attempts in flight finish), closes the store and the pool. */
  close(): Promise<void>;
}

/**
 * The invoicing app with keyhook embedded. What embedding added:
 * 1. `createInvoicesKeyhook(store, …)`: keyhook with this app's scopes, events and header names;
 * 2. `app.register(keyhookFastify, { keyhook })`: keyhook's admin routes at `/api/v1`;
 * 3. `requireScope(keyhook, …)` in front of each invoice route;
 * 4. `keyhook.events.publish(…, { transaction: tx })` inside the app's own Drizzle transactions;
 * 5. one OpenAPI document for all of it, and a delivery worker in this process.
 */
export async function buildInvoicesApp(options: InvoicesAppOptions): Promise<InvoicesApp> {
  const prefix = DEFAULT_PREFIX;
  const app = Fastify({ logger: options.logger ?? false });
  const registered: { method: string; url: string }[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) registered.push({ method, url: route.url });
  });
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: options.poolSize ?? 10,
    // An unreachable database fails a request in 5 s instead of hanging it (pg waits forever by default).
    connectionTimeoutMillis: 5000,
  });
  // A client dying, idle or checked out by Drizzle's transactions (which attach no listener), is
  // reported here; unheard, it would crash the process (docs/decisions.md §20.4).
  guardPool(pool, (error) => app.log.warn({ err: error }, 'PostgreSQL client failed'));
  const db = drizzle({ client: pool });
  let store: PostgresStore | undefined;
  let keyhook: InvoicesKeyhook | undefined;
  try {
    const table = invoiceTable(options.schema ?? 'invoices');
    await createInvoiceTable(db, table);
    store = await createPostgresStore({ pool, schema: options.keyhookSchema ?? 'keyhook' });
    keyhook = createInvoicesKeyhook(store, {
      adminSecret: options.adminSecret,
      encryptionKey: options.encryptionKey,
      mode: options.mode,
      logger: app.log,
    });
    const invoices = new Invoices(db, table, keyhook);
    const routes = invoiceRoutes(invoices);

    registerErrorReplies(app);
    await app.register(keyhookFastify, { keyhook, prefix });
    registerInvoiceRoutes(app, keyhook, routes, prefix);
    // Built once: the document only changes with the code.
    const document = JSON.stringify(invoicesApiDocument(keyhook, routes, prefix));
    app.get(`${prefix}${OPENAPI_PATH}`, async (_request, reply) =>
      reply.header('content-type', 'application/json; charset=utf-8').send(document),
    );
    await app.ready();
    keyhook.createWorker().start();
    return {
      app,
      keyhook,
      pool,
      db,
      table,
      invoices,
      routes: registered,
      close: closeOnce(app, keyhook, store, pool),
    };
  } catch (error) {
    await app.close().catch(() => {});
    await keyhook?.close().catch(() => {});
    await store?.close().catch(() => {});
    await pool.end().catch(() => {});
    throw error;
  }
}

function closeOnce(
  app: FastifyInstance,
  keyhook: InvoicesKeyhook,
  store: PostgresStore,
  pool: pg.Pool,
): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= (async () => {
      await app.close(); // requests in flight finish first
      await keyhook.close(); // stops the worker; attempts in flight finish and are recorded
      await store.close(); // leaves the pool open: it is the app's
      await pool.end();
    })();
    return closing;
  };
}
