// The webhook receiver of the delivery benchmark (delivery.mjs), run as a child process
// (child_process.fork), so the sender under test never shares its event loop with the server.
//
//   node delivery-receiver.mjs
//
// A plain node:http server on 127.0.0.1: it reads each request body to the end and answers 200
// with an empty body at once. It counts what it got, per run, and checks as it goes:
//   - every request carries the event-id and signature headers;
//   - every 64th signature is verified (HMAC-SHA256 over `<t>.<body>`) with the run's secret;
//   - distinct event ids, so a delivery sent twice shows (hits > distinct).
// In latency mode it also parses the body and records, per event, its own clock at the end of
// the body minus `data.sentAt` (the publisher's performance.timeOrigin + performance.now()).
// A request to a path ending in /hang is never answered, and only counted (`hung`);
// {type:'release'} drops those still open.
//
// IPC, one answer per message, in order: {type:'reset', secret, latency} clears the counters;
// {type:'stats'} answers the counters (and the latency samples); {type:'clock'} answers this
// process's clock, for the parent's offset estimate; {type:'cpu'} answers process.cpuUsage().
// It exits when the parent disconnects.
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';

const EVENT_ID_HEADER = 'keyhook-event-id';
const SIGNATURE_HEADER = 'keyhook-signature';
const VERIFY_EVERY = 64;

let state = fresh(null, false);
/** The /hang requests still open, for {type:'release'}. */
const hanging = new Set();

function fresh(secret, latency) {
  return {
    secret,
    latency,
    hits: 0,
    ids: new Set(),
    missingHeaders: 0,
    verified: 0,
    badSignatures: 0,
    samples: [],
    hung: 0,
  };
}

const now = () => performance.timeOrigin + performance.now();

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const arrived = now();
    const s = state;
    // A receiver that hangs: never answered, counted apart; the sender's deadline ends it.
    if (req.url?.endsWith('/hang')) {
      s.hung++;
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    s.hits++;
    const id = req.headers[EVENT_ID_HEADER];
    const signature = req.headers[SIGNATURE_HEADER];
    if (typeof id !== 'string' || typeof signature !== 'string') s.missingHeaders++;
    else s.ids.add(id);
    if (s.secret && typeof signature === 'string' && s.hits % VERIFY_EVERY === 1) {
      s.verified++;
      if (!signatureHolds(s.secret, Buffer.concat(chunks), signature)) s.badSignatures++;
    }
    if (s.latency) {
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      s.samples.push(arrived - event.data.sentAt);
    }
    res.writeHead(200, { 'content-length': '0' });
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 65_000;

function signatureHolds(secret, body, header) {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!match) return false;
  const expected = createHmac('sha256', secret).update(`${match[1]}.`).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(match[2], 'hex'));
}

server.listen(0, '127.0.0.1', () => {
  process.send({ type: 'ready', port: server.address().port, pid: process.pid });
});

process.on('message', (message) => {
  switch (message?.type) {
    case 'reset':
      state = fresh(message.secret ?? null, message.latency === true);
      process.send({ type: 'reset' });
      break;
    case 'stats': {
      const { hits, ids, missingHeaders, verified, badSignatures, samples, hung } = state;
      process.send({
        type: 'stats',
        hits,
        distinct: ids.size,
        missingHeaders,
        verified,
        badSignatures,
        samples,
        hung,
      });
      break;
    }
    case 'release':
      for (const res of hanging) res.destroy();
      process.send({ type: 'release' });
      break;
    case 'clock':
      process.send({ type: 'clock', now: now() });
      break;
    case 'cpu':
      process.send({ type: 'cpu', usage: process.cpuUsage() });
      break;
  }
});
process.on('disconnect', () => {
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
});
