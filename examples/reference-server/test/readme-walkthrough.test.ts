import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { adminToken } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, sqliteEnv, start, tempDir } from './instances.js';

/**
 * The root README's curl walkthroughs, run as written against a reference server on SQLite in
 * development mode, the way a reader would: each command in order, with bash and curl. Where
 * the README says `VAR=<…>` (copy a value from the answer above), the runner copies it from
 * the last answer. Lines that start the server or the receiver are the test's to do.
 */
const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

// "Deliveries" is left out: its $DLV_ID is a delivery that failed for good, hours of retries away.
const SECTIONS = [
  '## The whole loop in eight steps',
  '## A walk through the API with curl',
  '### Webhook endpoints',
];

/** Where a `<placeholder>` is copied from: the last JSON answer, by path, or the test. */
const PLACEHOLDERS: Record<string, (last: Record<string, unknown>, admin: string) => unknown> = {
  'the KEYHOOK_ADMIN_TOKEN npm start printed': (_last, admin) => admin,
  'the admin token npm start printed': (_last, admin) => admin,
  'the secret': (last) => last['secret'],
  'the new secret': (last) => last['secret'],
  'key.id': (last) => (last['key'] as { id: string }).id,
  'webhook.id': (last) => (last['webhook'] as { id: string }).id,
};

/** Lines the test does itself: it runs the server, and a receiver is not needed for the answers. */
const TEST_DOES = [/^npm ci && npm start$/, /^npm run build -w @keyhook\/example-receiver && /];

interface Step {
  command: string;
  /** From a following `# → 201 {…}` comment: the status, and the error code if it names one. */
  expect?: { status: number; code?: string };
}

function stepsOf(section: string): Step[] {
  const start = README.indexOf(`${section}\n`);
  expect(start, section).toBeGreaterThanOrEqual(0);
  const block = /```sh\n([\s\S]*?)```/.exec(README.slice(start))![1]!;
  const steps: Step[] = [];
  let pending = '';
  for (const line of block.split('\n')) {
    const expectation = /^# → (\d{3})\b(.*)$/.exec(line.trim());
    if (expectation && steps.length > 0) {
      const code = /"code":"([a-z_]+)"/.exec(expectation[2]!)?.[1];
      steps[steps.length - 1]!.expect = { status: Number(expectation[1]), ...(code && { code }) };
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
    temp = tempDir();
    running = await start({ ...sqliteEnv(temp.dir), NODE_ENV: 'development' });
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
        for (let tries = 0; tries < 50; tries++) {
          const output = await runBash(`curl() { command curl -w '\\n%{http_code}' "$@"; }; ${command}`, env);
          const cut = output.lastIndexOf('\n');
          body = output.slice(0, cut);
          status = Number(output.slice(cut + 1));
          if (!(status === 409 && body.includes('run_not_ready'))) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const parsed = body === '' ? {} : (JSON.parse(body) as Record<string, unknown>);
        if (expected) {
          expect(status, `${command}\n${body}`).toBe(expected.status);
          if (expected.code) expect((parsed['error'] as { code: string }).code).toBe(expected.code);
        } else {
          expect(status, `${command}\n${body}`).toBeLessThan(400);
        }
        last = parsed;
      }
    },
    60_000,
  );
});
