import { randomBytes } from 'node:crypto';
import { and, desc, eq, sql } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { Invoice, InvoiceTable } from './invoice-table.js';
import type { InvoicesKeyhook } from './keyhook.js';

export interface NewInvoice {
  customer: string;
  amountCents: number;
}

export type PayOutcome =
  | { outcome: 'paid'; invoice: Invoice }
  | { outcome: 'already_paid'; invoice: Invoice }
  | { outcome: 'not_found' };

/**
 * An invoice's events have ids derived from it: keyhook keeps one event per id, so an invoice
 * can never have two `invoice.paid`, even if a bug got past the row check in `pay`.
 */
export const invoiceEventId = (invoiceId: string, what: 'created' | 'paid') => `evt_${invoiceId}_${what}`;

/** What `create` makes; any other id names no invoice, so routes answer 404 without a query. */
export const INVOICE_ID = /^inv_[0-9a-f]{24}$/;

const newInvoiceId = () => `inv_${randomBytes(12).toString('hex')}`;

/** The app's invoice rules: every write and its event share one Drizzle transaction. */
export class Invoices {
  constructor(
    private readonly db: NodePgDatabase,
    private readonly table: InvoiceTable,
    private readonly keyhook: InvoicesKeyhook,
  ) {}

  create(tenantId: string, input: NewInvoice): Promise<Invoice> {
    const invoice: Invoice = {
      id: newInvoiceId(),
      tenantId,
      customer: input.customer,
      amountCents: input.amountCents,
      status: 'draft',
      createdAt: new Date(),
      paidAt: null,
    };
    return this.db.transaction(async (tx) => {
      await tx.insert(this.table).values(invoice);
      await this.keyhook.events.publish(
        {
          tenantId,
          type: 'invoice.created',
          id: invoiceEventId(invoice.id, 'created'),
          data: { invoiceId: invoice.id, customer: invoice.customer, amountCents: invoice.amountCents },
        },
        { transaction: tx },
      );
      return invoice;
    });
  }

  pay(tenantId: string, id: string): Promise<PayOutcome> {
    return this.db.transaction(async (tx): Promise<PayOutcome> => {
      // The row lock orders concurrent payments: the second sees `paid` and publishes nothing.
      const [invoice] = await tx.select().from(this.table).where(this.one(tenantId, id)).for('update');
      if (invoice === undefined) return { outcome: 'not_found' };
      if (invoice.status === 'paid') return { outcome: 'already_paid', invoice };
      const paidAt = new Date();
      await tx
        .update(this.table)
        .set({ status: 'paid', paidAt })
        .where(and(this.one(tenantId, id), eq(this.table.status, 'draft')));
      await this.keyhook.events.publish(
        {
          tenantId,
          type: 'invoice.paid',
          id: invoiceEventId(id, 'paid'),
          data: {
            invoiceId: id,
            customer: invoice.customer,
            amountCents: invoice.amountCents,
            paidAt: paidAt.toISOString(),
          },
        },
        { transaction: tx },
      );
      return { outcome: 'paid', invoice: { ...invoice, status: 'paid', paidAt } };
    });
  }

  /** The tenant's invoice, or undefined: another tenant's id reads as unknown. */
  async get(tenantId: string, id: string): Promise<Invoice | undefined> {
    const [invoice] = await this.db.select().from(this.table).where(this.one(tenantId, id));
    return invoice;
  }

  /**
   * The tenant's newest invoices first; with `after`, those older than that invoice of the same
   * tenant (another tenant's id, or an unknown one, gives none).
   */
  list(tenantId: string, limit: number, after?: string): Promise<Invoice[]> {
    const { createdAt, id } = this.table;
    // The position of `after` is looked up in this tenant's invoices only.
    const olderThan =
      after === undefined
        ? undefined
        : sql`(${createdAt}, ${id}) < ${this.db.select({ createdAt, id }).from(this.table).where(this.one(tenantId, after))}`;
    return this.db
      .select()
      .from(this.table)
      .where(and(eq(this.table.tenantId, tenantId), olderThan))
      .orderBy(desc(createdAt), desc(id))
      .limit(limit);
  }

  private one(tenantId: string, id: string) {
    return and(eq(this.table.tenantId, tenantId), eq(this.table.id, id));
  }
}

/** An invoice as the API shows it: no tenant (the caller's own), instants as ISO 8601. */
export function toInvoiceView(invoice: Invoice) {
  return {
    id: invoice.id,
    customer: invoice.customer,
    amountCents: invoice.amountCents,
    status: invoice.status,
    createdAt: invoice.createdAt.toISOString(),
    paidAt: invoice.paidAt?.toISOString() ?? null,
  };
}
