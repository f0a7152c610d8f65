import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { keyhookRouter, requireScope } from '@keyhook/adapter-express';
import { runHttpSuite } from '@keyhook/testing/http-suite';
import express from 'express';

runHttpSuite({
  name: 'express',
  async start({ keyhook, prefix, openapi, portal }) {
    const app = express();
    app.use(
      keyhookRouter(keyhook, {
        ...(prefix !== '/api/v1' && { prefix }),
        ...(openapi !== undefined && { openapi }),
        ...(portal !== undefined && { portal }),
      }),
    );
    app.get(
      `${prefix}/host/items`,
      (_req, res, next) => {
        res.set('x-request-id', 'host-request-id');
        next();
      },
      requireScope(keyhook, 'items:read'),
      (req, res) => {
        res.json({ apiKey: req.apiKey });
      },
    );
    app.post(`${prefix}/host/items`, requireScope(keyhook, 'items:write'), express.json(), (req, res) => {
      res.json({ apiKey: req.apiKey, body: req.body });
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      async close() {
        server.closeAllConnections();
        await new Promise<void>((resolve, reject) =>
          server.close((error) => (error ? reject(error) : resolve())),
        );
      },
    };
  },
});
