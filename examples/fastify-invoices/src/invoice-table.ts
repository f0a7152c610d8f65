import { sql } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { getTableConfig, integer, pgSchema, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * The app's own `invoices` table in the app's own schema, as Drizzle reads and writes it;
 * keyhook's tables live in keyhook's schema. `createInvoiceTable` holds its constraints and index.
 */
export function invoiceTable(schema: string) {
  return pgSchema(schema).table('invoices', {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    customer: text('customer').notNull(),
    amountCents: integer('amount_cents').notNull(),
    status: text('status', { enum: ['draft', 'paid'] }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    paidAt: timestamp('paid_at', { withTimezone: true }),
  });
}

export type InvoiceTable = ReturnType<typeof invoiceTable>;

/** One row of the app's own `invoices` table. */
export type Invoice = InvoiceTable['$inferSelect'];

export type InvoiceStatus = Invoice['status'];

/** Creates the schema and table if missing; safe to run at every start, from every instance. */
export async function createInvoiceTable(db: NodePgDatabase, table: InvoiceTable): Promise<void> {
  const schema = getTableConfig(table).schema!;
  await db.transaction(async (tx) => {
    // Two instances starting at once would race on CREATE SCHEMA IF NOT EXISTS: one waits here.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`invoices-app:${schema}`}))`);
    await tx.execute(sql`CREATE SCHEMA IF NOT EXISTS ${sql.identifier(schema)}`);
    await tx.execute(sql`CREATE TABLE IF NOT EXISTS ${table} (
      id text PRIMARY KEY,
      tenant_id text NOT NULL,
      customer text NOT NULL,
      amount_cents integer NOT NULL CHECK (amount_cents > 0),
      status text NOT NULL CHECK (status IN ('draft', 'paid')),
      created_at timestamptz NOT NULL,
      paid_at timestamptz,
      CHECK ((status = 'paid') = (paid_at IS NOT NULL))
    )`);
    await tx.execute(
      sql`CREATE INDEX IF NOT EXISTS invoices_tenant_created_idx ON ${table} (tenant_id, created_at DESC, id DESC)`,
    );
  });
}
