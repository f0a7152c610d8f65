export { type AccessibilityViolation, seriousViolations } from './accessibility.js';
export { type ChromiumOptions, describeInBrowser, launchChromium } from './chromium.js';
export {
  announceBrowserSuites,
  type BrowserSuitePlan,
  browserSuitePlan,
  CHROMIUM_PATH,
} from './suite-plan.js';
