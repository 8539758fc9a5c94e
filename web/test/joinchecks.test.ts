import { describe, expect, it } from "vitest";
import { joinCheckWords } from "../src/app/joinchecks";

describe("joinCheckWords", () => {
  it("says nothing when App Check was off for every join", () => {
    expect(joinCheckWords({ valid: 0, missing: 0, invalid: 0 })).toBeUndefined();
  });
  it("counts the valid joins of those checked", () => {
    expect(joinCheckWords({ valid: 12, missing: 0, invalid: 0 })).toEqual({ value: "12 of 12 valid", note: "every checked join had a valid token", unchecked: 0 });
  });
  it("names the joins without a token and with an invalid one", () => {
    const w = joinCheckWords({ valid: 1200, missing: 500, invalid: 3 });
    expect(w?.value).toBe("1,200 of 1,703 valid");
    expect(w?.unchecked).toBe(503);
    expect(w?.note).toMatch(/^500 without a token, 3 with an invalid one/);
  });
});
