// The mutex client against the real Firestore emulator with firestore.rules
// loaded, and real users of the Auth emulator. Run through `make test`
// (go run ./cmd/firelock-local, or ./cmd/emulate, starts both and sets the
// *_EMULATOR_HOST variables).
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { type FirebaseApp, deleteApp, initializeApp } from "firebase/app";
import { connectAuthEmulator, createUserWithEmailAndPassword, getAuth, signInWithEmailAndPassword, signOut } from "firebase/auth";
import {
  type DocumentReference,
  Timestamp,
  connectFirestoreEmulator,
  deleteDoc,
  disableNetwork,
  doc,
  enableNetwork,
  getFirestore,
  onSnapshot,
  setDoc,
  terminate,
} from "firebase/firestore";
import { Mutex, MutexError, MutexHeldError, MutexNotHeldError, MutexPermissionError, Mutexes, serverRead } from "../src/mutex";

function emulatorHost(name: string): { host: string; port: number } {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests with \`make test\` (go run ./cmd/emulate -- npm test)`);
  const i = v.lastIndexOf(":");
  return { host: v.slice(0, i), port: Number(v.slice(i + 1)) };
}

const firestoreAt = emulatorHost("FIRESTORE_EMULATOR_HOST");
const authAt = emulatorHost("FIREBASE_AUTH_EMULATOR_HOST");
const apps: FirebaseApp[] = [];

afterAll(async () => {
  await Promise.all(apps.map((a) => deleteApp(a)));
});

/** A project of its own per test: the emulator keeps projects' data apart. */
function newProject(): string {
  return `demo-web-${randomUUID().slice(0, 8)}`;
}

interface Client {
  uid: string;
  mutexes: Mutexes;
  app: FirebaseApp;
}

/** One signed-in user in an app of their own (as a browser tab would be). */
async function newClient(project: string, opts: { leaseSeconds?: number; email?: string; password?: string } = {}): Promise<Client> {
  const app = initializeApp({ projectId: project, apiKey: "fake-api-key" }, randomUUID());
  apps.push(app);
  const auth = getAuth(app);
  connectAuthEmulator(auth, `http://${authAt.host}:${String(authAt.port)}`, { disableWarnings: true });
  const db = getFirestore(app);
  connectFirestoreEmulator(db, firestoreAt.host, firestoreAt.port);
  const email = opts.email ?? `u-${randomUUID()}@example.com`;
  const password = opts.password ?? "secret-password";
  let uid: string;
  if (opts.email) {
    uid = (await signInWithEmailAndPassword(auth, email, password)).user.uid;
  } else {
    uid = (await createUserWithEmailAndPassword(auth, email, password)).user.uid;
  }
  return { uid, app, mutexes: new Mutexes(db, "critical_data", { leaseSeconds: opts.leaseSeconds ?? 30 }) };
}

/** What the server holds (a transaction's read: see serverRead). */
const serverGet = (ref: DocumentReference): ReturnType<typeof serverRead> => serverRead(ref.firestore, ref);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How p settled within ms, or "pending" if it had not by then. */
async function settledWithin<T>(p: Promise<T>, ms: number): Promise<PromiseSettledResult<T> | "pending"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"pending">((resolve) => (timer = setTimeout(() => resolve("pending"), ms)));
  try {
    return await Promise.race([Promise.allSettled([p]).then(([r]) => r as PromiseSettledResult<T>), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves when signal aborts; rejects if it has not within ms. */
function aborted(signal: AbortSignal, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const t = setTimeout(() => reject(new Error(`signal did not abort within ${String(ms)} ms`)), ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

/** Counts m's owner's renew calls (keepAlive renews through it); `fail` makes every one fail at once. */
function countRenewals(mutexes: Mutexes, fail?: Error): { readonly calls: number } {
  const counter = { calls: 0 };
  const renew = mutexes.renew.bind(mutexes);
  mutexes.renew = (m) => {
    counter.calls++;
    return fail ? Promise.reject(fail) : renew(m);
  };
  return counter;
}

function leaseEnd(m: Mutex): Timestamp {
  return new Timestamp(m.token.seconds + m.leaseSeconds, m.token.nanoseconds);
}

describe("Mutexes", () => {
  it("lets exactly one of many racing clients hold a mutex", async () => {
    const project = newProject();
    const clients = await Promise.all(Array.from({ length: 8 }, () => newClient(project)));
    const results = await Promise.allSettled(clients.map((c) => c.mutexes.tryAcquire("doc")));
    const won = results.flatMap((r, i) => (r.status === "fulfilled" ? [{ m: r.value, c: clients[i] }] : []));
    expect(won).toHaveLength(1);
    const winner = won[0];
    if (!winner?.c) throw new Error("no winner");
    for (const r of results) {
      if (r.status === "rejected") {
        expect(r.reason).toBeInstanceOf(MutexHeldError);
        expect((r.reason as MutexHeldError).owner).toBe(winner.c.uid);
      }
    }
    // What Firestore holds: one lease, the winner's grant.
    const s = await serverGet(winner.c.mutexes.mutexRef("doc"));
    expect(s.get("owner")).toBe(winner.c.uid);
    expect((s.get("acquiredAt") as Timestamp).isEqual(winner.m.token)).toBe(true);
  });

  it("takes over only after the lease ended by the server's clock", async () => {
    const project = newProject();
    const a = await newClient(project, { leaseSeconds: 1 });
    const b = await newClient(project, { leaseSeconds: 1 });
    const ma = await a.mutexes.tryAcquire("doc");
    const held = await b.mutexes.tryAcquire("doc").catch((e: unknown) => e);
    expect(held).toBeInstanceOf(MutexHeldError);
    expect((held as MutexHeldError).owner).toBe(a.uid);
    expect((held as MutexHeldError).until.isEqual(leaseEnd(ma))).toBe(true);
    const mb = await b.mutexes.acquire("doc", { timeoutMs: 10_000 });
    // The rules let b in at a server time at or after a's end.
    expect(mb.token.toMillis()).toBeGreaterThanOrEqual(leaseEnd(ma).toMillis());
    await expect(ma.renew()).rejects.toBeInstanceOf(MutexNotHeldError);
  });

  it("release never frees a newer grant, and is harmless once the lease is gone", async () => {
    const project = newProject();
    const a = await newClient(project, { leaseSeconds: 1 });
    const b = await newClient(project, { leaseSeconds: 30 });
    const ma = await a.mutexes.tryAcquire("doc");
    const mb = await b.mutexes.acquire("doc", { timeoutMs: 10_000 }); // after a's lease ended
    await expect(ma.release()).rejects.toBeInstanceOf(MutexNotHeldError);
    expect((await serverGet(b.mutexes.mutexRef("doc"))).get("owner")).toBe(b.uid);
    await mb.release();
    await expect(mb.release()).resolves.toBeUndefined();
    expect((await serverGet(b.mutexes.mutexRef("doc"))).exists()).toBe(false);
  });

  it("acquire waits out a network that is down instead of failing", async () => {
    const project = newProject();
    const a = await newClient(project);
    const db = getFirestore(a.app);
    await disableNetwork(db);
    const taking = a.mutexes.acquire("doc", { timeoutMs: 20_000 });
    await sleep(800);
    await enableNetwork(db);
    const m = await taking;
    expect((await serverGet(a.mutexes.mutexRef("doc"))).get("owner")).toBe(a.uid);
    await m.release();
  });

  it("acquire keeps its deadline and its signal while offline", async () => {
    const project = newProject();
    const a = await newClient(project);
    const db = getFirestore(a.app);
    await disableNetwork(db); // the grant's write stays queued in the SDK
    const timedOut = await settledWithin(a.mutexes.acquire("doc", { timeoutMs: 500 }), 3000);
    expect(timedOut).not.toBe("pending");
    expect(timedOut).toMatchObject({ status: "rejected", reason: expect.any(MutexError) as unknown });
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("user left")), 300);
    const abandoned = await settledWithin(a.mutexes.acquire("doc", { signal: ac.signal }), 3000);
    expect(abandoned).toMatchObject({ status: "rejected", reason: new Error("user left") });
    await enableNetwork(db);
  });

  it("a grant that lands after acquire gave up is released at once", async () => {
    const project = newProject();
    const a = await newClient(project, { leaseSeconds: 30 });
    const b = await newClient(project);
    const owners: string[] = [];
    const stopWatching = onSnapshot(b.mutexes.mutexRef("doc"), (s) => {
      const owner: unknown = s.get("owner");
      if (typeof owner === "string") owners.push(owner);
    });
    try {
      const db = getFirestore(a.app);
      await disableNetwork(db);
      await expect(a.mutexes.acquire("doc", { timeoutMs: 300 })).rejects.toBeInstanceOf(MutexError);
      await enableNetwork(db); // the abandoned grant lands now
      await expect.poll(() => owners, { timeout: 10_000 }).toContain(a.uid);
      // Well inside a's 30 s lease: the abandoned grant was given up.
      const mb = await b.mutexes.acquire("doc", { timeoutMs: 10_000 });
      expect((await serverGet(b.mutexes.mutexRef("doc"))).get("owner")).toBe(b.uid);
      await mb.release();
    } finally {
      stopWatching();
    }
  });

  it("acquire gives up at its deadline with who holds it", async () => {
    const project = newProject();
    const a = await newClient(project, { leaseSeconds: 30 });
    const b = await newClient(project);
    await a.mutexes.tryAcquire("doc");
    const err = await b.mutexes.acquire("doc", { timeoutMs: 600 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MutexHeldError);
    expect((err as MutexHeldError).owner).toBe(a.uid);
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("user left")), 300);
    await expect(b.mutexes.acquire("doc", { signal: ac.signal })).rejects.toThrow("user left");
  });

  it("acquire is woken when the holder releases", async () => {
    const project = newProject();
    const a = await newClient(project);
    const b = await newClient(project);
    const ma = await a.mutexes.tryAcquire("doc");
    const waiting = b.mutexes.acquire("doc", { timeoutMs: 20_000 });
    await sleep(300);
    await ma.release();
    const mb = await waiting;
    expect(mb.token.toMillis()).toBeGreaterThan(ma.token.toMillis());
  });

  it("keepAlive keeps the lease past its length, and stop lets it end", async () => {
    const project = newProject();
    const a = await newClient(project, { leaseSeconds: 2 });
    const b = await newClient(project, { leaseSeconds: 2 });
    const ma = await a.mutexes.tryAcquire("doc");
    const ka = ma.keepAlive();
    await sleep(5000); // two and a half leases
    expect(ka.signal.aborted).toBe(false);
    await expect(b.mutexes.tryAcquire("doc")).rejects.toBeInstanceOf(MutexHeldError);
    ka.stop();
    await expect(b.mutexes.acquire("doc", { timeoutMs: 10_000 })).resolves.toBeInstanceOf(Mutex);
  });

  it("keepAlive's signal fires when a renewal is refused", async () => {
    const project = newProject();
    const email = `u-${randomUUID()}@example.com`;
    const tab1 = await newClientSameUser(project, email, 3);
    const tab2 = await newClientSameUser(project, email, 3);
    const m1 = await tab1.mutexes.tryAcquire("doc");
    const ka = m1.keepAlive();
    // The user breaks the lock from another tab: the owner may delete it.
    await deleteDoc(tab2.mutexes.mutexRef("doc"));
    await new Promise<void>((resolve) => ka.signal.addEventListener("abort", () => resolve(), { once: true }));
    expect(ka.signal.reason).toBeInstanceOf(MutexNotHeldError);
    expect(String(ka.signal.reason)).toContain("the lease is gone");
    ka.stop();
  });

  it("keepAlive's signal fires in time when the network is gone", async () => {
    const project = newProject();
    const a = await newClient(project, { leaseSeconds: 2 });
    const ma = await a.mutexes.tryAcquire("doc");
    const ka = ma.keepAlive();
    const db = a.mutexes.mutexRef("doc").firestore;
    await disableNetwork(db); // renewals stay queued, their promises pending
    const lostAt = await new Promise<number>((resolve) => ka.signal.addEventListener("abort", () => resolve(performance.now()), { once: true }));
    expect(ka.signal.reason).toBeInstanceOf(MutexNotHeldError);
    expect(String(ka.signal.reason)).toContain("could not be renewed");
    // Not later than the lease end measured from before the grant.
    expect(lostAt).toBeLessThanOrEqual(ma.validFrom + 2000 + 50);
    ka.stop();
    await enableNetwork(db);
  });

  it("keepAlive ends at the first renewal after sign-out, without spinning", async () => {
    const project = newProject();
    const a = await newClient(project, { leaseSeconds: 3 });
    const ma = await a.mutexes.tryAcquire("doc");
    const renewals = countRenewals(a.mutexes);
    const ka = ma.keepAlive();
    await signOut(getAuth(a.app));
    await aborted(ka.signal, 5000);
    expect(ka.signal.reason).toBeInstanceOf(MutexPermissionError);
    await sleep(500); // nothing renews after the signal
    expect(renewals.calls).toBe(1);
    ka.stop();
  });

  it("keepAlive ends at the first renewal after its client was terminated", async () => {
    const project = newProject();
    const a = await newClient(project, { leaseSeconds: 3 });
    const ma = await a.mutexes.tryAcquire("doc");
    const renewals = countRenewals(a.mutexes);
    const ka = ma.keepAlive();
    await terminate(getFirestore(a.app));
    await aborted(ka.signal, 5000);
    expect(ka.signal.reason).toBeInstanceOf(MutexNotHeldError);
    expect(String(ka.signal.reason)).toContain("terminated");
    await sleep(500);
    expect(renewals.calls).toBe(1);
    ka.stop();
  });

  it("keepAlive backs off when renewals fail at once, until the lease ends", async () => {
    const project = newProject();
    const a = await newClient(project, { leaseSeconds: 3 });
    const ma = await a.mutexes.tryAcquire("doc");
    const renewals = countRenewals(a.mutexes, new Error("injected: renewal failed"));
    const ka = ma.keepAlive();
    await aborted(ka.signal, 5000);
    expect(String(ka.signal.reason)).toContain("could not be renewed");
    await sleep(500);
    // First try a third into the lease, then backing off: a handful, not thousands.
    expect(renewals.calls).toBeGreaterThanOrEqual(2);
    expect(renewals.calls).toBeLessThanOrEqual(6);
    ka.stop();
  });

  it("release signed out is a MutexPermissionError", async () => {
    const project = newProject();
    const a = await newClient(project);
    const ma = await a.mutexes.tryAcquire("doc");
    await signOut(getAuth(a.app));
    await expect(ma.release()).rejects.toBeInstanceOf(MutexPermissionError);
    // Another user signed in on the same app is refused the same way, and the lease stays.
    await createUserWithEmailAndPassword(getAuth(a.app), `u-${randomUUID()}@example.com`, "secret-password");
    await expect(ma.release()).rejects.toBeInstanceOf(MutexPermissionError);
    expect((await serverGet(a.mutexes.mutexRef("doc"))).get("owner")).toBe(a.uid);
  });

  it("withMutex writes the guarded document in the batch of the mutex check", async () => {
    const project = newProject();
    const a = await newClient(project);
    await a.mutexes.withMutex("doc", (w) => w.set({ content: "hello" }));
    const s = await serverGet(a.mutexes.guardedRef("doc"));
    expect(s.get("content")).toBe("hello");
    // Released afterwards: another user takes it at once.
    const b = await newClient(project);
    await expect(b.mutexes.tryAcquire("doc")).resolves.toBeInstanceOf(Mutex);
  });

  it("refuses guarded writes without a live lease, and writes nothing", async () => {
    const project = newProject();
    const a = await newClient(project, { leaseSeconds: 1 });
    const ma = await a.mutexes.tryAcquire("doc");
    await sleep(1300); // the lease ends by the server's clock
    const err = await a.mutexes.writeUnder(ma, (w) => w.set({ content: "late" })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MutexNotHeldError);
    expect(ma.lost.aborted).toBe(true);
    // Nor can anyone write it directly, without the mutex.
    const b = await newClient(project);
    await expect(setDoc(b.mutexes.guardedRef("doc"), { content: "sneaky" })).rejects.toMatchObject({ code: "permission-denied" });
    expect((await serverGet(a.mutexes.guardedRef("doc"))).exists()).toBe(false);
  });

  it("fences a stale tab of the same user: its renewal and writes are refused", async () => {
    const project = newProject();
    const email = `u-${randomUUID()}@example.com`;
    const t1 = await newClientSameUser(project, email, 1);
    const t2 = await newClientSameUser(project, email, 30);
    expect(t1.uid).toBe(t2.uid);
    const m1 = await t1.mutexes.tryAcquire("doc");
    await expect(t2.mutexes.tryAcquire("doc")).rejects.toBeInstanceOf(MutexHeldError); // not reentrant
    const m2 = await t2.mutexes.acquire("doc", { timeoutMs: 10_000 });
    await expect(m1.renew()).rejects.toThrow("another grant");
    await expect(t1.mutexes.writeUnder(m1, (w) => w.set({ content: "stale" }))).rejects.toBeInstanceOf(MutexNotHeldError);
    await expect(m1.release()).rejects.toBeInstanceOf(MutexNotHeldError);
    await t2.mutexes.writeUnder(m2, (w) => w.set({ content: "fresh" }));
    expect((await serverGet(t2.mutexes.guardedRef("doc"))).get("content")).toBe("fresh");
  });

  it("serializes read-modify-write of many concurrent clients", async () => {
    const project = newProject();
    const clients = await Promise.all(Array.from({ length: 6 }, () => newClient(project, { leaseSeconds: 10 })));
    const rounds = 4;
    await Promise.all(
      clients.map(async (c) => {
        for (let i = 0; i < rounds; i++) {
          await c.mutexes.withMutex(
            "counter",
            async (w) => {
              const s = await w.get();
              const n = s.exists() ? Number(s.get("content")) : 0;
              w.set({ content: String(n + 1) });
            },
            { timeoutMs: 25_000 },
          );
        }
      }),
    );
    const first = clients[0];
    if (!first) throw new Error("no clients");
    const s = await serverGet(doc(first.mutexes.guardedRef("counter").firestore, "critical_data", "counter"));
    expect(s.get("content")).toBe(String(clients.length * rounds));
  }, 120_000);
});

/** A client signed in as email (signed up on first use). */
async function newClientSameUser(project: string, email: string, leaseSeconds: number): Promise<Client> {
  try {
    return await newClient(project, { leaseSeconds, email });
  } catch {
    const app = initializeApp({ projectId: project, apiKey: "fake-api-key" }, randomUUID());
    const auth = getAuth(app);
    connectAuthEmulator(auth, `http://${authAt.host}:${String(authAt.port)}`, { disableWarnings: true });
    await createUserWithEmailAndPassword(auth, email, "secret-password");
    await deleteApp(app);
    return newClient(project, { leaseSeconds, email });
  }
}
