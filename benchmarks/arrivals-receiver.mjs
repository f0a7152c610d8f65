// A webhook receiver in a child process that answers 200 at once and records each arrival's time
// by path (Date.now(): the parent's clock too), for the rate benchmarks (endpoint-rate.mjs,
// paced-endpoints.mjs). Run as a script, it is the child.
import { fork } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';

/**
 * Starts the receiver: `url(path)` to send to, `arrivals(path)` for the times seen there so far,
 * `close()` to end it.
 */
export async function startArrivalsReceiver() {
  const child = fork(fileURLToPath(import.meta.url));
  const replies = [];
  const port = await new Promise((resolve) => child.once('message', (m) => resolve(m.port)));
  child.on('message', (message) => replies.shift()?.(message));
  const ask = (message) =>
    new Promise((resolve) => {
      replies.push(resolve);
      child.send(message);
    });
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    arrivals: async (path) => (await ask({ type: 'arrivals', path })).times,
    close: () => child.disconnect(),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arrivals = new Map();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const at = Date.now();
      const path = req.url ?? '/';
      if (!arrivals.has(path)) arrivals.set(path, []);
      arrivals.get(path).push(at);
      res.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1', () => process.send({ type: 'port', port: server.address().port }));
  process.on('message', (message) => {
    if (message.type === 'arrivals')
      process.send({ type: 'arrivals', times: arrivals.get(message.path) ?? [] });
  });
  process.on('disconnect', () => process.exit(0));
}
