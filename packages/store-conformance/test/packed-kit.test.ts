import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { packedApp } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const repository = fileURLToPath(new URL('../../..', import.meta.url));
const vitestVersion = (
  JSON.parse(readFileSync(join(repository, 'node_modules/vitest/package.json'), 'utf8')) as {
    version: string;
  }
).version;

/*
 * The kit as a store author meets it: core and the kit packed, installed with Vitest into an app
 * outside the repository, and run there against a store that lives in that app. The store keeps
 * what every keyhook needs, on a memory store, and leaves the events feed and the portal out.
 */
const STORE = `import { MemoryStore } from '@keyhook/core';

const LEFT_OUT = new Set(['listFeedEvents', 'insertPortalSession', 'exchangePortalLink', 'findPortalSession', 'revokePortalSessions']);

/** A store of this app's own: every capability keyhook needs, over a MemoryStore; no feed, no portal. */
export function createMyStore() {
  const inner = new MemoryStore();
  const store = { persistent: false, rawKey: (id) => inner.keys.get(id) ?? null };
  for (let proto = Object.getPrototypeOf(inner); proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || LEFT_OUT.has(name) || typeof inner[name] !== 'function') continue;
      store[name] ??= inner[name].bind(inner);
    }
  }
  return store;
}
`;

const TEST = `import { runStoreConformance } from '@keyhook/store-conformance';
import { createMyStore } from './my-store.js';

runStoreConformance({
  name: 'my store',
  create: async () => createMyStore(),
  createPeer: async (store) => store,
  readKeyRow: async (store, id) => {
    const row = store.rawKey(id);
    return row ? { ...row } : null;
  },
  without: ['eventFeed', 'portalSessions'],
});
`;

interface VitestJson {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  testResults: { assertionResults: { fullName: string; status: string }[] }[];
}

describe('the packed kit, in an app outside the repository', () => {
  let app = '';

  beforeAll(async () => {
    app = await packedApp(
      'kit',
      ['@keyhook/core', '@keyhook/store-conformance'],
      [`vitest@${vitestVersion}`],
    );
    writeFileSync(join(app, 'my-store.js'), STORE);
    writeFileSync(join(app, 'my-store.test.js'), TEST);
  }, 360_000);
  afterAll(() => {
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it("runs every case there but the left-out capabilities', and they all pass", async () => {
    // The app's own Vitest, in a process of its own: nothing of this run's environment leaks in.
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith('VITEST')),
    );
    const outcome = await exec('npx', ['vitest', 'run', '--reporter=json', '--outputFile=result.json'], {
      cwd: app,
      env,
      timeout: 300_000,
    }).then(
      () => null,
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}\n${error.stderr ?? ''}`,
    );
    expect(outcome).toBeNull();
    const result = JSON.parse(readFileSync(join(app, 'result.json'), 'utf8')) as VitestJson;
    expect(result.numFailedTests).toBe(0);
    expect(result.numPassedTests).toBeGreaterThan(100);
    const cases = result.testResults.flatMap((file) => file.assertionResults);
    const skipped = cases.filter((test) => test.status !== 'passed').map((test) => test.fullName);
    expect(skipped.length).toBe(result.numPendingTests);
    expect(skipped.length).toBeGreaterThan(0);
    // Only the two capabilities the store leaves out are skipped.
    for (const name of skipped)
      expect(name).toMatch(/^Store conformance: my store (PortalSessionStore|EventFeedStore) /);
  }, 360_000);
});
