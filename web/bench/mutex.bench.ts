// The mutex client's cost on the emulator, in Node with the JS SDK:
// tryAcquire + release of a free mutex against two plain writes by the same
// client (the floor). `make bench` runs it after the Go benchmarks
// on the same emulator (see docs/performance.md).
import { randomUUID } from "node:crypto";
import { bench, describe } from "vitest";
import { initializeApp } from "firebase/app";
import { connectAuthEmulator, createUserWithEmailAndPassword, getAuth } from "firebase/auth";
import { connectFirestoreEmulator, doc, getFirestore, setDoc } from "firebase/firestore";
import { Mutexes } from "../src/mutex";

const [fsHost, fsPort] = (process.env.FIRESTORE_EMULATOR_HOST ?? "").split(":");
const authHost = process.env.FIREBASE_AUTH_EMULATOR_HOST;
if (!fsHost || !fsPort || !authHost) throw new Error("run with `make bench`: the emulator hosts are not set");

const app = initializeApp({ projectId: `demo-bench-${randomUUID().slice(0, 8)}`, apiKey: "fake-api-key" }, "bench");
connectAuthEmulator(getAuth(app), `http://${authHost}`, { disableWarnings: true });
const db = getFirestore(app);
connectFirestoreEmulator(db, fsHost, Number(fsPort));
await createUserWithEmailAndPassword(getAuth(app), `bench-${randomUUID()}@example.com`, "secret-password");
const mutexes = new Mutexes(db, "critical_data", { leaseSeconds: 30 });

let n = 0;
describe("client mutex, free key, one client", () => {
  bench(
    "Mutexes.tryAcquire + release",
    async () => {
      const m = await mutexes.tryAcquire(`k${String(n++)}`);
      await m.release();
    },
    { time: 3000, warmupTime: 500 },
  );
  bench(
    "baseline: two plain writes (no mutex)",
    async () => {
      // versioned_notes: the rules let a signed-in user create at version 1
      // and bump it by one; two writes, like a grant and a release.
      const ref = doc(db, "versioned_notes", `n${String(n++)}`);
      await setDoc(ref, { version: 1 });
      await setDoc(ref, { version: 2 });
    },
    { time: 3000, warmupTime: 500 },
  );
});
