import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { adminToken, waitUntil } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from './client.js';
import { type Running, sqliteEnv, start, tempDir } from './instances.js';

/**
 * The root README's curl walkthroughs, run as written against a reference server on SQLite in
 * development mode, the way a reader would: each command in order, with bash and curl. Where
 * the README says `VAR=<…>` (copy a value from the answer above), the runner copies it from
 * the last answer. Lines that start the server or the receiver are the test's to do. An answer
 * the README shows (`# → 200 {…}`) is held to its status, its error code, and the fields it shows.
 * "The same in the browser" is run in Chromium, by readme-browser.test.ts.
 */
const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

const SECTIONS = [
  '## The whole loop in eight steps',
  '## A walk through the API with curl',
  '### Webhook endpoints',
  '### Deliveries',
];

// "Deliveries" has the reader start the server with a short retry schedule, so that the loop's
// deliveries (no receiver runs) fail for good in about a second instead of hours: so does the test.
const TRIAL_SCHEDULE = /`KEYHOOK_RETRY_SCHEDULE=([^\s`]+) npm start`/.exec(README)?.[1];

/** Where a `<placeholder>` is copied from: the last JSON answer, by path, or the test. */
const PLACEHOLDERS: Record<string, (last: Record<string, unknown>, admin: string) => unknown> = {
  'the KEYHOOK_ADMIN_TOKEN npm start printed': (_last, admin) => admin,
  'the admin token npm start printed': (_last, admin) => admin,
  'the secret': (last) => last['secret'],
  'the new secret': (last) => last['secret'],
  'key.id': (last) => (last['key'] as { id: string }).id,
  'webhook.id': (last) => (last['webhook'] as { id: string }).id,
};

/**
 * Lines the test does itself: it runs the server. No receiver runs: the answers need none, and
 * "Deliveries" has the loop run without it.
 */
const TEST_DOES = [/^npm ci && npm start$/, /^npm run build -w @keyhook\/example-receiver && /];

/** What a section's prose has the reader wait for before its block, awaited the same way. */
const WAIT_BEFORE: Record<string, (client: Client, admin: string) => Promise<void>> = {
  // "in about a second, both of its deliveries have failed for good"
  '### Deliveries': async (client, admin) => {
    const hooks = await client.request('GET', '/api/v1/admin/webhooks?limit=10', admin);
    const loop = (hooks.body.data as { id: string; url: string }[]).find(
      (hook) => hook.url === 'http://127.0.0.1:4000/',
    );
    expect(loop, "the loop's webhook").toBeDefined();
    await expect
      .poll(
        async () => {
          const reply = await client.request('GET', `/api/v1/admin/webhooks/${loop!.id}/deliveries`, admin);
          return (reply.body.data as { status: string }[]).map((delivery) => delivery.status);
        },
        { timeout: 15_000, interval: 100 },
      )
      .toEqual(['failed', 'failed']);
  },
};

interface Step {
  command: string;
  /**
   * From a following `# → 201 {…}` comment: the status, the error code if it names one, and the
   * answer as shown (its JSON, which may go on over the next comment lines).
   */
  expect?: { status: number; code?: string; shown?: string };
}

/** Where the JSON that `text` starts with ends (just after its closing bracket), or -1 if it goes on. */
function jsonEnd(text: string): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if ((c === '}' || c === ']') && --depth === 0) return i + 1;
  }
  return -1;
}

function stepsOf(section: string): Step[] {
  const start = README.indexOf(`${section}\n`);
  expect(start, section).toBeGreaterThanOrEqual(0);
  const block = /```sh\n([\s\S]*?)```/.exec(README.slice(start))![1]!;
  const steps: Step[] = [];
  let pending = '';
  let showing: { shown?: string } | undefined; // an answer whose JSON goes on over the next lines
  for (const line of block.split('\n')) {
    if (showing && line.trim().startsWith('#')) {
      showing.shown += line.trim().slice(1).trim();
      if (jsonEnd(showing.shown!) >= 0) showing = undefined;
      continue;
    }
    showing = undefined;
    const expectation = /^# → (\d{3})\b(.*)$/.exec(line.trim());
    if (expectation && steps.length > 0) {
      const code = /"code":"([a-z_]+)"/.exec(expectation[2]!)?.[1];
      const json = expectation[2]!.indexOf('{');
      const expected: Step['expect'] = {
        status: Number(expectation[1]),
        ...(code && { code }),
        ...(json >= 0 && { shown: expectation[2]!.slice(json) }),
      };
      steps[steps.length - 1]!.expect = expected;
      if (expected.shown !== undefined && jsonEnd(expected.shown) < 0) showing = expected;
      continue;
    }
    if (pending === '' && (line.trim() === '' || line.trim().startsWith('#'))) continue;
    pending += line.endsWith('\\') ? `${line.slice(0, -1)} ` : line;
    if (!line.endsWith('\\')) {
      steps.push({ command: pending.trim() });
      pending = '';
    }
  }
  return steps;
}

const MORE = '\u0000more';

/**
 * An answer as the README shows it, as a value: `…` alone stands for more (`{…}`, `[…]`, `,…}`),
 * and a string with `…` in it is a pattern (`"dlv_…"`). Text after the JSON is a remark.
 */
function shownValue(shown: string): unknown {
  const end = jsonEnd(shown);
  expect(end, `an answer the runner cannot read: ${shown}`).toBeGreaterThan(0);
  const open: string[] = [];
  let out = '';
  let inString = false;
  for (let i = 0; i < end; i++) {
    const c = shown[i]!;
    if (inString) {
      // A string is copied as it is, `…` included: it becomes a pattern.
      if (c === '"') inString = false;
      out += c === '\\' ? c + shown[++i] : c;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') open.push(c);
    else if (c === '}' || c === ']') open.pop();
    if (c === '…') out += open.at(-1) === '{' ? `"\\u0000more":true` : `"\\u0000more"`;
    else out += c;
  }
  return JSON.parse(out);
}

/** Whether `actual` has what the README shows: the fields it names, the array items it lists. */
function hasShown(actual: unknown, shown: unknown): boolean {
  if (typeof shown === 'string' && shown !== MORE && shown.includes('…')) {
    const pattern = shown
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[\\s\\S]*');
    return typeof actual === 'string' && new RegExp(`^${pattern}$`).test(actual);
  }
  if (Array.isArray(shown)) {
    const items = shown.filter((item) => item !== MORE);
    if (!Array.isArray(actual)) return false;
    if (items.length === shown.length ? actual.length !== items.length : actual.length < items.length) {
      return false;
    }
    return items.every((item, i) => hasShown(actual[i], item));
  }
  if (shown !== null && typeof shown === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    return Object.entries(shown).every(
      ([key, value]) =>
        key === MORE || (key in actual && hasShown((actual as Record<string, unknown>)[key], value)),
    );
  }
  return Object.is(actual, shown);
}

// Asynchronous: the server answers from this same process.
async function runBash(command: string, env: Record<string, string>): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', ['-c', command], { env: { ...process.env, ...env } });
  return stdout;
}

describe("the root README's walkthroughs, run as written", () => {
  let running: Running;
  let temp: ReturnType<typeof tempDir>;
  let admin: string;
  const env: Record<string, string> = {};

  beforeAll(async () => {
    expect(
      TRIAL_SCHEDULE,
      'the short schedule "Deliveries" has the reader start the server with',
    ).toBeDefined();
    temp = tempDir();
    running = await start({
      ...sqliteEnv(temp.dir),
      NODE_ENV: 'development',
      KEYHOOK_RETRY_SCHEDULE: TRIAL_SCHEDULE!,
    });
    admin = await adminToken({ tenantId: 'acme', subject: 'ops' });
  });
  afterAll(async () => {
    await running?.server.close();
    temp?.remove();
  });

  it.each(SECTIONS)(
    '%s',
    async (section) => {
      let last: Record<string, unknown> = {};
      const steps = stepsOf(section);
      expect(steps.length).toBeGreaterThan(2);
      await WAIT_BEFORE[section]?.(running.client, admin);
      for (const { command, expect: expected } of steps) {
        if (TEST_DOES.some((pattern) => pattern.test(command))) continue;
        const placeholder = /^([A-Z_]+)=<([^>]+)>(?:; ([A-Z_]+)=<([^>]+)>)?$/.exec(command);
        if (placeholder) {
          for (const [name, text] of [
            [placeholder[1], placeholder[2]],
            [placeholder[3], placeholder[4]],
          ]) {
            if (name === undefined) continue;
            const from = PLACEHOLDERS[text!];
            expect(from, `a placeholder the runner cannot fill: <${text}>`).toBeDefined();
            env[name] = String(from!(last, admin));
          }
          continue;
        }
        const assignment = /^([A-Z_]+)=(.*)$/.exec(command);
        if (assignment && !assignment[2]!.startsWith('$(')) {
          // BASE is the server the test started; any other value is taken as written.
          env[assignment[1]!] =
            assignment[1] === 'BASE' ? `${running.client.baseUrl}/api/v1` : assignment[2]!;
          continue;
        }
        if (assignment) {
          env[assignment[1]!] = await runBash(`printf '%s' ${assignment[2]}`, env);
          continue;
        }
        expect(command, 'a README line the runner does not know').toMatch(/^curl /);
        // The status after the body, on a line of its own; a run not yet discovered is waited for, as a reader would.
        let status = 0;
        let body = '';
        await waitUntil(
          async () => {
            const output = await runBash(
              `curl() { command curl -w '\\n%{http_code}' "$@"; }; ${command}`,
              env,
            );
            const cut = output.lastIndexOf('\n');
            body = output.slice(0, cut);
            status = Number(output.slice(cut + 1));
            return !(status === 409 && body.includes('run_not_ready'));
          },
          10_000,
          () => `${command}\n${body}`,
        );
        const parsed = body === '' ? {} : (JSON.parse(body) as Record<string, unknown>);
        if (expected) {
          expect(status, `${command}\n${body}`).toBe(expected.status);
          if (expected.code) expect((parsed['error'] as { code: string }).code).toBe(expected.code);
          if (expected.shown !== undefined) {
            expect(
              hasShown(parsed, shownValue(expected.shown)),
              `${command}\n${body}\nshown: ${expected.shown}`,
            ).toBe(true);
          }
        } else {
          expect(status, `${command}\n${body}`).toBeLessThan(400);
        }
        last = parsed;
      }
    },
    60_000,
  );
});
