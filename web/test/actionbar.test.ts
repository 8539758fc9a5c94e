// The phone's action bar (src/app/actionbar.ts): plain unit tests, no emulator needed.
import { describe, expect, it } from "vitest";
import { type BarFacts, nextStep } from "../src/app/actionbar";

describe("nextStep", () => {
  const now = 1_000_000;
  const base: BarFacts = { signedIn: true, choosing: true, selection: [], holds: [], price: undefined, nowMs: now, findCount: 2 };
  const price = { amount: 900, currency: "eur", rows: { A: 1500 } };
  it("signed out: sign in", () => {
    expect(nextStep({ ...base, signedIn: false })).toMatchObject({ action: "sign-in", label: "Sign in", total: "" });
  });
  it("nothing chosen: find seats, by best available's count", () => {
    expect(nextStep(base)).toMatchObject({ action: "find", label: "Find 2 seats" });
    expect(nextStep({ ...base, findCount: undefined })).toMatchObject({ action: undefined });
  });
  it("a selection: hold it, with its total in money or in seats", () => {
    expect(nextStep({ ...base, selection: ["A1", "C3"], price })).toMatchObject({ action: "hold", label: "Hold 2 seats", total: "€24.00", text: "A1 and C3" });
    expect(nextStep({ ...base, selection: ["C3"] })).toMatchObject({ action: "hold", label: "Hold 1 seat", total: "1 seat" });
  });
  it("a live hold comes before the selection: pay it, or confirm it when free", () => {
    const holds = [{ holdId: "h1", seats: ["E9", "E10"], heldUntilMs: now + 61_000 }];
    expect(nextStep({ ...base, selection: ["C3"], holds, price })).toEqual({ action: "pay", label: "Pay", total: "€18.00", holdId: "h1", text: "E9 and E10 held for you · 1:01" });
    expect(nextStep({ ...base, holds })).toMatchObject({ action: "confirm", holdId: "h1", total: "2 seats" });
    expect(nextStep({ ...base, holds: [{ ...holds[0], paying: true }] as BarFacts["holds"], price })).toMatchObject({ action: "pay", label: "Continue paying" });
  });
  it("a hold that ran out is no step; a sale's waiting room has none", () => {
    expect(nextStep({ ...base, holds: [{ holdId: "h1", seats: ["E9"], heldUntilMs: now }] })).toMatchObject({ action: "find" });
    expect(nextStep({ ...base, choosing: false })).toBeUndefined();
    expect(nextStep({ ...base, choosing: false, holds: [{ holdId: "h1", seats: ["E9"], heldUntilMs: now + 1000 }], price })).toMatchObject({ action: "pay" });
  });
});
