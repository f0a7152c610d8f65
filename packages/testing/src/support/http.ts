/** One reply as the tests read it: status, headers, the text, and the JSON it holds. */
export interface JsonReply {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body: null when empty, undefined when not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: a reply body is whatever the server sent; expect() checks it.
  body: any;
}

/** Anything that can judge a reply: `OpenApiContract` (./openapi.ts). */
export interface ReplyContract {
  problems(method: string, url: string, reply: JsonReply): string[];
}

export interface JsonRequestOptions {
  /** Every reply is held to it: a reply it does not describe fails the test. */
  contract?: ReplyContract | undefined;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string | undefined;
  /** Sent as JSON with `Content-Type: application/json`. */
  json?: unknown;
  /** Sent as it is, with no Content-Type unless `headers` gives one; a stream goes chunked. */
  body?: Uint8Array | ReadableStream<Uint8Array>;
  headers?: Record<string, string>;
}

/** One real HTTP request, the way every HTTP test in the repository makes it. */
export async function requestJson(
  method: string,
  url: string,
  options: JsonRequestOptions = {},
): Promise<JsonReply> {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  let body: Uint8Array | ReadableStream<Uint8Array> | string | undefined = options.body;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  Object.assign(headers, options.headers);
  const response = await fetch(url, {
    method,
    headers,
    body,
    ...(body instanceof ReadableStream && { duplex: 'half' }),
  });
  const text = await response.text();
  const reply = { status: response.status, headers: response.headers, text, body: parseJson(text) };
  const problems = options.contract?.problems(method, url, reply) ?? [];
  if (problems.length > 0) throw new Error(`the reply breaks the OpenAPI document:\n${problems.join('\n')}`);
  return reply;
}

function parseJson(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
