export { type AdminTokenOptions, adminToken, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from './admin.js';
export { FakeClock, VirtualClock } from './clock.js';
export { deliverOneEvent, type OneDelivery } from './deliver.js';
export { type JsonReply, type JsonRequestOptions, requestJson } from './http.js';
export { keysOn, scopedKeyhooks } from './keyhooks.js';
export { type LoggedLine, migrationLogLines, recordingLogger } from './logger.js';
export { keepWriting, type RawReply, rawRequest } from './raw-http.js';
export { answer, type ReceivedRequest, type Responder, TestReceiver } from './receiver.js';
export { medianTimeRatio } from './timing.js';
