/** This API's two delivery headers: keyhook sends them (`delivery.headers`), the receiver reads them. */
export const INVOICE_WEBHOOK_HEADERS = {
  signature: 'x-invoices-signature',
  eventId: 'x-invoices-event-id',
} as const;
