export { type AdminTokenOptions, adminToken, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from './admin.js';
export { FakeClock } from './clock.js';
export { medianTimeRatio } from './timing.js';
