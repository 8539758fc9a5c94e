import { defineConfig } from "vitest/config";

// The tests talk to the real Firestore and Auth emulators, started around
// them by `go run ./cmd/emulate` (see `make test`), never to a fake.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
    testTimeout: 90_000,
    hookTimeout: 90_000,
    // One file at a time: the emulators are shared and the suites measure
    // leases of a second or two.
    fileParallelism: false,
    benchmark: { include: ["bench/**/*.bench.ts"] },
  },
});
