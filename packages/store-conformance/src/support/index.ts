// `@keyhook/store-conformance/support`: what the suite's cases stand on, for a store's own tests
// beside it: the tests' catalog and credentials, clocks, a real webhook receiver, and waits.
export { TEST_CATALOG, TEST_EVENTS, TEST_SCOPES } from './catalog.js';
export { FakeClock, VirtualClock } from './clock.js';
export { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from './credentials.js';
export { keysOn } from './keys-on.js';
export { medianTimeRatio } from './median-ratio.js';
export { answer, type ReceivedRequest, type Responder, TestReceiver } from './receiver.js';
export { waitUntil } from './wait-until.js';
