import { resolve } from "node:path";
import { defineConfig } from "vite";
import { VitePWA } from "vite-plugin-pwa";

// Five pages: the seat map (index.html), the buyer's tickets (tickets.html),
// the mutex page (critical.html), the sale console (operate.html) and the
// door's scanner (scan.html).
// Configuration comes from VITE_* variables (see src/app/config.ts);
// `go run ./cmd/firelock-local` sets them for the local emulators.
export default defineConfig({
  build: {
    target: "es2022",
    // The pages share one chunk of the Firebase SDK (Auth and Firestore):
    // about 665 kB, 200 kB gzipped, since the scanner's persistent cache
    // (IndexedDB) came in (it was 565 kB). Larger than that is news.
    chunkSizeWarningLimit: 700,
    rollupOptions: {
      input: {
        main: resolve(import.meta.dirname, "index.html"),
        tickets: resolve(import.meta.dirname, "tickets.html"),
        critical: resolve(import.meta.dirname, "critical.html"),
        operate: resolve(import.meta.dirname, "operate.html"),
        scan: resolve(import.meta.dirname, "scan.html"),
      },
    },
  },
  // The Firestore SDK's re2js serves only pipelines' regular expressions,
  // which this app never runs: a stand-in keeps its 150 kB out (no-re2js.ts).
  resolve: { alias: [{ find: /^re2js$/, replacement: resolve(import.meta.dirname, "src/app/no-re2js.ts") }] },
  optimizeDeps: { include: ["firebase/app", "firebase/auth", "firebase/firestore"] },
  plugins: [
    // The scanner is installable and works offline (CONTRACT §13): a
    // service worker (Workbox) precaches the built app, the ZXing .wasm
    // included, and serves scan.html whatever its query (?screening=&gate=).
    // The manifest is public/scan.webmanifest, linked from scan.html only;
    // scan.ts registers the worker.
    VitePWA({
      injectRegister: null,
      manifest: false,
      registerType: "autoUpdate",
      workbox: {
        globPatterns: ["**/*.{html,js,css,wasm,svg,png,webmanifest}"],
        // zxing_reader.wasm is about 1.1 MB.
        maximumFileSizeToCacheInBytes: 4 * 1024 * 1024,
        ignoreURLParametersMatching: [/.*/],
        navigateFallback: null,
        cleanupOutdatedCaches: true,
        clientsClaim: true,
      },
    }),
  ],
});
