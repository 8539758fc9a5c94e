// The user's holds as the page shows them (src/app/holds.ts): plain unit
// tests, no emulator needed.
import { describe, expect, it } from "vitest";
import { type HoldFacts, type HoldSetting, type HoldShown, showHold } from "../src/app/holds";

describe("showHold", () => {
  const now = 1_000_000;
  const live: HoldFacts = { seats: ["A10", "A9"], heldUntilMs: now + 60_000 };
  const free: HoldSetting = { nowMs: now, priced: false, revoked: false, canChoose: true };
  const priced: HoldSetting = { ...free, priced: true };
  const cases: { name: string; hold: HoldFacts; setting: HoldSetting; want: Partial<HoldShown> }[] = [
    { name: "a live hold of a free screening is confirmed", hold: live, setting: free, want: { phase: "held", actions: ["confirm", "extend", "release"], note: "" } },
    { name: "a live hold of a priced screening is paid", hold: live, setting: priced, want: { phase: "held", actions: ["pay", "extend", "release"], note: "" } },
    { name: "a hold being paid for is not extended", hold: { ...live, paying: true }, setting: priced, want: { phase: "paying", actions: ["pay", "release"] } },
    {
      name: "at its end it ran out: no action, its seats offered again on the map",
      hold: { ...live, heldUntilMs: now },
      setting: priced,
      want: { phase: "lapsed", actions: [], note: "Your hold ran out: A9 and A10 are free for anyone again. Choose them again on the map if you still want them." },
    },
    {
      name: "ran out with the map closed (the pass ended): nothing to choose them on",
      hold: { seats: ["B3"], heldUntilMs: now - 1 },
      setting: { ...free, canChoose: false },
      want: { phase: "lapsed", actions: [], note: "Your hold ran out: B3 is free for anyone again." },
    },
    {
      name: "ran out while being paid for: a late payment books or is refunded",
      hold: { seats: ["B3"], heldUntilMs: now - 1, paying: true },
      setting: priced,
      want: { phase: "lapsed", actions: [], note: "Your hold ran out: B3 is free for anyone again. A payment that still comes in books it if it is still free, or is refunded in full." },
    },
    {
      name: "revoked: released, however long it had left",
      hold: live,
      setting: { ...priced, revoked: true, canChoose: false },
      want: { phase: "revoked", actions: [], note: "Released as your pass ended: A9 and A10 are free for others again." },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(showHold(c.hold, c.setting)).toMatchObject(c.want);
    });
  }
});
