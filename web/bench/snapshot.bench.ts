// How fast a booking reaches everyone's seat map: the time from BookSeats'
// `201` until another client's snapshot listener shows the seat booked, in
// Node with the JS SDK, against the local bundle (`make bench` runs it inside
// cmd/firelock-local). Baseline, in the same run: the time from a client's
// own write being acknowledged until another client's listener sees it, so
// the ratio says what going through the function adds to what Firestore's
// listeners cost anyway. Percentiles go to ../bench-results-web-latency.json.
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { afterAll, bench, describe } from "vitest";
import { type FirebaseApp, initializeApp } from "firebase/app";
import { connectAuthEmulator, createUserWithEmailAndPassword, getAuth } from "firebase/auth";
import { type DocumentReference, connectFirestoreEmulator, doc, getFirestore, onSnapshot, setDoc } from "firebase/firestore";

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`run with \`make bench\`: ${name} is not set`);
  return v;
};
const functionsURL = env("FIRELOCK_FUNCTIONS_URL");
const project = env("GOOGLE_CLOUD_PROJECT"); // the functions' project
const [fsHost = "", fsPort = ""] = env("FIRESTORE_EMULATOR_HOST").split(":");
const authHost = env("FIREBASE_AUTH_EMULATOR_HOST");

async function client(name: string): Promise<FirebaseApp> {
  const app = initializeApp({ projectId: project, apiKey: "fake-api-key" }, `${name}-${randomUUID()}`);
  connectAuthEmulator(getAuth(app), `http://${authHost}`, { disableWarnings: true });
  connectFirestoreEmulator(getFirestore(app), fsHost, Number(fsPort));
  await createUserWithEmailAndPassword(getAuth(app), `${name}-${randomUUID()}@example.com`, "secret-password");
  return app;
}
const booker = await client("booker");
const watcher = await client("watcher");
const watcherDb = getFirestore(watcher);
const bookerDb = getFirestore(booker);

// A screening with room for every iteration: 52 rows of 50 seats.
const screeningId = `bench-${randomUUID().slice(0, 8)}`;
const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ".split("");
const rows = [...letters, ...letters.map((l) => `A${l}`)];
const res = await fetch(`http://${fsHost}:${fsPort}/v1/projects/${project}/databases/(default)/documents/screenings/${screeningId}`, {
  method: "PATCH",
  headers: { Authorization: "Bearer owner", "Content-Type": "application/json" },
  body: JSON.stringify({
    fields: {
      title: { stringValue: "Benchmark" },
      startsAt: { timestampValue: new Date(Date.now() + 86_400_000).toISOString() },
      rows: { arrayValue: { values: rows.map((r) => ({ stringValue: r })) } },
      seatsPerRow: { integerValue: "50" },
    },
  }),
});
if (!res.ok) throw new Error(`create the screening: ${String(res.status)}`);
const seats = rows.flatMap((r) => Array.from({ length: 50 }, (_, i) => `${r}${String(i + 1)}`));

/** Resolves (with performance.now()) at the watcher's first snapshot where `seen` holds. */
async function watch(ref: DocumentReference, seen: (data: Record<string, unknown> | undefined) => boolean): Promise<{ at: Promise<number> }> {
  let ready!: () => void;
  const listening = new Promise<void>((r) => (ready = r));
  const at = new Promise<number>((resolve, reject) => {
    const stop = onSnapshot(
      ref,
      (snap) => {
        ready(); // the first snapshot: the listener is up
        if (seen(snap.data())) {
          stop();
          resolve(performance.now());
        }
      },
      reject,
    );
  });
  await listening;
  return { at };
}

// Each write's ms until the watcher's snapshot: from its acknowledgement (the
// 201, or setDoc resolving) and from the moment it was sent.
const samples = { viaFunction: [] as number[], baseline: [] as number[], viaFunctionFromSend: [] as number[], baselineFromSend: [] as number[] };
let next = 0;

/** One booking, measured: the ms from its 201 (and from its request) to the watcher's snapshot. */
async function bookAndWatch(): Promise<[number, number]> {
  const seat = seats[next++];
  if (!seat) throw new Error("out of seats: raise the screening's size");
  const w = await watch(doc(watcherDb, "screenings", screeningId, "seats", seat), (d) => d?.status === "booked");
  const token = await getAuth(booker).currentUser?.getIdToken();
  const sent = performance.now();
  const r = await fetch(`${functionsURL}/BookSeats`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token ?? ""}` },
    body: JSON.stringify({ screeningId, seats: [seat], requestId: randomUUID() }),
  });
  const t201 = performance.now();
  if (r.status !== 201) throw new Error(`BookSeats ${seat}: ${String(r.status)} ${await r.text()}`);
  const seen = await w.at;
  return [seen - t201, seen - sent];
}

/** One plain write, measured: the ms from its acknowledgement (and from its start) to the watcher's snapshot. */
async function writeAndWatch(): Promise<[number, number]> {
  const ref = doc(bookerDb, "versioned_notes", randomUUID());
  const w = await watch(doc(watcherDb, ref.path), (d) => d?.version === 1);
  const sent = performance.now();
  await setDoc(ref, { version: 1 });
  const acked = performance.now();
  const seen = await w.at;
  return [seen - acked, seen - sent];
}

// Warm up (the function's first requests, the listeners' streams) outside the samples.
for (let i = 0; i < 10; i++) {
  await bookAndWatch();
  await writeAndWatch();
}

describe("a write reaching another client's listener", () => {
  bench(
    "BookSeats 201 -> other client's snapshot shows the seat booked",
    async () => {
      const [fromAck, fromSend] = await bookAndWatch();
      samples.viaFunction.push(fromAck);
      samples.viaFunctionFromSend.push(fromSend);
    },
    { time: 6000, iterations: 150, warmupIterations: 0, warmupTime: 0 },
  );
  bench(
    "baseline: a client's setDoc acknowledged -> other client's snapshot shows it",
    async () => {
      const [fromAck, fromSend] = await writeAndWatch();
      samples.baseline.push(fromAck);
      samples.baselineFromSend.push(fromSend);
    },
    { time: 6000, iterations: 150, warmupIterations: 0, warmupTime: 0 },
  );
});

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}

afterAll(() => {
  const summary = Object.fromEntries(
    Object.entries(samples).map(([k, xs]) => [
      k,
      { n: xs.length, p50_ms: pct(xs, 50), p90_ms: pct(xs, 90), p99_ms: pct(xs, 99), min_ms: Math.min(...xs), max_ms: Math.max(...xs) },
    ]),
  );
  const ratio = summary.viaFunction && summary.baseline ? summary.viaFunction.p50_ms / summary.baseline.p50_ms : NaN;
  writeFileSync("../bench-results-web-latency.json", JSON.stringify({ when: new Date().toISOString(), ...summary, p50_ratio: ratio }, null, 2) + "\n");
  console.log("\nms until another client's snapshot shows the write: from its acknowledgement (negative: the snapshot came first), and *FromSend from its request");
  console.table(summary);
  console.log(`p50 ratio (via BookSeats / baseline): ${ratio.toFixed(2)}x`);
});
