import Bowser from 'bowser';

/**
 * A User-Agent as a person names their browser: "Chrome on Linux", "Safari on iOS"
 * (bowser, MIT, keeps its browser and system list up to date). A string it does not know
 * (a TV app, a command line tool naming itself) is shown as it came.
 */
export function describeUserAgent(userAgent: string): string {
  const { browser, os } = Bowser.parse(userAgent);
  if (!browser.name) return userAgent;
  return os.name ? `${browser.name} on ${os.name}` : browser.name;
}
