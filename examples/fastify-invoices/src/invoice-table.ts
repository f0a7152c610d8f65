import { withTransaction } from '@keyhook/store-postgres';
import type pg from 'pg';

export type InvoiceStatus = 'draft' | 'paid';

/** One row of the app's own `invoices` table. */
export interface Invoice {
  id: string;
  tenantId: string;
  customer: string;
  amountCents: number;
  status: InvoiceStatus;
  createdAt: Date;
  paidAt: Date | null;
}

/** A pool or a client inside a transaction: reads run on either. */
export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

interface InvoiceRow {
  id: string;
  tenant_id: string;
  customer: string;
  amount_cents: number;
  status: InvoiceStatus;
  created_at: Date;
  paid_at: Date | null;
}

// The name is spliced into SQL: the same rule as keyhook's store (unquoted-safe, not pg_*).
const SCHEMA_NAME = /^(?!pg_)[a-z_][a-z0-9_]{0,62}$/;

const COLUMNS = 'id, tenant_id, customer, amount_cents, status, created_at, paid_at';

/** The app's own table, in the app's own schema; keyhook's tables live in keyhook's schema. */
export class InvoiceTable {
  private readonly table: string;

  constructor(readonly schema: string) {
    if (!SCHEMA_NAME.test(schema)) {
      throw new TypeError(`invoices schema ${JSON.stringify(schema)} must match ${SCHEMA_NAME}`);
    }
    this.table = `"${schema}".invoices`;
  }

  /** Creates the schema and table if missing; safe to run at every start, from every instance. */
  async create(pool: pg.Pool): Promise<void> {
    await withTransaction(pool, async (client) => {
      // Two instances starting at once would race on CREATE SCHEMA IF NOT EXISTS: one waits here.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`invoices-app:${this.schema}`]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS "${this.schema}"`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${this.table} (
        id text PRIMARY KEY,
        tenant_id text NOT NULL,
        customer text NOT NULL,
        amount_cents integer NOT NULL CHECK (amount_cents > 0),
        status text NOT NULL CHECK (status IN ('draft', 'paid')),
        created_at timestamptz NOT NULL,
        paid_at timestamptz,
        CHECK ((status = 'paid') = (paid_at IS NOT NULL))
      )`);
      await client.query(
        `CREATE INDEX IF NOT EXISTS invoices_tenant_created_idx ON ${this.table} (tenant_id, created_at DESC, id DESC)`,
      );
    });
  }

  async insert(db: Queryable, invoice: Invoice): Promise<void> {
    await db.query(`INSERT INTO ${this.table} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
      invoice.id,
      invoice.tenantId,
      invoice.customer,
      invoice.amountCents,
      invoice.status,
      invoice.createdAt,
      invoice.paidAt,
    ]);
  }

  /** The tenant's invoice, or undefined: another tenant's id reads as unknown. */
  async find(
    db: Queryable,
    tenantId: string,
    id: string,
    { forUpdate = false } = {},
  ): Promise<Invoice | undefined> {
    const { rows } = await db.query<InvoiceRow>(
      `SELECT ${COLUMNS} FROM ${this.table} WHERE tenant_id = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
      [tenantId, id],
    );
    return rows[0] && toInvoice(rows[0]);
  }

  /**
   * The tenant's newest invoices first; with `after`, those older than that invoice of the same
   * tenant (another tenant's id, or an unknown one, gives none).
   */
  async list(db: Queryable, tenantId: string, limit: number, after?: string): Promise<Invoice[]> {
    const { rows } =
      after === undefined
        ? await db.query<InvoiceRow>(
            `SELECT ${COLUMNS} FROM ${this.table} WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
            [tenantId, limit],
          )
        : await db.query<InvoiceRow>(
            `SELECT ${COLUMNS} FROM ${this.table} WHERE tenant_id = $1
               AND (created_at, id) < (SELECT created_at, id FROM ${this.table} WHERE tenant_id = $1 AND id = $3)
             ORDER BY created_at DESC, id DESC LIMIT $2`,
            [tenantId, limit, after],
          );
    return rows.map(toInvoice);
  }

  async markPaid(db: Queryable, tenantId: string, id: string, paidAt: Date): Promise<void> {
    await db.query(
      `UPDATE ${this.table} SET status = 'paid', paid_at = $3 WHERE tenant_id = $1 AND id = $2 AND status = 'draft'`,
      [tenantId, id, paidAt],
    );
  }
}

function toInvoice(row: InvoiceRow): Invoice {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    customer: row.customer,
    amountCents: row.amount_cents,
    status: row.status,
    createdAt: row.created_at,
    paidAt: row.paid_at,
  };
}
