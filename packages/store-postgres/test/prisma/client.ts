/**
 * A real Prisma 7 client (generator `prisma-client`, driver adapter `@prisma/adapter-pg`) for the
 * tests, generated from schema.prisma at test time: never committed, never downloading anything.
 *
 * The generated code lives in generated/<hash of schema.prisma and the Prisma versions>/ (gitignored)
 * and is reused by later runs. It is generated into a scratch folder and renamed into place, so
 * vitest workers that call openPrisma at once never see a half-written client.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { PrismaPg } from '@prisma/adapter-pg';

/** A row of prisma_invoices, the one model of schema.prisma. */
export interface Invoice {
  id: string;
  status: string;
}

/** What the tests use of the generated `invoice` delegate. */
export interface InvoiceDelegate {
  create(args: { data: Invoice }): Promise<Invoice>;
  findUnique(args: { where: { id: string } }): Promise<Invoice | null>;
  findMany(args?: { where?: Partial<Invoice>; orderBy?: { id: 'asc' | 'desc' } }): Promise<Invoice[]>;
  update(args: { where: { id: string }; data: Partial<Invoice> }): Promise<Invoice>;
}

/**
 * The client handed to `$transaction(async (tx) => …)`. Typed by hand: the generated types do not
 * exist in a fresh checkout, where `tsc` must pass too.
 */
export interface PrismaTransactionClient {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
  invoice: InvoiceDelegate;
}

/** The top-level generated `PrismaClient`, as far as the tests use it. */
export interface PrismaClientLike extends PrismaTransactionClient {
  $transaction<R>(
    fn: (tx: PrismaTransactionClient) => Promise<R>,
    options?: {
      maxWait?: number;
      timeout?: number;
      isolationLevel?: 'ReadUncommitted' | 'ReadCommitted' | 'RepeatableRead' | 'Serializable';
    },
  ): Promise<R>;
  $connect(): Promise<void>;
  $disconnect(): Promise<void>;
}

interface GeneratedModule {
  PrismaClient: new (options: { adapter: PrismaPg }) => PrismaClientLike;
}

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeRequire = createRequire(import.meta.url);
const execFileAsync = promisify(execFile);

let generating: Promise<string> | undefined;

/**
 * The entry file of the generated client, running `prisma generate` first unless this checkout
 * already has it. Once per process.
 */
export function generatePrismaClient(): Promise<string> {
  generating ??= generate().catch((error: unknown) => {
    generating = undefined;
    throw error;
  });
  return generating;
}

async function generate(): Promise<string> {
  const schema = await readFile(path.join(here, 'schema.prisma'), 'utf8');
  const versionOf = (name: string): string =>
    (nodeRequire(`${name}/package.json`) as { version: string }).version;
  const key = createHash('sha256')
    .update(`${versionOf('prisma')}\0${versionOf('@prisma/client')}\0${schema}`)
    .digest('hex')
    .slice(0, 16);
  const target = path.join(here, 'generated', key);
  const entry = path.join(target, 'client.ts');
  if (existsSync(entry)) return entry;

  await removeAbandonedScratch();
  const scratch = path.join(here, 'generated', `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  await mkdir(scratch, { recursive: true });
  try {
    // The schema's `output = "./generated/client"` is relative to this copy: scratch/generated/client.
    await writeFile(path.join(scratch, 'schema.prisma'), schema);
    const cli = path.join(path.dirname(nodeRequire.resolve('prisma/package.json')), 'build', 'index.js');
    await execFileAsync(process.execPath, [cli, 'generate', '--schema', 'schema.prisma', '--no-hints'], {
      cwd: scratch,
      timeout: 120_000,
      env: {
        ...process.env,
        // `generate` only checks that a schema engine exists (it never runs it); without this it
        // downloads one from binaries.prisma.sh.
        PRISMA_SCHEMA_ENGINE_BINARY: existsSync('/bin/true') ? '/bin/true' : process.execPath,
        // No telemetry request and no update check: no network at all.
        CHECKPOINT_DISABLE: '1',
        PRISMA_HIDE_UPDATE_MESSAGE: '1',
      },
    });
    try {
      await rename(path.join(scratch, 'generated', 'client'), target);
    } catch (error) {
      // Another worker renamed its copy into place first.
      if (!existsSync(entry)) throw error;
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return entry;
}

/** Removes the scratch folders of processes that died while generating (a test timed out, say). */
async function removeAbandonedScratch(): Promise<void> {
  const names = await readdir(path.join(here, 'generated')).catch(() => []);
  for (const name of names) {
    const pid = /^\.tmp-(\d+)-/.exec(name)?.[1];
    if (pid === undefined || isAlive(Number(pid))) continue;
    await rm(path.join(here, 'generated', name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A Prisma client on `connectionString`. With `schema`, both the model queries (the adapter's
 * `schema` option) and raw SQL (the connections' search_path) go to that schema.
 */
export async function openPrisma(
  connectionString: string,
  schema?: string,
): Promise<{ prisma: PrismaClientLike; close(): Promise<void> }> {
  if (schema !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(schema)) {
    throw new Error(`openPrisma: not a plain schema name: ${schema}`);
  }
  const entry = await generatePrismaClient();
  const { PrismaClient } = (await import(/* @vite-ignore */ pathToFileURL(entry).href)) as GeneratedModule;
  const adapter =
    schema === undefined
      ? new PrismaPg({ connectionString })
      : new PrismaPg({ connectionString, options: `-c search_path="${schema}"` }, { schema });
  const prisma = new PrismaClient({ adapter });
  return { prisma, close: () => prisma.$disconnect() };
}
