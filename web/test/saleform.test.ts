import { describe, expect, it } from "vitest";
import { fieldProblem, formProblems, isRFC3339 } from "../src/app/saleform";

// The console's own check of the configuration form (CONTRACT §7 ranges),
// in the function's words: pure, no emulator needed.
describe("the console's form check", () => {
  it("reads RFC 3339 as Go's time.RFC3339Nano does, and only real instants", () => {
    for (const ok of ["2026-12-01T18:00:00Z", "2026-12-01T18:00:00.123Z", "2026-12-01T19:00:00+01:00", "2028-02-29T00:00:00Z"]) expect(isRFC3339(ok), ok).toBe(true);
    for (const bad of ["", "2026-12-01", "2026-12-01 18:00:00Z", "2026-12-01T18:00Z", "2026-02-30T00:00:00Z", "2026-12-01T24:00:00Z", "2026-12-01T18:00:00+25:00", "tomorrow"]) {
      expect(isRFC3339(bad), bad).toBe(false);
    }
  });

  it("flags every wrong field at once, in the function's words", () => {
    const starts = Date.parse("2026-12-02T00:00:00Z");
    expect(formProblems({ opensAt: "2026-12-03T00:00:00Z", admitPerMinute: "", maxActive: "five", passSeconds: "29", maxSeatsPerUser: "1.5" }, starts)).toEqual({
      opensAt: "sale.opensAt must be before the screening's startsAt (2026-12-02T00:00:00Z), not 2026-12-03T00:00:00Z",
      admitPerMinute: "sale.admitPerMinute must be a whole number from 1 to 10000, not empty",
      maxActive: 'sale.maxActive must be a whole number from 1 to 100000, not the string "five"',
      passSeconds: "sale.passSeconds must be a whole number from 30 to 3600, not the number 29",
      maxSeatsPerUser: "sale.maxSeatsPerUser must be a whole number from 1 to 10, not the number 1.5",
    });
    expect(formProblems({ opensAt: "2026-12-01T18:00:00Z", admitPerMinute: "10000", maxActive: "1", passSeconds: "", maxSeatsPerUser: "" }, starts)).toEqual({});
    expect(fieldProblem("maxActive", " 100000 ")).toBe("");
    expect(fieldProblem("maxActive", "100001")).toMatch(/not the number 100001$/);
  });
});
