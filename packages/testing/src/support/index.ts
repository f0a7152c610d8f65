// The helpers the store conformance suite stands on are @keyhook/store-conformance's; the other
// suites use them too, from here.
export {
  answer,
  FakeClock,
  keysOn,
  medianTimeRatio,
  type ReceivedRequest,
  type Responder,
  TEST_ADMIN_SECRET,
  TEST_CATALOG,
  TEST_ENCRYPTION_KEY,
  TEST_EVENTS,
  TEST_SCOPES,
  TestReceiver,
  VirtualClock,
  waitUntil,
} from '@keyhook/store-conformance/support';
export { inCi } from './ci.js';
export { type AdminTokenOptions, adminToken } from './credentials.js';
export { BACKFILLED_FEED, EVENTS_BEFORE_THE_FEED, feedAfterBackfill } from './feed-backfill.js';
export { type HostProcessSecrets, killHostProcessAt } from './host-process.js';
export { type JsonReply, type JsonRequestOptions, requestJson } from './http.js';
export { scopedKeyhooks } from './keyhooks.js';
export { type LoggedLine, migrationLogLines, migrationLogProblems, recordingLogger } from './logger.js';
export { deliverOneEvent, type OneDelivery } from './one-delivery.js';
export { packedApp } from './packed-app.js';
export { portalCookiePath } from './portal-cookie.js';
export { keepWriting, type RawReply, rawRequest } from './raw-http.js';
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
