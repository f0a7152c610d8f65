export { type AccessibilityViolation, seriousViolations } from './accessibility.js';
export { CHROMIUM_PATH, type ChromiumOptions, describeInBrowser, launchChromium } from './chromium.js';
