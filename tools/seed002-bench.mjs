// The seed text 002's pattern as a benchmark peer: a `withLock` helper on
// firebase-admin (Node), a lock document taken in a transaction (read it;
// refuse while its expiry lies ahead; write owner and expiry), the work
// under the lock, and a release in a transaction that deletes only the
// owner's lock. Here the work books one seat: read it, create it if free.
// cmd/bench runs it beside firelock on the same emulator, when Node is
// present, so the ratio against it is reproducible.
//
//   node tools/seed002-bench.mjs --project P --screening S --concurrency 32 --duration-ms 3000
//
// It prints one JSON line: {ops, errors, opsPerSecond, p50Ms, p99Ms, firstError}.
// FIRESTORE_EMULATOR_HOST must name the emulator.
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { initializeApp } from "firebase-admin/app";
import { FieldValue, Timestamp, getFirestore } from "firebase-admin/firestore";

const { values: args } = parseArgs({
  options: {
    project: { type: "string" },
    screening: { type: "string" },
    concurrency: { type: "string", default: "32" },
    "duration-ms": { type: "string", default: "3000" },
    offset: { type: "string", default: "0" },
  },
});
if (!args.project || !args.screening || !process.env.FIRESTORE_EMULATOR_HOST) {
  console.error("usage: FIRESTORE_EMULATOR_HOST=... node tools/seed002-bench.mjs --project P --screening S [--concurrency N] [--duration-ms MS]");
  process.exit(2);
}

const db = getFirestore(initializeApp({ projectId: args.project }));

class Held extends Error {}
class Taken extends Error {}

// withLock as the seed writes it: a transaction takes the lock document
// unless a live lock is there; the work runs; the owner deletes its lock.
async function withLock(key, fn, ttlMs = 10_000) {
  const ref = db.collection("seed002Locks").doc(key);
  const owner = randomUUID();
  await db.runTransaction(async (tx) => {
    const snap = await tx.get(ref);
    if (snap.exists && snap.get("expiresAt").toMillis() > Date.now()) throw new Held(key);
    tx.set(ref, { owner, expiresAt: Timestamp.fromMillis(Date.now() + ttlMs) });
  });
  try {
    return await fn();
  } finally {
    await db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      if (snap.exists && snap.get("owner") === owner) tx.delete(ref);
    });
  }
}

async function book(seat, uid) {
  await withLock(`${args.screening}_${seat}`, async () => {
    const ref = db.doc(`screenings/${args.screening}/seats/${seat}`);
    if ((await ref.get()).exists) throw new Taken(seat);
    await ref.create({ status: "booked", uid, bookedAt: FieldValue.serverTimestamp() });
  });
}

// The n-th seat of a 26x999 screening, as cmd/bench numbers them.
const seatN = (n) => `${String.fromCharCode(65 + (Math.floor(n / 999) % 26))}${1 + (n % 999)}`;

const workers = Number(args.concurrency);
const durationMs = Number(args["duration-ms"]);
let next = Number(args.offset);
const latencies = [];
let errors = 0;
let firstError;
const start = performance.now();
const deadline = start + durationMs;
await Promise.all(
  Array.from({ length: workers }, async (_, w) => {
    while (performance.now() < deadline) {
      const t = performance.now();
      try {
        await book(seatN(++next), `u${w}`);
        latencies.push(performance.now() - t);
      } catch (err) {
        errors++;
        firstError ??= String(err);
      }
    }
  }),
);
const elapsed = (performance.now() - start) / 1000;
latencies.sort((a, b) => a - b);
const q = (p) => (latencies.length ? latencies[Math.floor(p * (latencies.length - 1))] : 0);
console.log(JSON.stringify({ ops: latencies.length, errors, opsPerSecond: latencies.length / elapsed, p50Ms: q(0.5), p99Ms: q(0.99), firstError }));
await db.terminate();
