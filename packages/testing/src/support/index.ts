export { type AdminTokenOptions, adminToken, TEST_ADMIN_SECRET } from './admin.js';
export { FakeClock } from './clock.js';
export { medianTimeRatio } from './timing.js';
