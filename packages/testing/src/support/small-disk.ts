import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isKeyhookError } from '@keyhook/core';
import type { EventRecord, Store } from '@keyhook/core/store';
import { inCi } from './ci.js';

/** A tmpfs of a few MiB that a test fills up and frees again. */
export interface SmallDisk {
  /** The mount point; the filler file lives here, beside what the test puts in `dataDir`. */
  readonly root: string;
  /** An empty folder on the disk for the database, owned by `owner` when given. */
  readonly dataDir: string;
  /** Bytes a file may still take. */
  free(): number;
  /** Writes a filler file that leaves `leaveBytes` free (or less, to the filesystem's block). */
  fill(leaveBytes: number): void;
  /** Deletes the filler file: the space it took is free again. */
  unfill(): void;
  /** Unmounts (lazily if a file is still open on it) and removes the mount point. */
  remove(): void;
}

export interface SmallDiskOptions {
  sizeMiB: number;
  /** Who owns `dataDir` (mode 0700): the postgres user for a tablespace. */
  owner?: { uid: number; gid: number };
}

/**
 * Mounts a tmpfs of `sizeMiB` (root only). Null, with a warning saying why, when it cannot be
 * mounted here; under CI it throws instead, so the full-disk tests never skip there.
 */
export function mountSmallDisk(label: string, options: SmallDiskOptions): SmallDisk | null {
  const root = mkdtempSync(path.join(tmpdir(), `keyhook-${label}-`));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${options.sizeMiB}m,mode=0755`, 'tmpfs', root], {
      stdio: 'pipe',
    });
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    const reason = `cannot mount a ${options.sizeMiB} MiB tmpfs (needs root): ${(error as Error).message.trim()}`;
    if (inCi()) throw new Error(`CI: ${reason}; the full-disk tests must run in CI.`);
    console.warn(`${reason}: skipping the full-disk tests.`);
    return null;
  }
  const dataDir = path.join(root, 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  if (options.owner) chownSync(dataDir, options.owner.uid, options.owner.gid);
  const filler = path.join(root, 'filler');
  const free = () => {
    const stats = statfsSync(root);
    return stats.bavail * stats.bsize;
  };
  return {
    root,
    dataDir,
    free,
    fill: (leaveBytes) => writeFileSync(filler, Buffer.alloc(Math.max(0, free() - leaveBytes))),
    unfill: () => rmSync(filler, { force: true }),
    remove: () => {
      try {
        execFileSync('umount', [root], { stdio: 'pipe' });
      } catch {
        // A file still open on it (a server that did not close): detach it now, freed at its close.
        execFileSync('umount', ['-l', root], { stdio: 'pipe' });
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** A Postgres tablespace on a small disk: tables created with `options` on their connection land there. */
export interface SmallTablespace {
  readonly disk: SmallDisk;
  readonly name: string;
  /** libpq `options` that make new tables and indexes land in the tablespace. */
  readonly options: string;
  /** Drops the tablespace (what was in it must be dropped first) and removes the disk. */
  remove(): Promise<void>;
}

/**
 * A tablespace on a small disk owned by the postgres user, for a server on this machine. `query`
 * runs one statement as a superuser, outside a transaction (CREATE TABLESPACE refuses one). Null
 * where mountSmallDisk is (it throws under CI the same way).
 */
export async function smallTablespace(
  label: string,
  sizeMiB: number,
  query: (sql: string) => Promise<unknown>,
): Promise<SmallTablespace | null> {
  let owner: { uid: number; gid: number };
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { stdio: 'pipe' }).toString());
    owner = { uid: id('-u'), gid: id('-g') };
  } catch {
    const reason = 'no postgres user here to own a tablespace';
    if (inCi()) throw new Error(`CI: ${reason}; the full-disk tests must run in CI.`);
    console.warn(`${reason}: skipping the Postgres full-disk tests.`);
    return null;
  }
  const disk = mountSmallDisk(label, { sizeMiB, owner });
  if (disk === null) return null;
  const name =
    `keyhook_${label.replace(/\W/g, '_')}_${path.basename(disk.root).replace(/\W/g, '_')}`.toLowerCase();
  try {
    await query(`CREATE TABLESPACE "${name}" LOCATION '${disk.dataDir}'`);
  } catch (error) {
    disk.remove();
    throw error;
  }
  return {
    disk,
    name,
    options: `-c default_tablespace=${name}`,
    remove: async () => {
      try {
        await query(`DROP TABLESPACE IF EXISTS "${name}"`);
      } finally {
        disk.remove();
      }
    },
  };
}

/**
 * amcheck over every btree of `schema`, each with its table's rows (`heapallindexed`): reads every
 * row and fails on a row missing from an index or an index page out of order. Installs amcheck in
 * `schema`, so dropping the schema removes it. Returns how many indexes it checked.
 */
export async function checkPostgresIndexes(
  query: (sql: string, values?: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>,
  schema: string,
): Promise<number> {
  await query(`CREATE EXTENSION IF NOT EXISTS amcheck SCHEMA "${schema}"`);
  const { rows } = await query(
    `SELECT c.oid::regclass::text AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND a.amname = 'btree'`,
    [schema],
  );
  for (const { name } of rows) await query(`SELECT "${schema}".bt_index_check($1::regclass, true)`, [name]);
  return rows.length;
}

/** What `fillingPublisher` has seen: the ids accepted and refused, and the refusals' causes' codes. */
export interface FillingPublisher {
  readonly accepted: string[];
  readonly refused: string[];
  readonly causes: Set<string>;
  /** Publishes one group at once; resolves with how many were refused. */
  publishGroup(): Promise<number>;
}

/**
 * Publishes groups of `group` events of about `padBytes` each, for a store whose disk fills up:
 * each publish is accepted (`published`) or refused with `unavailable`; anything else throws.
 */
export function fillingPublisher(
  store: Pick<Store, 'publishEvent'>,
  tenantId: string,
  options: { group: number; padBytes: number; createdAt: Date },
): FillingPublisher {
  const pad = 'x'.repeat(options.padBytes);
  const accepted: string[] = [];
  const refused: string[] = [];
  const causes = new Set<string>();
  let next = 0;
  const eventOf = (id: string): EventRecord => ({
    id,
    tenantId,
    type: 'run.completed',
    payload: JSON.stringify({ id, pad }),
    createdAt: options.createdAt,
    traceContext: null,
  });
  return {
    accepted,
    refused,
    causes,
    async publishGroup() {
      const ids = Array.from({ length: options.group }, () => `evt_full_${String(next++).padStart(5, '0')}`);
      const outcomes = await Promise.allSettled(
        ids.map((id) => store.publishEvent(eventOf(id), () => `dlv_${id}`)),
      );
      outcomes.forEach((outcome, index) => {
        const id = ids[index]!;
        if (outcome.status === 'fulfilled') {
          if (outcome.value.outcome !== 'published') throw new Error(`${id}: ${outcome.value.outcome}`);
          accepted.push(id);
          return;
        }
        const error = outcome.reason;
        if (!isKeyhookError(error) || error.code !== 'unavailable') throw error;
        causes.add((error.cause as { code?: string } | undefined)?.code ?? String(error.cause));
        refused.push(id);
      });
      return outcomes.filter((outcome) => outcome.status === 'rejected').length;
    },
  };
}
