/**
 * A real Prisma 7 client (generator `prisma-client`, driver adapter `@prisma/adapter-pg`) for the
 * tests, generated from schema.prisma at test time: never committed, never downloading anything.
 *
 * The generated code lives in generated/<hash of schema.prisma and the Prisma versions>/ (gitignored)
 * and is reused by later runs. It is generated into a scratch folder and renamed into place, so
 * vitest workers that call openPrisma at once never see a half-written client.
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PrismaPg } from '@prisma/adapter-pg';
import { generatePrismaClient as generate } from './generate.mjs';

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
  /** Each statement Prisma sends, with `log: [{ emit: 'event', level: 'query' }]`. */
  $on(event: 'query', listener: (event: { query: string }) => void): void;
}

interface GeneratedModule {
  PrismaClient: new (options: {
    adapter: PrismaPg;
    log?: { emit: 'event'; level: 'query' }[];
  }) => PrismaClientLike;
}

const here = path.dirname(fileURLToPath(import.meta.url));

let generating: Promise<string> | undefined;

/** The entry file of the generated client (generate.mjs, into generated/). Once per process. */
export function generatePrismaClient(): Promise<string> {
  generating ??= generate({ into: path.join(here, 'generated') }).catch((error: unknown) => {
    generating = undefined;
    throw error;
  });
  return generating;
}

/**
 * A Prisma client on `connectionString`. With `schema`, both the model queries (the adapter's
 * `schema` option) and raw SQL (the connections' search_path) go to that schema.
 */
export async function openPrisma(
  connectionString: string,
  schema?: string,
  { onQuery }: { onQuery?: (text: string) => void } = {},
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
  const prisma = new PrismaClient(
    onQuery ? { adapter, log: [{ emit: 'event', level: 'query' }] } : { adapter },
  );
  if (onQuery) prisma.$on('query', (event) => onQuery(event.query));
  return { prisma, close: () => prisma.$disconnect() };
}
