import { defineConfig } from "@playwright/test";
import { chromiumPath } from "./e2e/chromium";

// Browser tests of the seat map and the mutex page, in Debian's Chromium (its
// headless shell: e2e/chromium.ts; no browser download works here), against the local bundle that
// `go run ./cmd/firelock-local -- ...` starts around them: see `make test`.
// In a bundle with App Check enforced (`firelock-local -appcheck enforce`,
// `npm run e2e:appcheck` in `make test`) only appcheck.spec.ts runs: the
// other specs call the functions from Node, without App Check tokens. In
// any other bundle appcheck.spec.ts skips itself.
const appCheckEnforced = process.env.FIRELOCK_APPCHECK === "enforce";
// Tests tagged @bench time something (a measurement, not a pass/fail): they
// run in `make bench` (E2E_BENCH=1), never in `make test`.
const bench = process.env.E2E_BENCH === "1";

export default defineConfig({
  testDir: "e2e",
  ...(appCheckEnforced ? { testMatch: "appcheck.spec.ts" } : {}),
  ...(bench ? { grep: /@bench/ } : { grepInvert: /@bench/ }),
  outputDir: "test-results/artifacts",
  timeout: 90_000,
  expect: { timeout: 20_000 },
  fullyParallel: true,
  workers: Number(process.env.E2E_WORKERS ?? 2),
  forbidOnly: true,
  reporter: [["list"]],
  use: {
    baseURL: process.env.FIRELOCK_WEB_URL,
    browserName: "chromium",
    viewport: { width: 1280, height: 860 },
    screenshot: "only-on-failure",
    // A failed test keeps its trace (DOM snapshots of every step, the network
    // and the console), without the screencast's frames: encoding those cost
    // every test CPU while the machine's two cores are the limit (docs/testing.md).
    trace: { mode: "retain-on-failure", screenshots: false },
    launchOptions: {
      executablePath: chromiumPath,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
    },
  },
});
