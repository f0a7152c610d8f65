import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { OpenAPIBackend, type Operation } from 'openapi-backend';
import type { JsonReply } from './http.js';

/** What is wrong with `document` as an OpenAPI 3.1 document: nothing, when it is valid. */
export async function openApiProblems(document: unknown): Promise<unknown[]> {
  const result = await new Validator().validate(document as Parameters<Validator['validate']>[0]);
  return result.valid ? [] : [result.errors ?? 'invalid'].flat();
}

/** `METHOD /path/{param}` for each route a server registered (HEAD left out), sorted. */
export function registeredRouteKeys(routes: readonly { method: string; url: string }[]): string[] {
  return routes
    .filter((route) => route.method !== 'HEAD')
    .map((route) => `${route.method} ${route.url.replace(/:(\w+)/g, '{$1}')}`)
    .sort();
}

/** The same keys for each operation an OpenAPI document describes, sorted. */
export function documentedRouteKeys(document: { paths?: Record<string, object> }): string[] {
  return Object.entries(document.paths ?? {})
    .flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
}

interface ResponseObject {
  headers?: Record<string, { required?: boolean }>;
  content?: Record<string, unknown>;
}

/**
 * An OpenAPI document as a contract for replies: each reply to a documented operation must have
 * a status the operation lists, that status's content type and body schema, and its required
 * headers with their schemas. Validation is openapi-backend's, on Ajv's JSON Schema 2020-12
 * (the dialect of OpenAPI 3.1).
 */
export class OpenApiContract {
  private constructor(private readonly api: OpenAPIBackend) {}

  static async of(document: object): Promise<OpenApiContract> {
    const api = new OpenAPIBackend({
      definition: structuredClone(document) as never,
      // quick: no check of the document, which openapi-backend does against 3.0 (openApiProblems
      // checks it as 3.1); strict: anything else that fails at init throws.
      quick: true,
      strict: true,
      customizeAjv: (_ajv, options) => {
        const ajv = new Ajv2020({ ...options, strict: false, allErrors: true });
        addFormats.default(ajv);
        return ajv as never;
      },
    });
    await api.init();
    if (api.router.getOperations().length === 0) throw new Error('the OpenAPI document has no operations');
    return new OpenApiContract(api);
  }

  /** The operation a request is for, if the document describes one. */
  operationOf(method: string, url: string): Operation | undefined {
    const { pathname } = new URL(url);
    return this.api.router.matchOperation({ method, path: pathname, headers: {} }) || undefined;
  }

  /** What of `reply` the document does not describe: nothing when it conforms. */
  problems(method: string, url: string, reply: JsonReply): string[] {
    const operation = this.operationOf(method, url);
    // Requests to no documented operation (an unknown path, a wrong method) are not its business.
    if (operation === undefined) return [];
    const where = `${method} ${new URL(url).pathname} → ${reply.status}`;
    const responses = (operation.responses ?? {}) as Record<string, ResponseObject>;
    const described =
      responses[String(reply.status)] ?? responses[`${String(reply.status)[0]}XX`] ?? responses['default'];
    if (described === undefined) {
      return [
        `${where}: the document lists no such status for ${operation.operationId} (${reply.text.slice(0, 200)})`,
      ];
    }
    const problems: string[] = [];
    const mediaTypes = Object.keys(described.content ?? {});
    const contentType = reply.headers.get('content-type')?.split(';')[0]?.trim();
    if (mediaTypes.length === 0) {
      if (reply.text !== '') problems.push(`${where}: a body where the document describes none`);
    } else if (contentType === undefined || !mediaTypes.includes(contentType)) {
      problems.push(`${where}: content-type ${contentType} is not one of ${mediaTypes.join(', ')}`);
    } else if (contentType === 'application/json') {
      const body = this.api.validator.validateResponse(reply.body, operation, reply.status);
      for (const error of body.errors ?? []) {
        problems.push(`${where}: body${error.instancePath} ${error.message} ${JSON.stringify(error.params)}`);
      }
    }
    const headers = Object.fromEntries(reply.headers);
    const checked = this.api.validator.validateResponseHeaders(headers, operation, {
      statusCode: reply.status,
    });
    for (const error of checked.errors ?? []) {
      problems.push(`${where}: header ${error.instancePath} ${error.message}`);
    }
    for (const [name, header] of Object.entries(described.headers ?? {})) {
      if (header.required && headers[name.toLowerCase()] === undefined) {
        problems.push(`${where}: required header ${name} is missing`);
      }
    }
    return problems;
  }
}
