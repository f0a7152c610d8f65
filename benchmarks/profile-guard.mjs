// Where the guard's time goes: runs one guard-server child under `node --cpu-prof`, loads one
// route with autocannon, and prints server CPU per request — by function, self and inclusive.
//
//   node profile-guard.mjs [fastify|express] [/guarded|/open|/hook] [seconds] [sqlite|memory]
//
// Inclusive time counts a sample once for every distinct function on its stack, so nested
// frames are not counted twice. Figures are µs of server CPU per answered request.
import { fork } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const [framework = 'fastify', route = '/guarded', seconds = '10', storeKind = 'sqlite'] =
  process.argv.slice(2);
const profileDir = mkdtempSync(path.join(tmpdir(), 'keyhook-prof-'));
const serverScript = fileURLToPath(new URL('./guard-server.mjs', import.meta.url));

const child = fork(serverScript, [framework, storeKind], {
  execArgv: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-interval=100'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const ready = await new Promise((resolve) => child.once('message', resolve));
const url = `http://127.0.0.1:${ready.port}${route}`;
const headers = { authorization: `Bearer ${ready.apiKey}` };

await autocannon({ url, connections: 10, duration: 2, headers }); // warm-up, profiled too: subtracted below
const result = await autocannon({ url, connections: 10, duration: Number(seconds), headers });
const exited = new Promise((resolve) => child.once('exit', resolve));
child.disconnect();
await exited;

const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
const profile = JSON.parse(readFileSync(path.join(profileDir, file), 'utf8'));
rmSync(profileDir, { recursive: true, force: true });

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

const nameOf = (node) => {
  const { functionName, url: source, lineNumber } = node.callFrame;
  const where = source
    ? `${source.replace(/^file:\/\//, '').replace(/^.*node_modules\//, '')}:${lineNumber + 1}`
    : '';
  return `${functionName || '(anonymous)'} ${where}`.trim();
};

// Only samples taken while the measured run's requests were served: the last `seconds` of the profile.
const end = profile.endTime;
const from = end - Number(seconds) * 1e6;
const self = new Map();
const inclusive = new Map();
let t = profile.startTime;
let busy = 0;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i];
  const delta = profile.timeDeltas[i + 1] ?? 0;
  if (t < from) continue;
  const leaf = byId.get(profile.samples[i]);
  const leafName = nameOf(leaf);
  if (leafName.startsWith('(idle)')) continue;
  busy += delta;
  self.set(leafName, (self.get(leafName) ?? 0) + delta);
  const seen = new Set();
  for (let id = leaf.id; id !== undefined; id = parent.get(id)) {
    const name = nameOf(byId.get(id));
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + delta);
  }
}

const requests = result['2xx'];
const perRequest = (micros) => (micros / requests).toFixed(2).padStart(7);
const top = (map, n) => [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);

console.log(
  `${framework} ${route} (${storeKind} store): ${requests} requests (${result.non2xx} non-2xx) in ${seconds} s = ${(requests / Number(seconds)).toFixed(0)} req/s; ` +
    `busy server CPU ${perRequest(busy).trim()} µs/request`,
);
console.log('\nself time, µs per request');
for (const [name, micros] of top(self, 30)) console.log(`${perRequest(micros)}  ${name}`);
const ours = /keyhook|packages\/(core|store-sqlite|adapter-)|better-sqlite3|guard-server/;
console.log('\ninclusive time of keyhook frames (and what they call into), µs per request');
for (const [name, micros] of top(inclusive, 400)
  .filter(([name]) => ours.test(name))
  .slice(0, 40)) {
  console.log(`${perRequest(micros)}  ${name}`);
}
