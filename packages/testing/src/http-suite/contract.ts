import { describe, expect, it } from 'vitest';
import type { JsonReply } from '../support/http.js';
import { documentedRouteKeys, openApiProblems } from '../support/openapi-contract.js';
import { admin, call } from './client.js';
import type { SuiteContext } from './suite-context.js';

/** Every `call` reply in this suite is held to the OpenAPI document; these cases hold the holder. */
export function contractCases(ctx: SuiteContext): void {
  describe('the OpenAPI contract every reply is held to', () => {
    it('is a valid OpenAPI 3.1 document naming every route keyhook serves', async () => {
      expect(await openApiProblems(ctx.document)).toEqual([]);
      const served = ctx.keyhook.routes.map(
        ({ method, path }) => `${method} ${ctx.prefix}${path.replace(/:(\w+)/g, '{$1}')}`,
      );
      expect(documentedRouteKeys(ctx.document as { paths: Record<string, object> })).toEqual(
        expect.arrayContaining(served),
      );
    });

    it('refuses a reply the document does not describe: status, body, content type, headers', async () => {
      const reply = await call(ctx, 'GET', '/admin/keys', { token: await admin(ctx) });
      const url = `${ctx.baseUrl}${ctx.prefix}/admin/keys`;
      const problems = (changed: Partial<JsonReply>) =>
        ctx.contract.problems('GET', url, { ...reply, ...changed });
      expect(problems({})).toEqual([]);
      expect(problems({ status: 418 })).toEqual([expect.stringContaining('no such status')]);
      expect(problems({ body: { data: [{ id: 7 }] } })).not.toEqual([]);
      const withoutId = new Headers(reply.headers);
      withoutId.delete('x-request-id');
      expect(problems({ headers: withoutId })).toEqual([expect.stringContaining('x-request-id')]);
      const asText = new Headers(reply.headers);
      asText.set('content-type', 'text/plain');
      expect(problems({ headers: asText })).toEqual([expect.stringContaining('content-type')]);
      const unauthorised = await call(ctx, 'GET', '/admin/keys');
      const noChallenge = new Headers(unauthorised.headers);
      noChallenge.delete('www-authenticate');
      expect(ctx.contract.problems('GET', url, { ...unauthorised, headers: noChallenge })).toEqual([
        expect.stringContaining('www-authenticate'),
      ]);
    });
  });
}
