import {
  createKeyhook,
  type EncryptionKeyInput,
  type EventMapOf,
  type KeyhookOptions,
  type Logger,
} from '@keyhook/core';
import type { Store } from '@keyhook/core/store';
import { z } from 'zod';
import { INVOICE_WEBHOOK_HEADERS } from './webhook-headers.js';

/** What every invoice event carries. */
export const invoiceCreatedData = z.object({
  invoiceId: z.string(),
  customer: z.string(),
  amountCents: z.number().int(),
});

/** `invoice.paid` adds when: an ISO 8601 instant, as the invoice row has it. */
export const invoicePaidData = invoiceCreatedData.extend({ paidAt: z.iso.datetime() });

export interface InvoicesKeyhookOptions {
  /** The HS256 secret the admin portal signs its JWTs with (at least 32 bytes). */
  adminSecret: string;
  /** Required with Postgres: without it `createKeyhook` throws, naming `generateEncryptionKey()`. */
  encryptionKey: EncryptionKeyInput | undefined;
  mode?: KeyhookOptions['mode'];
  logger?: Logger;
}

/**
 * keyhook as this app configures it. Scopes and events are declared inline, so their names are
 * literal types: `requireScope` and `events.publish` take only these, and a typo does not compile.
 */
export function createInvoicesKeyhook(store: Store, options: InvoicesKeyhookOptions) {
  return createKeyhook({
    store,
    adminSession: { secret: options.adminSecret },
    encryptionKey: options.encryptionKey,
    mode: options.mode,
    logger: options.logger,
    scopes: [
      { name: 'invoices:read', description: 'List and read invoices' },
      { name: 'invoices:write', description: 'Create and pay invoices' },
    ],
    eventCatalog: {
      'invoice.created': { description: 'A draft invoice was created.', data: invoiceCreatedData },
      'invoice.paid': { description: 'An invoice was paid in full.', data: invoicePaidData },
    },
    delivery: { headers: INVOICE_WEBHOOK_HEADERS },
  });
}

export type InvoicesKeyhook = ReturnType<typeof createInvoicesKeyhook>;

/** Event type → `data`, for receivers: `verify<InvoiceEvents>(…)` narrows `data` by `type`. */
export type InvoiceEvents = EventMapOf<InvoicesKeyhook>;
