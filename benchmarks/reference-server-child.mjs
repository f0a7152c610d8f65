// What the benchmarks that run the built reference server in a child process share: starting it,
// a JSON request to it, and the Postgres reachability check and admin statement of their setup.
import { spawn } from 'node:child_process';
import http from 'node:http';
import pg from 'pg';

/**
 * Starts `node [...nodeArgs] script` on a free port of 127.0.0.1 with `env` on top of this
 * process's and the admin secret; resolves once it prints its address, with its URL, its pid and
 * a `stop()` that sends SIGTERM and waits for the exit.
 */
export function startServer({ script, secret, env = {}, nodeArgs = [] }) {
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', KEYHOOK_ADMIN_JWT_SECRET: secret, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.once('exit', (code) => reject(new Error(`the server exited with ${code}: ${out}`)));
    child.stdout.on('data', (data) => {
      out += data;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
        child.removeAllListeners('exit');
        resolve({
          url: new URL(match[1]),
          pid: child.pid,
          stop: () =>
            new Promise((done) => {
              child.once('exit', done);
              child.kill('SIGTERM');
            }),
        });
      }
    });
  });
}

/**
 * One request through `agent`; `body` goes as JSON (a string as it is). Resolves with the status,
 * the answer's size in bytes and its body parsed (undefined when empty).
 */
export function request(agent, url, method, pathname, { token, body } = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method,
        path: pathname,
        headers: {
          ...(token && { authorization: `Bearer ${token}` }),
          ...(payload !== undefined && {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
          }),
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          const text = raw.toString();
          resolve({
            status: res.statusCode,
            bytes: raw.length,
            body: text === '' ? undefined : JSON.parse(text),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Whether a Postgres server answers at `connectionString` within 2 s. */
export async function pgReachable(connectionString) {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/** Runs one statement on a connection of its own. */
export async function pgAdmin(connectionString, sql) {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
