import type { Keyhook } from '@keyhook/core';
import { toStoreError } from '@keyhook/store-sqlite';
import type Database from 'better-sqlite3';
import { Serial, type SqlParam, type StagingDb, type Tx } from './db.js';

/**
 * The staging data on SQLite, on the connection the keyhook store was given (`database`), so
 * that an event joins the transaction of the state change that caused it (publishSync).
 * better-sqlite3 is synchronous: a transaction runs to its end without yielding to other
 * requests, and `Serial` keeps the async wrappers in call order, one transaction at a time.
 */
export function sqliteStagingDb(db: Database.Database, events: Keyhook['events']): StagingDb {
  const serial = new Serial();
  const statements = new Map<string, Database.Statement>();
  const prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  const attempt = <T>(action: () => T): Promise<T> => {
    try {
      return Promise.resolve(action());
    } catch (error) {
      return Promise.reject(toStoreError(error));
    }
  };
  const tx: Tx = {
    all: <T>(sql: string, params: readonly SqlParam[] = []) =>
      attempt(() => prepare(sql).all(...params) as T[]),
    get: <T>(sql: string, params: readonly SqlParam[] = []) =>
      attempt(() => prepare(sql).get(...params) as T | undefined),
    run: (sql: string, params: readonly SqlParam[] = []) =>
      attempt(() => prepare(sql).run(...params).changes),
    exec: (sql: string) => attempt(() => void db.exec(sql)),
    publish: async (input) => {
      if (!db.inTransaction) throw new Error('staging: an event is published inside a transaction only');
      events.publishSync(input, { transaction: db });
    },
  };
  return {
    dialect: 'sqlite',
    transaction: (work) =>
      serial.run(async () => {
        await attempt(() => db.exec('BEGIN IMMEDIATE'));
        try {
          const result = await work(tx);
          await attempt(() => db.exec('COMMIT'));
          return result;
        } catch (error) {
          if (db.inTransaction) db.exec('ROLLBACK');
          throw error;
        }
      }),
    read: (work) => serial.run(() => work(tx)),
    close: async () => {
      await serial.run(async () => {});
    },
  };
}
