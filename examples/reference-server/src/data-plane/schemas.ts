import { storableText } from '@keyhook/core/http';
import { z } from 'zod';

/** data-plane.md §4.2: a key is the caller's, 1–256 URL-safe characters (RFC 3986 unreserved). */
export const ITEM_KEY = /^[A-Za-z0-9._~-]{1,256}$/;
/** data-plane.md §3.3 limits: one item's content, and a whole data-plane body. */
export const MAX_CONTENT_BYTES = 1024 * 1024;
export const MAX_DATA_BODY_BYTES = 10 * 1024 * 1024;
export const MAX_BATCH_OPERATIONS = 1000;

const name = storableText().trim().min(1).max(200);
const description = storableText().max(2000).nullable();

export const sourceCreateSchema = z
  .strictObject({ name, description: description.optional() })
  .meta({ description: 'A new source: a named collection of staged items.' });

export const sourcePatchSchema = z
  .strictObject({ name: name.optional(), description: description.optional() })
  .refine((patch) => patch.name !== undefined || patch.description !== undefined, {
    message: 'name or description is required',
  });

export const itemKeySchema = z
  .string()
  .regex(ITEM_KEY, 'must be 1–256 of A–Z a–z 0–9 . _ ~ -')
  .meta({ description: "The caller's key for the item, unique in its source." });

export const itemFieldsSchema = z
  .strictObject({
    title: storableText().max(1000).nullable().optional(),
    content: storableText(),
    url: storableText(z.url({ protocol: /^https?$/ }).max(2048))
      .nullable()
      .optional(),
    metadata: z.record(z.string(), z.unknown()).nullable().optional(),
  })
  .meta({ description: `content: at most ${MAX_CONTENT_BYTES} bytes as UTF-8.` });

export const keyedItemSchema = itemFieldsSchema.extend({ key: itemKeySchema });

/** The envelope only: each operation is checked on its own, so one bad item fails alone. */
export const batchSchema = z
  .strictObject({
    upsert: z.array(z.unknown()).optional(),
    delete: z.array(z.unknown()).optional(),
  })
  .refine((batch) => (batch.upsert?.length ?? 0) + (batch.delete?.length ?? 0) > 0, {
    message: 'upsert or delete must hold at least one operation',
  })
  .refine((batch) => (batch.upsert?.length ?? 0) + (batch.delete?.length ?? 0) <= MAX_BATCH_OPERATIONS, {
    message: `at most ${MAX_BATCH_OPERATIONS} operations`,
  })
  .meta({
    description: `Up to ${MAX_BATCH_OPERATIONS} operations: upsert holds KeyedItem objects, delete holds ItemKey strings.`,
  });

/**
 * The batch body as the document shows it: the envelope, with each operation's schema (the
 * ones each upsert and delete is checked with, one by one, by the handler).
 */
export const batchDocumentSchema = z
  .strictObject({
    upsert: z.array(keyedItemSchema).optional(),
    delete: z.array(itemKeySchema).optional(),
  })
  .meta({
    description: `1–${MAX_BATCH_OPERATIONS} operations in all. An operation that is not valid fails alone, in its result.`,
  });

export const snapshotSchema = z
  .strictObject({ items: z.array(keyedItemSchema) })
  .meta({ description: 'The whole staged set: items not listed are removed.' });

export const runStartSchema = z.strictObject({ expectedBaseGeneration: z.int().min(0).optional() }).meta({
  description: 'expectedBaseGeneration: the run conflicts unless this is the active generation.',
});

export const CHANGES = ['added', 'updated', 'removed', 'unchanged'] as const;
export const changeFilterSchema = z.enum(CHANGES);
