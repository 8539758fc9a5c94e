import { existsSync } from "node:fs";

/**
 * The browser the tests drive. CHROMIUM_PATH names one; else Debian's
 * chromium-headless-shell, the headless-only build that Playwright runs its
 * own headless tests on (no browser UI: no WebUI renderers, no tab strip), and
 * it costs the machine far less CPU a test than the full browser's headless
 * mode (docs/testing.md); else Debian's Chromium. scripts/deps.sh installs
 * both; Lighthouse keeps the full browser (scripts/lighthouse.mjs).
 */
export const chromiumPath: string =
  process.env.CHROMIUM_PATH ?? ["/usr/bin/chromium-headless-shell", "/usr/bin/chromium"].find((p) => existsSync(p)) ?? "/usr/bin/chromium";
