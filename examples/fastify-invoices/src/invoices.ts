import { randomBytes } from 'node:crypto';
import { withTransaction } from '@keyhook/store-postgres';
import type pg from 'pg';
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

/** The app's invoice rules: every write and its event share one transaction. */
export class Invoices {
  constructor(
    private readonly pool: pg.Pool,
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
    return withTransaction(this.pool, async (client) => {
      await this.table.insert(client, invoice);
      await this.keyhook.events.publish(
        {
          tenantId,
          type: 'invoice.created',
          id: invoiceEventId(invoice.id, 'created'),
          data: { invoiceId: invoice.id, customer: invoice.customer, amountCents: invoice.amountCents },
        },
        { transaction: client },
      );
      return invoice;
    });
  }

  pay(tenantId: string, id: string): Promise<PayOutcome> {
    return withTransaction(this.pool, async (client): Promise<PayOutcome> => {
      // The row lock orders concurrent payments: the second sees `paid` and publishes nothing.
      const invoice = await this.table.find(client, tenantId, id, { forUpdate: true });
      if (invoice === undefined) return { outcome: 'not_found' };
      if (invoice.status === 'paid') return { outcome: 'already_paid', invoice };
      const paidAt = new Date();
      await this.table.markPaid(client, tenantId, id, paidAt);
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
        { transaction: client },
      );
      return { outcome: 'paid', invoice: { ...invoice, status: 'paid', paidAt } };
    });
  }

  get(tenantId: string, id: string): Promise<Invoice | undefined> {
    return this.table.find(this.pool, tenantId, id);
  }

  /** Newest first, from just after the invoice `after` when given. */
  list(tenantId: string, limit: number, after?: string): Promise<Invoice[]> {
    return this.table.list(this.pool, tenantId, limit, after);
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
