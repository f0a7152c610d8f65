import { KEY_COLUMNS } from './key-row.js';
import { quoteSchema } from './schema-name.js';

/** Every statement the store runs on api_keys, built once per schema. */
export interface KeyStatements {
  insert: string;
  findByCredential: string;
  get: string;
  list: string;
  listBefore: string;
  rotate: string;
  revoke: string;
  update: string;
  touch: string;
}

export function keyStatements(schema: string): KeyStatements {
  const table = `${quoteSchema(schema)}.api_keys`;
  return {
    // Any unique clash (lookup id, or id) writes nothing; concurrent inserts wait on the index, one wins.
    insert: `INSERT INTO ${table} (${KEY_COLUMNS})
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
      ON CONFLICT DO NOTHING`,

    // Lookup id and hash together: an unknown id and a wrong secret are the same index miss.
    findByCredential: `SELECT ${KEY_COLUMNS} FROM ${table} WHERE key_lookup = $1 AND key_hash = $2`,

    get: `SELECT ${KEY_COLUMNS} FROM ${table} WHERE tenant_id = $1 AND id = $2`,

    list: `SELECT ${KEY_COLUMNS} FROM ${table}
      WHERE tenant_id = $1 ORDER BY id DESC LIMIT $2`,

    listBefore: `SELECT ${KEY_COLUMNS} FROM ${table}
      WHERE tenant_id = $1 AND id < $3 ORDER BY id DESC LIMIT $2`,

    // Compare-and-set: a concurrent rotation holding the row lock makes this re-check the new row and miss.
    rotate: `UPDATE ${table} SET key_hash = $4
      WHERE tenant_id = $1 AND id = $2 AND status = 'active' AND key_hash = $3
      RETURNING ${KEY_COLUMNS}`,

    // The row lock and the CASE see the latest committed row, so a racing revoke's revoked_at is kept
    // and the row returned is the row as it now is (a fallback SELECT would read the older snapshot).
    revoke: `UPDATE ${table}
      SET status = 'revoked',
          revoked_at = CASE WHEN status = 'active' THEN $3::timestamptz ELSE revoked_at END
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${KEY_COLUMNS}`,

    // $3/$5 say which fields the call changes: a field left out keeps its value. The locked read
    // of the old limit tells whether the limit changed, so the caller knows whether the trigger
    // of migration 0007 announced it.
    update: `WITH old AS (
        SELECT rate_limit, rate_limit_window FROM ${table} WHERE tenant_id = $1 AND id = $2 FOR UPDATE
      )
      UPDATE ${table} AS k
      SET name = CASE WHEN $3::boolean THEN $4::text ELSE k.name END,
          rate_limit = CASE WHEN $5::boolean THEN $6::integer ELSE k.rate_limit END,
          rate_limit_window = CASE WHEN $5::boolean THEN $7::integer ELSE k.rate_limit_window END,
          rate_limit_by_host = CASE WHEN $5::boolean THEN $8::boolean ELSE k.rate_limit_by_host END
      FROM old
      WHERE k.tenant_id = $1 AND k.id = $2
      RETURNING ${KEY_COLUMNS.split(', ')
        .map((column) => `k.${column}`)
        .join(', ')},
        (old.rate_limit IS DISTINCT FROM k.rate_limit
         OR old.rate_limit_window IS DISTINCT FROM k.rate_limit_window) AS limit_changed`,

    // A concurrent toucher holding the row lock makes this re-check the new last_used_at and miss.
    touch: `UPDATE ${table} SET last_used_at = $2
      WHERE id = $1
        AND (last_used_at IS NULL
             OR last_used_at <= $2::timestamptz - $3::double precision * interval '1 millisecond')`,
  };
}
