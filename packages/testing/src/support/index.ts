export { TEST_CATALOG, TEST_EVENTS, TEST_SCOPES } from './catalog.js';
export { inCi } from './ci.js';
export { FakeClock, VirtualClock } from './clock.js';
export { type AdminTokenOptions, adminToken, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from './credentials.js';
export { type HostProcessSecrets, killHostProcessAt } from './host-process.js';
export { type JsonReply, type JsonRequestOptions, requestJson } from './http.js';
export { keysOn, scopedKeyhooks } from './keyhooks.js';
export { type LoggedLine, migrationLogLines, migrationLogProblems, recordingLogger } from './logger.js';
export { medianTimeRatio } from './median-ratio.js';
export { deliverOneEvent, type OneDelivery } from './one-delivery.js';
export { portalCookiePath } from './portal-cookie.js';
export { keepWriting, type RawReply, rawRequest } from './raw-http.js';
export { answer, type ReceivedRequest, type Responder, TestReceiver } from './receiver.js';
export {
  checkPostgresIndexes,
  type FillingPublisher,
  fillingPublisher,
  mountSmallDisk,
  type SmallDisk,
  type SmallDiskOptions,
  type SmallTablespace,
  smallTablespace,
} from './small-disk.js';
export { waitUntil } from './wait-until.js';
