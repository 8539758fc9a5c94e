import { resolve } from "node:path";
import { defineConfig } from "vite";

// Two pages: the seat map (index.html) and the mutex page (critical.html).
// Configuration comes from VITE_* variables (see src/app/config.ts);
// `go run ./cmd/firelock-local` sets them for the local emulators.
export default defineConfig({
  build: {
    target: "es2022",
    // Both pages share one chunk of the Firebase SDK (Auth and Firestore):
    // about 565 kB, 170 kB gzipped. Larger than that is news.
    chunkSizeWarningLimit: 700,
    rollupOptions: {
      input: {
        main: resolve(import.meta.dirname, "index.html"),
        critical: resolve(import.meta.dirname, "critical.html"),
      },
    },
  },
  optimizeDeps: { include: ["firebase/app", "firebase/auth", "firebase/firestore"] },
});
