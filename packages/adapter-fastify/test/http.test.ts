import { keyhookFastify, requireScope } from '@keyhook/adapter-fastify';
import { runHttpSuite } from '@keyhook/testing/http-suite';
import Fastify from 'fastify';

runHttpSuite({
  name: 'fastify',
  async start({ keyhook, prefix, openapi, portal }) {
    const app = Fastify();
    await app.register(keyhookFastify, {
      keyhook,
      ...(prefix !== '/api/v1' && { prefix }),
      ...(openapi !== undefined && { openapi }),
      ...(portal !== undefined && { portal }),
    });
    app.get(
      `${prefix}/host/items`,
      {
        onRequest: [
          (_request, reply, done) => {
            reply.header('x-request-id', 'host-request-id');
            done();
          },
          requireScope(keyhook, 'items:read'),
        ],
      },
      async (request) => ({ apiKey: request.apiKey }),
    );
    app.post(
      `${prefix}/host/items`,
      { onRequest: requireScope(keyhook, 'items:write') },
      async (request) => ({
        apiKey: request.apiKey,
        body: request.body,
      }),
    );
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    return { baseUrl: address, close: () => app.close() };
  },
});
