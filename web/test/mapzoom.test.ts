// The seat map's zoom arithmetic (src/app/mapzoom.ts): plain unit tests.
import { describe, expect, it } from "vitest";
import { FIRST, MAX, MIN_TAP, ROOMY, anchoredScroll, clampSize, firstSize } from "../src/app/mapzoom";

describe("mapzoom", () => {
  it("the first zoom is a finger's size, or as large as fits up to ROOMY", () => {
    expect(firstSize(11.3)).toBe(FIRST); // a 20-seat hall on a 360-px phone pans
    expect(firstSize(29.8)).toBe(29);
    expect(firstSize(80)).toBe(ROOMY);
    expect(FIRST).toBeGreaterThanOrEqual(24);
  });
  it("zooming goes out to the whole hall, in to MAX", () => {
    expect(clampSize(5, 11.3)).toBe(11.3);
    expect(clampSize(5, 40)).toBe(MIN_TAP); // a hall that fits never shrinks below a finger's size
    expect(clampSize(500, 11.3)).toBe(MAX);
  });
  it("the spot under the finger stays put", () => {
    // 100 px scrolled, finger 50 px into the box: the spot is 150 px into the map, 300 px after doubling.
    expect(anchoredScroll(100, 50, 2)).toBe(250);
    expect(anchoredScroll(0, 10, 0.5)).toBe(0);
  });
});
