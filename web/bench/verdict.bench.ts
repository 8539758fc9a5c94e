// The gate's offline verdict (issue #49's goal: p99 ≤ 20 ms in Chromium):
// the code's Ed25519 signature checked with WebCrypto against the cached
// key set, then judged on the local state of a sold-out hall (2,000
// tickets, half of them in). Here in Node's WebCrypto; e2e/door.spec.ts
// measures the same in Chromium, on the scanner page, offline.
// Vitest prints the percentiles (p99 column).
import { generateKeyPairSync, sign } from "node:crypto";
import { bench, describe } from "vitest";
import { importTicketKeys } from "../src/ticketcode";
import { type Entry, type GateState, type KnownTicket, decide } from "../src/app/verdict";

const { publicKey, privateKey } = generateKeyPairSync("ed25519");
const jwk = publicKey.export({ format: "jwk" }) as { kty: string; crv: string; x: string };
const keys = await importTicketKeys({ keys: [{ ...jwk, kid: "k1" }] });

const N = 2000;
const tickets = new Map<string, KnownTicket>();
const entries = new Map<string, Entry>();
const codes: string[] = [];
for (let i = 0; i < N; i++) {
  const t = `ticket-${String(i).padStart(16, "0")}`;
  const seat = `${String.fromCharCode(65 + Math.floor(i / 50))}${String((i % 50) + 1)}`;
  const signed = `FLT1.${Buffer.from(JSON.stringify({ t, s: "hall", seat, v: 1, k: "k1" })).toString("base64url")}`;
  codes.push(`${signed}.${sign(null, Buffer.from(signed), privateKey).toString("base64url")}`);
  tickets.set(t, { status: "valid", version: 1, seatId: seat });
  if (i % 2 === 0) entries.set(t, { state: "in", seq: 1, gate: "B", atMs: Date.now() - 60_000 });
}
const gate: GateState = {
  screeningId: "hall",
  gate: "A",
  direction: "in",
  nowMs: Date.now(),
  door: { opensAtMs: 0, gates: ["A", "B"], reentry: false },
  ticket: (id) => tickets.get(id),
  entry: (id) => entries.get(id),
};

let n = 0;
describe("offline verdict at a gate (2,000 tickets, half in)", () => {
  bench("decide: signature + local state", async () => {
    await decide(codes[n++ % N] ?? "", keys, gate);
  }, { time: 2000, warmupTime: 300 });
  bench("a forged code (signature fails)", async () => {
    await decide((codes[n++ % N] ?? "").replace(/.{4}$/, "AAAA"), keys, gate);
  }, { time: 1000, warmupTime: 200 });
});
