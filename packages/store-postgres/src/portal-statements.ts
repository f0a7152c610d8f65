import { PORTAL_SESSION_COLUMNS } from './portal-row.js';
import { quoteSchema } from './schema-name.js';

/**
 * Every statement the store runs for the portal, built once per schema: its sessions
 * (keyhook_portal_sessions, migration 0012) and its webhooks' recent attempt counts.
 */
export interface PortalStatements {
  insertSession: string;
  exchangeLink: string;
  sessionByLink: string;
  sessionByHash: string;
  revokeSession: string;
  revokeTenantSessions: string;
  countRecentAttempts: string;
}

export function portalStatements(schema: string): PortalStatements {
  const table = `${quoteSchema(schema)}.keyhook_portal_sessions`;
  return {
    // The purge (every tenant's, through the expires_at index) and the insert in one statement,
    // so one round trip; the DELETE does not see the row the INSERT writes.
    insertSession: `WITH purged AS (DELETE FROM ${table} WHERE expires_at < $11)
      INSERT INTO ${table} (${PORTAL_SESSION_COLUMNS})
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,

    // The link's one exchange. Concurrent exchanges wait on the row lock; once the first commits,
    // each of the others re-checks the WHERE on the row as it now is, finds it exchanged, and
    // writes nothing.
    exchangeLink: `UPDATE ${table} SET session_hash = $2, exchanged_at = $3
      WHERE link_hash = $1 AND exchanged_at IS NULL AND revoked_at IS NULL AND expires_at > $3
      RETURNING ${PORTAL_SESSION_COLUMNS}`,

    sessionByLink: `SELECT ${PORTAL_SESSION_COLUMNS} FROM ${table} WHERE link_hash = $1`,

    sessionByHash: `SELECT ${PORTAL_SESSION_COLUMNS} FROM ${table} WHERE session_hash = $1`,

    // A concurrent revoke holding the row lock makes this re-check revoked_at on the new row and skip it.
    revokeSession: `UPDATE ${table} SET revoked_at = $3
      WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL`,

    revokeTenantSessions: `UPDATE ${table} SET revoked_at = $2 WHERE tenant_id = $1 AND revoked_at IS NULL`,

    // The tenant's attempts in the window, from the index of migration 0012, each one's webhook
    // read from its delivery by primary key: the work is the window's rows, with statistics or
    // without (docs/decisions.md §8.14). The webhook is a scalar subquery, not a join: analysed,
    // a join hashed all 20,000 deliveries of two tenants to count 200 attempts (measured on
    // the rows of test/portal-storage.test.ts). Success is core's DELIVERY_RULES.success, bound as
    // $3 and $4; everything else, no answer included, is a failure. webhook_id is COLLATE "C", so
    // the order is JavaScript's.
    countRecentAttempts: `SELECT webhook_id AS "webhookId",
        (count(*) FILTER (WHERE status_code BETWEEN $3 AND $4))::integer AS succeeded,
        (count(*) - count(*) FILTER (WHERE status_code BETWEEN $3 AND $4))::integer AS failed
      FROM (
        SELECT a.status_code,
          (SELECT d.webhook_id FROM ${quoteSchema(schema)}.keyhook_deliveries AS d
            WHERE d.id = a.delivery_id) AS webhook_id
        FROM ${quoteSchema(schema)}.keyhook_delivery_attempts AS a
        WHERE a.tenant_id = $1 AND a.started_at >= $2
      ) AS windowed
      GROUP BY webhook_id
      ORDER BY webhook_id`,
  };
}
