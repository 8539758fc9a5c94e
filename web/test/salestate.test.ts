import { describe, expect, it } from "vitest";
import { MAX_POLL_MS, nextPollMs, saleDocOf, saleStateBase } from "../src/app/salestate";

describe("nextPollMs", () => {
  it("polls every refreshSeconds near the front or when the wait is unknown", () => {
    expect(nextPollMs(1, undefined)).toBe(1000);
    expect(nextPollMs(1, 30_000)).toBe(1000);
    expect(nextPollMs(15, 60_000)).toBe(15_000);
  });
  it("polls less often further back, at least every 30 s", () => {
    expect(nextPollMs(1, 80_000)).toBe(20_000);
    expect(nextPollMs(1, 3_600_000)).toBe(MAX_POLL_MS);
    expect(nextPollMs(1, Number.POSITIVE_INFINITY)).toBe(1000);
  });
});

describe("saleDocOf", () => {
  it("turns the answer's times into Timestamps", () => {
    const d = saleDocOf({
      state: "open",
      opensAt: "2026-11-28T19:00:00Z",
      waiting: 3,
      admitted: 1,
      active: 1,
      seatsLeft: 5,
      admittedThrough: "1",
      marks: [{ order: "2", ahead: 1 }],
      updatedAt: "2026-11-28T19:00:01.5Z",
      refreshSeconds: 1,
    });
    expect(d.opensAt.toMillis()).toBe(Date.parse("2026-11-28T19:00:00Z"));
    expect(d.updatedAt.toMillis()).toBe(Date.parse("2026-11-28T19:00:01.5Z"));
    expect(d.marks).toEqual([{ order: "2", ahead: 1 }]);
  });
});

describe("saleStateBase", () => {
  it("polls the page's own origin (Hosting's rewrite and CDN) when deployed, the functions' URL locally", () => {
    expect(saleStateBase("https://europe-west1-p.cloudfunctions.net")).toBe("");
    expect(saleStateBase("http://127.0.0.1:5001")).toBe("http://127.0.0.1:5001");
  });
});
