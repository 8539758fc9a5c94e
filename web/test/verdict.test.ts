// The gate's verdict (src/app/verdict.ts), the console's door figures
// (doorpanel.ts) and the tickets' words (ticketview.ts): pure logic, with
// codes signed here by Node's Ed25519 as the Go package signs them.
import { generateKeyPairSync, sign } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type TicketKeySet, importTicketKeys } from "../src/ticketcode";
import { type Entry, type GateState, type KnownTicket, decide, judge, nextEntry, resultOfError, verdictWords } from "../src/app/verdict";
import { doorFigures, doorProblems, gateList } from "../src/app/doorpanel";
import { orderRef, ticketState, whenWords } from "../src/app/ticketview";

const { publicKey, privateKey } = generateKeyPairSync("ed25519");
const set: TicketKeySet = { keys: [{ ...(publicKey.export({ format: "jwk" }) as { kty: string; crv: string; x: string }), kid: "k1" }] };
const b64url = (b: Buffer) => b.toString("base64url");
function code(t: string, s = "s1", seat = "F12", v = 1): string {
  const signed = `FLT1.${b64url(Buffer.from(JSON.stringify({ t, s, seat, v, k: "k1" })))}`;
  return `${signed}.${b64url(sign(null, Buffer.from(signed), privateKey))}`;
}

const open = { opensAtMs: 0, gates: ["A", "B"], reentry: false };
function gate(over: Partial<GateState> = {}, tickets: Record<string, KnownTicket> = {}, entries: Record<string, Entry> = {}): GateState {
  return { screeningId: "s1", gate: "A", direction: "in", nowMs: 1_000, door: open, ticket: (id) => tickets[id], entry: (id) => entries[id], ...over };
}

describe("the gate's verdict", () => {
  it("lets a genuine code in once, then says where and when it went in", async () => {
    const keys = await importTicketKeys(set);
    expect((await decide(code("t1"), keys, gate())).result).toBe("admitted");
    const entry = nextEntry(undefined, "in", "B", 500, "n".repeat(22));
    const v = await decide(code("t1"), keys, gate({}, {}, { t1: entry }));
    expect(v.result).toBe("already_in");
    expect(v.entry).toMatchObject({ gate: "B", seq: 1 });
    expect(verdictWords(v, 500 + 3 * 60_000).detail).toBe("Seat F12. Went in at gate B, 3 min ago");
  });

  it("refuses a forged, cancelled, old, foreign or early code", async () => {
    const keys = await importTicketKeys(set);
    const forged = code("t1").replace(/.$/, (c) => (c === "A" ? "B" : "A"));
    expect(await decide(forged, keys, gate())).toMatchObject({ result: "invalid" });
    expect((await decide(code("t1"), keys, gate({}, { t1: { status: "cancelled", version: 1 } }))).result).toBe("cancelled");
    expect((await decide(code("t1", "s1", "F12", 1), keys, gate({}, { t1: { status: "valid", version: 2 } }))).result).toBe("reissued");
    expect(await decide(code("t1", "s2"), keys, gate())).toMatchObject({ result: "wrong_screening", screeningId: "s2" });
    expect((await decide(code("t1"), keys, gate({ door: undefined }))).result).toBe("door_closed");
    expect((await decide(code("t1"), keys, gate({ door: { ...open, opensAtMs: 5_000 } }))).result).toBe("door_closed");
  });

  it("lets a ticket out and in again only with re-entry, each entry the next seq", () => {
    const claims = { ticketId: "t1", screeningId: "s1", seatId: "F12", version: 1, keyId: "k1" };
    const inside = nextEntry(undefined, "in", "A", 1, "n1");
    expect(judge(claims, gate({ direction: "out" }, {}, { t1: inside })).result).toBe("no_reentry");
    const door = { ...open, reentry: true };
    expect(judge(claims, gate({ direction: "out", door }, {}, { t1: inside })).result).toBe("exited");
    expect(judge(claims, gate({ direction: "out", door })).result).toBe("not_in");
    const out = nextEntry(inside, "out", "A", 2, "n2");
    expect(out).toMatchObject({ state: "out", seq: 2 });
    expect(judge(claims, gate({ door }, {}, { t1: out })).result).toBe("admitted");
  });

  it("reads CheckIn's error codes as scan results", () => {
    expect(resultOfError("ticket_reissued")).toBe("reissued");
    expect(resultOfError("ticket_cancelled")).toBe("cancelled");
    expect(resultOfError("invalid_ticket")).toBe("invalid");
    expect(resultOfError("already_in")).toBe("already_in");
    expect(resultOfError("not_scanner")).toBeUndefined();
  });
});

describe("the console's door figures", () => {
  it("counts who is in, conflicts by gate and arrivals per minute without gaps", () => {
    const at = (ms: number) => ({ toMillis: () => ms }) as never;
    const f = doorFigures(
      [{ state: "in" }, { state: "in" }, { state: "out" }],
      [
        { gate: "A", result: "admitted", at: at(60_000) },
        { gate: "A", result: "admitted", at: at(61_000) },
        { gate: "B", result: "admitted", at: at(180_000) },
        { gate: "B", result: "conflict", at: at(190_000) },
        { gate: "B", result: "already_in", at: at(191_000) },
      ],
      ["A", "B", "C"],
    );
    expect(f).toMatchObject({ inNow: 2, arrived: 3, conflicts: 1 });
    expect(f.byGate.get("B")).toEqual({ admitted: 1, conflicts: 1, refused: 1 });
    expect(f.byGate.get("C")).toEqual({ admitted: 0, conflicts: 0, refused: 0 });
    expect(f.perMinute).toEqual({ starts: [60_000, 120_000, 180_000], counts: [2, 0, 1] });
  });

  it("checks the door's form as the function would", () => {
    expect(doorProblems({ opensAt: "2026-11-28T18:30:00Z", gates: "A, B" })).toEqual({});
    expect(doorProblems({ opensAt: "tomorrow", gates: "A" }).opensAt).toMatch(/RFC 3339/);
    expect(doorProblems({ opensAt: "2026-11-28T18:30:00Z", gates: "" }).gates).toMatch(/at least one/);
    expect(doorProblems({ opensAt: "2026-11-28T18:30:00Z", gates: "A, A" }).gates).toMatch(/twice/);
    expect(gateList(" A,B  C ")).toEqual(["A", "B", "C"]);
  });
});

describe("the buyer's tickets", () => {
  it("shows a ticket's state from its status, its entry and a transfer", () => {
    expect(ticketState({ status: "valid", version: 1 }, undefined, false)).toBe("valid");
    expect(ticketState({ status: "valid", version: 1 }, { state: "in", version: 1 }, false)).toBe("in");
    expect(ticketState({ status: "valid", version: 2 }, { state: "in", version: 1 }, false)).toBe("valid");
    expect(ticketState({ status: "cancelled", version: 1 }, undefined, false)).toBe("cancelled");
    expect(ticketState({ status: "valid", version: 1 }, undefined, true)).toBe("reissued");
  });

  it("writes a time in the screening's own zone, with the zone", () => {
    const t = Date.UTC(2026, 10, 28, 18, 30);
    expect(whenWords(t, "Europe/Berlin", "en-GB")).toMatch(/19:30 CET/);
    expect(whenWords(t, "America/New_York", "en-US")).toMatch(/13:30 EST/);
    expect(whenWords(t, "Not/AZone", "en-GB")).toMatch(/\d\d:\d\d/);
  });

  it("gives an order reference from a booking id", () => {
    expect(orderRef("7f3k9qxdZZZZ")).toBe("7F3K-9QXD");
  });
});
