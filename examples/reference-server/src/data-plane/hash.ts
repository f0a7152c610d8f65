import { createHash } from 'node:crypto';
import { canonicalJson } from '@keyhook/core/http';
import type { ItemFields } from './model.js';

/**
 * The item's content hash (data-plane.md §4.2: it decides `unchanged`): SHA-256 over the
 * canonical JSON of every field the caller sends, so a new title or a reordered metadata object
 * with other values is a change, and the same fields in another key order are not.
 */
export function contentHash(fields: ItemFields): string {
  return createHash('sha256')
    .update(
      canonicalJson({
        title: fields.title,
        content: fields.content,
        url: fields.url,
        metadata: fields.metadata,
      }),
    )
    .digest('hex');
}
