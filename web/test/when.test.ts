// One time format with its zone (src/app/when.ts, issue #50.4): plain unit tests, in two zones.
import { describe, expect, it } from "vitest";
import { clockWords, whenExact, whenWords, zoneName } from "../src/app/when";

describe("when", () => {
  const winter = Date.UTC(2026, 10, 28, 15, 0, 5); // Sat 28 Nov 2026, 15:00:05 UTC
  const summer = Date.UTC(2026, 6, 4, 18, 30); // Sat 4 Jul 2026, 18:30 UTC
  it("in Berlin: CET in winter, CEST in summer", () => {
    expect(whenWords(winter, "Europe/Berlin")).toBe("Sat 28 Nov, 16:00 CET");
    expect(whenWords(summer, "Europe/Berlin")).toBe("Sat 4 Jul, 20:30 CEST");
    expect(whenExact(winter, "Europe/Berlin")).toBe("Sat 28 Nov, 16:00:05 CET");
    expect(clockWords(winter, "Europe/Berlin")).toBe("16:00 CET");
    expect(zoneName(summer, "Europe/Berlin")).toBe("CEST");
  });
  it("in London: GMT in winter, BST in summer", () => {
    expect(whenWords(winter, "Europe/London")).toBe("Sat 28 Nov, 15:00 GMT");
    expect(whenWords(summer, "Europe/London")).toBe("Sat 4 Jul, 19:30 BST");
    expect(clockWords(summer, "Europe/London")).toBe("19:30 BST");
  });
  it("a zone without a short name gives its offset; an unknown zone falls back to the browser's, still with a zone", () => {
    expect(whenWords(winter, "Asia/Kolkata")).toBe("Sat 28 Nov, 20:30 GMT+5:30");
    expect(whenWords(winter, "Not/AZone")).toMatch(/^Sat 28 Nov, \d\d:\d\d \S+$/);
    expect(zoneName(winter, "Not/AZone")).not.toBe("");
  });
});
