/**
 * The seat map's script (index.html's): the Firebase SDK (app and
 * Firestore), then the app (main.ts), each evaluated in a task of its own.
 * Evaluated together they were one long task before the map could start
 * (Lighthouse's Total Blocking Time, issue #50). Auth and App Check come
 * later still (main.ts, appcheck.ts).
 */
import { Status } from "./ui";

try {
  await import("firebase/firestore");
  await new Promise((resolve) => setTimeout(resolve));
  await import("./main");
} catch (err) {
  // The SDK or the app did not load (offline, a new build replacing this one).
  const status = document.querySelector<HTMLElement>("[data-status]");
  if (status) new Status(status).error("unavailable", `The app could not start: ${err instanceof Error ? err.message : String(err)}`);
  console.error(err);
}
