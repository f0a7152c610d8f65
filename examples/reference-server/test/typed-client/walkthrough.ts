import createClient from 'openapi-fetch';
// Generated from the server's own /api/v1/openapi.json by test/openapi-typed-client.test.ts (not committed).
import type { paths } from './.generated/api.js';

/** What the walkthrough saw, for the test to check. */
export interface WalkthroughResult {
  runStatus: string;
  added: number;
  generation: number;
  itemCount: number;
  diffKeys: string[];
  revokedCode: string;
}

/**
 * The root README's walkthroughs, "The whole loop in eight steps" and "A walk through the API",
 * as a typed client generated from the OpenAPI document would write them: no cast, no `any`.
 */
export async function walkthrough(
  baseUrl: string,
  admin: string,
  receiverUrl: string,
  waitForRun: (check: () => Promise<boolean>) => Promise<void>,
): Promise<WalkthroughResult> {
  const api = createClient<paths>({ baseUrl });
  const asAdmin = { headers: { authorization: `Bearer ${admin}` } };

  // 3. An API key for the data plane, with the scopes it needs. The secret is shown once.
  const created = await api.POST('/api/v1/admin/keys', {
    ...asAdmin,
    body: {
      name: 'loop',
      scopes: ['sources:write', 'items:write', 'runs:read', 'runs:execute', 'runs:apply'],
    },
  });
  if (!created.data) throw new Error(`create key: ${created.error?.error.code}`);
  const asKey = { headers: { authorization: `Bearer ${created.data.secret}` } };

  // 4. A webhook for the run and generation events.
  const webhook = await api.POST('/api/v1/admin/webhooks', {
    ...asAdmin,
    body: { url: receiverUrl, events: ['run.completed', 'generation.published'] },
  });
  // A shared secret (keyType hmac, the default); an ed25519 endpoint answers null and shows its publicKey.
  if (!webhook.data?.secret?.startsWith('whsec_')) throw new Error('create webhook');

  // 5. Stage items in a new source.
  const source = await api.POST('/api/v1/sources', { ...asKey, body: { name: 'handbook' } });
  if (!source.data) throw new Error(`create source: ${source.error?.error.code}`);
  const sourceId = source.data.source.id;
  const path = { sourceId };
  const staged = await api.PUT('/api/v1/sources/{sourceId}/items', {
    ...asKey,
    params: { path },
    body: {
      items: [
        { key: 'welcome', title: 'Welcome', content: 'Hello.' },
        { key: 'leave', content: '25 days.' },
      ],
    },
  });
  if (staged.data?.created !== 2) throw new Error('snapshot');

  // 6. Run: discovery diffs the staged set against the active generation (none yet). No body.
  const started = await api.POST('/api/v1/sources/{sourceId}/runs', { ...asKey, params: { path } });
  if (!started.data) throw new Error(`start run: ${started.error?.error.code}`);
  const runPath = { sourceId, runId: started.data.run.id };
  let run = started.data.run;
  await waitForRun(async () => {
    const read = await api.GET('/api/v1/sources/{sourceId}/runs/{runId}', {
      ...asKey,
      params: { path: runPath },
    });
    if (read.data) run = read.data.run;
    return run.status === 'completed';
  });
  const diff = await api.GET('/api/v1/sources/{sourceId}/runs/{runId}/diff', {
    ...asKey,
    params: { path: runPath, query: { change: 'added' } },
  });
  if (!diff.data) throw new Error('diff');

  // 7. Apply: generation 1 is built and becomes active.
  const applied = await api.POST('/api/v1/sources/{sourceId}/runs/{runId}/apply', {
    ...asKey,
    params: { path: runPath },
  });
  if (!applied.data) throw new Error(`apply: ${applied.error?.error.code}`);
  let generation: { number: number; itemCount: number } | undefined;
  await waitForRun(async () => {
    const active = await api.GET('/api/v1/sources/{sourceId}/generations/active', {
      ...asKey,
      params: { path },
    });
    generation = active.data?.generation;
    return generation !== undefined;
  });

  // A walk through the API: who am I, list and read keys, rotate, revoke.
  const reader = await api.POST('/api/v1/admin/keys', {
    ...asAdmin,
    body: { name: 'ci worker', scopes: ['sources:read'], expiresAt: '2030-01-01T00:00:00Z' },
  });
  if (!reader.data) throw new Error('create reader');
  const keyId = reader.data.key.id;
  const whoami = await api.GET('/api/v1/whoami', {
    headers: { authorization: `Bearer ${reader.data.secret}` },
  });
  if (whoami.data?.key.scopes[0] !== 'sources:read') throw new Error('whoami');
  const listed = await api.GET('/api/v1/admin/keys', { ...asAdmin, params: { query: { limit: 10 } } });
  if (!listed.data?.data.some((key) => key.id === keyId)) throw new Error('list keys');
  const rotated = await api.POST('/api/v1/admin/keys/{keyId}/rotate', {
    ...asAdmin,
    params: { path: { keyId } },
  });
  if (!rotated.data) throw new Error('rotate');
  await api.DELETE('/api/v1/admin/keys/{keyId}', { ...asAdmin, params: { path: { keyId } } });
  const revoked = await api.GET('/api/v1/whoami', {
    headers: { authorization: `Bearer ${rotated.data.secret}` },
  });

  return {
    runStatus: run.status,
    added: run.counts?.added ?? -1,
    generation: generation?.number ?? -1,
    itemCount: generation?.itemCount ?? -1,
    diffKeys: diff.data.data.map((change) => change.key),
    revokedCode: revoked.error?.error.code ?? 'none',
  };
}
