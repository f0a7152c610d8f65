import type { AddressInfo } from 'node:net';
import { OpenApiContract } from '@keyhook/testing/openapi';
import { type JsonReply, requestJson } from '@keyhook/testing/support';
import type { FastifyInstance } from 'fastify';

export type Reply = JsonReply;

/** Listens on a free port of 127.0.0.1 and returns the base URL. */
export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

/** A real HTTP client for one running server: the admin calls and a guarded data-plane route. */
export class Client {
  constructor(
    readonly baseUrl: string,
    /** Every reply is held to it: a reply the server's own document does not describe fails the test. */
    readonly contract?: OpenApiContract,
  ) {}

  /** A client held to the OpenAPI document the server at `baseUrl` serves. */
  static async forServer(baseUrl: string): Promise<Client> {
    const reply = await requestJson('GET', `${baseUrl}/api/v1/openapi.json`);
    if (reply.status !== 200) throw new Error(`GET /api/v1/openapi.json answered ${reply.status}`);
    return new Client(baseUrl, await OpenApiContract.of(reply.body));
  }

  request(
    method: string,
    path: string,
    token?: string,
    body?: unknown,
    extraHeaders: Record<string, string> = {},
  ): Promise<Reply> {
    return requestJson(method, `${this.baseUrl}${path}`, {
      token,
      json: body,
      headers: extraHeaders,
      contract: this.contract,
    });
  }

  /** POST /api/v1/admin/keys; fails the test unless it answers 201. */
  async createKey(
    adminJwt: string,
    input: { name?: string; scopes?: string[]; expiresAt?: string } = {},
  ): Promise<{ id: string; secret: string }> {
    const reply = await this.request('POST', '/api/v1/admin/keys', adminJwt, {
      name: input.name ?? 'test key',
      scopes: input.scopes ?? ['sources:read'],
      ...(input.expiresAt !== undefined && { expiresAt: input.expiresAt }),
    });
    if (reply.status !== 201)
      throw new Error(`create key answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    return { id: reply.body.key.id, secret: reply.body.secret };
  }

  revoke(adminJwt: string, keyId: string): Promise<Reply> {
    return this.request('DELETE', `/api/v1/admin/keys/${keyId}`, adminJwt);
  }

  rotate(adminJwt: string, keyId: string): Promise<Reply> {
    return this.request('POST', `/api/v1/admin/keys/${keyId}/rotate`, adminJwt);
  }

  /** GET /api/v1/sources: a data-plane route behind `sources:read`. */
  listSources(apiKey: string): Promise<Reply> {
    return this.request('GET', '/api/v1/sources', apiKey);
  }
}
