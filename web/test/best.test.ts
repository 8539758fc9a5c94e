// Best available's pure logic (src/app/best.ts): plain unit tests.
import { describe, expect, it } from "vitest";
import { MAX_COUNT, bestWhy, countChoices, rowOrder } from "../src/app/best";

describe("countChoices", () => {
  it("offers 1 to 10 seats, or up to a sale's lower seat cap", () => {
    expect(countChoices()).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(MAX_COUNT).toBe(10);
    expect(countChoices(4)).toEqual([1, 2, 3, 4]);
    expect(countChoices(1)).toEqual([1]);
    expect(countChoices(20)).toHaveLength(10);
  });
});

describe("rowOrder and bestWhy (issue #50.7)", () => {
  const ten = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"];
  it("ranks rows as the server does (docs/booking.md: ten rows A-J: G H F I E J D C B A)", () => {
    expect(rowOrder(ten).join(" ")).toBe("G H F I E J D C B A");
    expect(rowOrder(ten, ["D", "Z", "D", 3]).join(" ")).toBe("D G H F I E J C B A");
  });
  it("says why those seats", () => {
    expect(bestWhy(ten, ["D"], ["D9", "D10", "D11"])).toBe("the best block of 3 left: row D is this screening's preferred row");
    expect(bestWhy(ten, undefined, ["G9", "G10"])).toBe("the best block of 2 left: row G is the preferred row (about two thirds back)");
    expect(bestWhy(ten, ["D"], ["G1", "G2", "G3"])).toBe("the best block of 3 left: row D is this screening's preferred row, and row D had no 3 free seats together without stranding a single seat");
    expect(bestWhy(ten, undefined, ["E4"])).toBe("the best seat left: row G is the preferred row (about two thirds back), and the 4 rows ranked before it had no free seat");
    expect(bestWhy(ten, undefined, ["A1", "B1"])).toMatch(/no row has 2 free seats together/);
  });
});
