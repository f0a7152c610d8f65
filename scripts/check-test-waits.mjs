#!/usr/bin/env node
// Fails when a test sleeps: a `setTimeout(…)`, `sleep(…)`, `wait(…)` or `delay(…)` of 10 ms or
// more (or of a length it cannot read as a number) in a test file, outside the short list below.
// A test that shows something did not happen waits for a signal that it would have by now (a
// receiver's count, a store query, the worker's stop), and a wait for a state polls it with
// `waitUntil` (@keyhook/testing/support), never for a while. Run by `npm run lint` (and so by CI).
//
// Test files: everything under a `test/`, `tests/` or `e2e/` directory, `*.test.*` and `*.spec.*`,
// packages/testing/src and packages/store-conformance/src. A method call (`clock.setTimeout`, `Atomics.wait`) is not a sleep of
// the test's: it is a virtual clock's, or the thing under test.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, trackedFiles } from './tracked-files.mjs';

/** The waits that must really take time, each with why. `text` is part of the line the call is on. */
export const ALLOWED = [
  {
    file: 'examples/reference-server/test/faults-postgres.test.ts',
    text: 'setTimeout(resolve, LOAD_PAUSE_MS)',
    reason: "the load's pace, a host's requests at a rate; no test step waits on it",
  },
  {
    file: 'packages/testing/src/support/fault-proxy.ts',
    text: 'this.storm = setTimeout(',
    reason:
      'the fault proxy resets connections at random moments of a storm: the fault, not a wait of the test',
  },
  {
    file: 'packages/testing/src/support/fault-proxy.ts',
    text: 'setTimeout(sendDue',
    reason:
      'the fault proxy delays each chunk by the latency it was given: the fault, not a wait of the test',
  },
  {
    file: 'packages/store-conformance/src/support/wait-until.ts',
    text: 'setTimeout(resolve, POLL_MS)',
    reason: 'the poll interval of waitUntil, which waits for a condition and has a deadline',
  },
  {
    file: 'packages/store-conformance/src/support/receiver.ts',
    text: 'const timer = setTimeout(',
    reason: 'the deadline of TestReceiver.waitFor: it fails the wait, it does not make one',
  },
  {
    file: 'packages/testing/src/support/raw-http.ts',
    text: 'timer = setTimeout(() => settle(false), closeWithinMs)',
    reason: 'the deadline for the server to close the connection: it fails the wait, it does not make one',
  },
  {
    file: 'examples/reference-server/test/delivery-crash.test.ts',
    text: 'setTimeout(() => res.writeHead(200).end',
    reason: 'a slow receiver, so attempts are in flight at the kill; no test step waits on it',
  },
  {
    file: 'examples/reference-server/test/delivery-crash.test.ts',
    text: 'lastAttempt + LEASE_MS - Date.now()',
    reason: 'leases run out on the wall clock of the worker process, which takes no virtual clock',
  },
  {
    file: 'examples/reference-server/test/delivery-pg-restart.test.ts',
    text: 'setTimeout(() => res.writeHead(200).end',
    reason: 'a slow receiver, so attempts are in flight at the restart; no test step waits on it',
  },
  {
    file: 'examples/reference-server/test/delivery-pg-restart.test.ts',
    text: 'setTimeout(resolve, 20)',
    reason: "the retry pace of the host's publishers while the server is down, as a host's would be",
  },
  {
    file: 'examples/reference-server/test/data-plane-chunked-claims.test.ts',
    text: 'setTimeout(resolve, SLOW_CHUNK_MS)',
    reason: "a build outlasting the other instance's stale-claim time, which it reads from its wall clock",
  },
  {
    file: 'packages/store-postgres/test/feed-order.test.ts',
    text: 'setTimeout(resolve, Math.floor(Math.random() * 10))',
    reason:
      "publishers' pauses inside their transactions, so real commits overtake each other; no step waits on them",
  },
  {
    file: 'examples/reference-server/test/expiry.test.ts',
    text: 'expiresAt.getTime() - Date.now() + 20',
    reason:
      'a key expiring at a wall-clock time in a server built from its environment, which takes no clock',
  },
];

const CODE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
const TEST_FILE =
  /(^|\/)(test|tests|e2e)\/|\.(test|spec)\.[cm]?[jt]sx?$|^packages\/(testing|store-conformance)\/src\//;
// Not after a `.` or a name: `clock.setTimeout(` and `Atomics.wait(` are not the test's own sleeps.
const CALL = /(?<![\w.$])(setTimeout|sleep|wait|delay)\s*\(/g;
const SHORT_MS = 10;

/** The top-level arguments of the call whose `(` is at `open`, as source text, and where it ends. */
function argumentsAt(text, open) {
  const args = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open; i < text.length; i++) {
    const char = text[i];
    if (char === "'" || char === '"' || char === '`') {
      for (i++; i < text.length && text[i] !== char; i++) if (text[i] === '\\') i++;
      continue;
    }
    if (char === '(' || char === '[' || char === '{') depth++;
    else if (char === ')' || char === ']' || char === '}') {
      depth--;
      if (depth === 0) {
        args.push(text.slice(start, i).trim());
        return { args: args.filter((arg, n) => arg !== '' || n > 0), end: i + 1 };
      }
    } else if (char === ',' && depth === 1) {
      args.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  return { args, end: text.length };
}

/** The length of the wait, as written: a number, or the expression when it is not one. */
function delayOf(name, args) {
  const written =
    name === 'setTimeout'
      ? args.length > 1
        ? args[1]
        : /^[\d_.]+$/.test(args[0] ?? '')
          ? args[0]
          : '0'
      : (args[0] ?? '0');
  const plain = written.replaceAll('_', '');
  return /^\d+(\.\d+)?$/.test(plain) ? Number(plain) : written;
}

/** Every sleep of `SHORT_MS` or more in `files` (relative to `root`) outside `allowed`, as `file:line: what` lines. */
export function checkTestWaits(root, files, allowed = ALLOWED) {
  const problems = [];
  const used = new Set();
  for (const file of files) {
    const text = readFileSync(path.join(root, file), 'utf8');
    const lines = text.split('\n');
    for (const match of text.matchAll(CALL)) {
      const lineIndex = text.slice(0, match.index).split('\n').length - 1;
      const line = lines[lineIndex];
      if (/^\s*(\/\/|\*|\/\*)/.test(line)) continue;
      const { args, end } = argumentsAt(text, match.index + match[0].length - 1);
      // A method or function of that name being written (`setTimeout(callback, ms): TimerHandle {`).
      if (/^\s*[:{]/.test(text.slice(end))) continue;
      const delay = delayOf(match[1], args);
      if (typeof delay === 'number' && delay < SHORT_MS) continue;
      const entry = allowed.find((allow) => allow.file === file && line.includes(allow.text));
      if (entry) {
        used.add(entry);
        continue;
      }
      problems.push(
        `${file}:${lineIndex + 1}: ${match[1]}(…) of ${typeof delay === 'number' ? `${delay} ms` : `\`${delay}\``}: ` +
          'wait for a signal (a receiver, a store query, waitUntil), or list it in scripts/check-test-waits.mjs with why',
      );
    }
  }
  for (const entry of allowed) {
    if (!used.has(entry) && files.includes(entry.file)) {
      problems.push(
        `${entry.file}: the allowed wait "${entry.text}" is not there any more: remove it from the list`,
      );
    } else if (!files.includes(entry.file)) {
      problems.push(`${entry.file}: no such test file: remove its allowed wait from the list`);
    }
  }
  return problems;
}

/**
 * The check on files written for the purpose: a checker that stopped finding anything must fail.
 * Run before the real check.
 */
function selfTest() {
  const dir = mkdtempSync(path.join(tmpdir(), 'check-test-waits-'));
  try {
    const lines = [
      'await new Promise((resolve) => setTimeout(resolve, 500));',
      'await new Promise((resolve) => setTimeout(resolve, 2));',
      'await sleep(1_000);',
      'await clock.setTimeout(callback, 60_000);',
      'await new Promise((resolve) => setTimeout(resolve, LEASE_MS));',
      '// await sleep(500) is what this replaced',
      'await new Promise((resolve) => setTimeout(resolve));',
      'setTimeout(() => {',
      '  done(); }, 300);',
      'await wait(SLOW); // listed',
      'await delay(9);',
      '  setTimeout(callback: () => void, ms: number): TimerHandle {',
    ];
    const file = 'pkg/test/x.test.ts';
    mkdirSync(path.join(dir, 'pkg/test'), { recursive: true });
    writeFileSync(path.join(dir, file), `${lines.join('\n')}\n`);
    const allowed = [
      { file, text: 'wait(SLOW)', reason: 'the self-test' },
      { file, text: 'gone(1000)', reason: 'a stale entry' },
    ];
    const found = checkTestWaits(dir, [file], allowed).map((problem) => problem.split(': ')[0]);
    const expected = [1, 3, 5, 8].map((line) => `${file}:${line}`).concat(file);
    if (JSON.stringify(found) !== JSON.stringify(expected)) {
      throw new Error(
        `check-test-waits: the self-test found ${JSON.stringify(found)}, expected ${JSON.stringify(expected)}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  selfTest();
  const files = trackedFiles((file) => CODE.test(file) && TEST_FILE.test(file));
  const problems = checkTestWaits(ROOT, files);
  if (problems.length > 0) {
    console.error(`check-test-waits: ${problems.length} problem(s)\n${problems.join('\n')}`);
    process.exit(1);
  }
  console.log(
    `check-test-waits: ${files.length} test files, no sleep of ${SHORT_MS} ms or more but the ${ALLOWED.length} listed`,
  );
}
