// The Prisma 7 client of schema.prisma, generated offline: for the data-layer tests (client.ts)
// and benchmarks/data-layers.mjs. Plain JavaScript, so the benchmark runs it without a TypeScript
// loader.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeRequire = createRequire(import.meta.url);
const execFileAsync = promisify(execFile);

/**
 * Generates the client of schema.prisma into `into`/<hash of the schema and the Prisma versions>/
 * unless it is there already, and resolves with its entry file. It is generated in a scratch
 * folder beside it and renamed into place, so processes that generate at once never see a
 * half-written client. `javascript`: the `prisma-client` generator writes TypeScript; with it, each
 * file is also transpiled to JavaScript beside it, for a process without a TypeScript loader.
 */
export async function generatePrismaClient({ into, javascript = false }) {
  const schema = await readFile(path.join(here, 'schema.prisma'), 'utf8');
  const versionOf = (name) => nodeRequire(`${name}/package.json`).version;
  const key = createHash('sha256')
    .update([versionOf('prisma'), versionOf('@prisma/client'), schema, javascript].join('\0'))
    .digest('hex')
    .slice(0, 16);
  const target = path.join(into, key);
  const entry = path.join(target, javascript ? 'client.js' : 'client.ts');
  if (existsSync(entry)) return entry;

  await removeAbandonedScratch(into);
  const scratch = path.join(into, `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
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
    const client = path.join(scratch, 'generated', 'client');
    if (javascript) await transpile(client);
    try {
      await rename(client, target);
    } catch (error) {
      // Another process renamed its copy into place first.
      if (!existsSync(entry)) throw error;
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return entry;
}

/** Each .ts file of `dir` as JavaScript beside it, whose imports of @prisma/client resolve from here. */
async function transpile(dir) {
  const { default: ts } = await import('typescript');
  for (const file of await readdir(dir, { recursive: true })) {
    if (!file.endsWith('.ts')) continue;
    const source = await readFile(path.join(dir, file), 'utf8');
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    await writeFile(path.join(dir, file.replace(/\.ts$/, '.js')), outputText);
  }
  await writeFile(path.join(dir, 'package.json'), '{ "type": "module" }\n');
  const modules = path.resolve(path.dirname(nodeRequire.resolve('@prisma/client/package.json')), '../..');
  await symlink(modules, path.join(dir, 'node_modules'), 'dir');
}

/** Removes the scratch folders of processes that died while generating (a test timed out, say). */
async function removeAbandonedScratch(into) {
  const names = await readdir(into).catch(() => []);
  for (const name of names) {
    const pid = /^\.tmp-(\d+)-/.exec(name)?.[1];
    if (pid === undefined || isAlive(Number(pid))) continue;
    await rm(path.join(into, name), { recursive: true, force: true });
  }
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}
