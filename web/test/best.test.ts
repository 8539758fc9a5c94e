// Best available's pure logic (src/app/best.ts): plain unit tests.
import { describe, expect, it } from "vitest";
import { MAX_COUNT, countChoices } from "../src/app/best";

describe("countChoices", () => {
  it("offers 1 to 10 seats, or up to a sale's lower seat cap", () => {
    expect(countChoices()).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(MAX_COUNT).toBe(10);
    expect(countChoices(4)).toEqual([1, 2, 3, 4]);
    expect(countChoices(1)).toEqual([1]);
    expect(countChoices(20)).toHaveLength(10);
  });
});
