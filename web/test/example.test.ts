// Runs the example of src/example.ts against the emulators, like a Go Example.
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { deleteApp, initializeApp } from "firebase/app";
import { connectAuthEmulator, createUserWithEmailAndPassword, getAuth } from "firebase/auth";
import { connectFirestoreEmulator, getFirestore } from "firebase/firestore";
import { appendUnderMutex } from "../src/example";

it("appends lines under the document's mutex", async () => {
  const [fsHost, fsPort] = (process.env.FIRESTORE_EMULATOR_HOST ?? "").split(":");
  const authHost = process.env.FIREBASE_AUTH_EMULATOR_HOST;
  if (!fsHost || !fsPort || !authHost) throw new Error("run with `make test`: the emulator hosts are not set");
  const app = initializeApp({ projectId: `demo-web-${randomUUID().slice(0, 8)}`, apiKey: "fake-api-key" }, randomUUID());
  try {
    connectAuthEmulator(getAuth(app), `http://${authHost}`, { disableWarnings: true });
    const db = getFirestore(app);
    connectFirestoreEmulator(db, fsHost, Number(fsPort));
    await createUserWithEmailAndPassword(getAuth(app), `u-${randomUUID()}@example.com`, "secret-password");
    await appendUnderMutex(db, "notes", "first");
    expect(await appendUnderMutex(db, "notes", "second")).toBe("first\nsecond");
  } finally {
    await deleteApp(app);
  }
});
