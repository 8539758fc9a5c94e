import { resolve } from "node:path";
import { defineConfig } from "vite";

// Three pages: the seat map (index.html), the mutex page (critical.html)
// and the sale console (operate.html).
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
        operate: resolve(import.meta.dirname, "operate.html"),
      },
    },
  },
  optimizeDeps: { include: ["firebase/app", "firebase/auth", "firebase/firestore"] },
});
