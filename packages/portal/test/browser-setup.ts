import { announceBrowserSuites } from '@keyhook/testing/browser-plan';

export default function setup(): void {
  announceBrowserSuites();
}
