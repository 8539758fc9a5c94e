import { Timestamp } from "firebase/firestore";
import { describe, expect, it } from "vitest";
import type { SaleDoc } from "../src/app/queue";
import { MAX_POLL_MS, PLACE_READS_PER_SECOND, nextPollMs, placeIsNear, placeReadDelayMs, saleDocOf, saleStateBase, seatMapIdle } from "../src/app/salestate";

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

describe("placeReadDelayMs", () => {
  it("spreads a line's first reads after the opening over waiting / PLACE_READS_PER_SECOND seconds", () => {
    expect(placeReadDelayMs(5000, 0, 0)).toBe(0);
    expect(placeReadDelayMs(5000, 0, 0.999)).toBe(9990);
    expect(placeReadDelayMs(200, 0, 0.5)).toBe(500); // a short line: within a second
    expect(placeReadDelayMs(1_000_000, 0, 0.999)).toBeLessThan(MAX_POLL_MS);
  });
  it("keeps a line of any length at PLACE_READS_PER_SECOND or fewer reads a second", () => {
    for (const waiting of [10, 1000, 5000, 15_000]) {
      const perSecond = new Map<number, number>();
      for (let i = 0; i < waiting; i++) {
        const s = Math.floor(placeReadDelayMs(waiting, 0, (i + 0.5) / waiting) / 1000);
        perSecond.set(s, (perSecond.get(s) ?? 0) + 1);
      }
      expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(PLACE_READS_PER_SECOND);
    }
  });
  it("waits twice as long after each read that found no order, never at once, at most MAX_POLL_MS", () => {
    expect(placeReadDelayMs(5000, 1, 0)).toBe(10_000);
    expect(placeReadDelayMs(5000, 1, 0.999)).toBe(19_990);
    expect(placeReadDelayMs(5000, 2, 0)).toBe(15_000); // half of the 30-s cap
    expect(placeReadDelayMs(5000, 9, 0.999)).toBeLessThan(MAX_POLL_MS);
    expect(placeReadDelayMs(100, 1, 0)).toBe(1000);
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

describe("placeIsNear", () => {
  const order = "1" + "0".repeat(17) + "abcdefabcdef";
  const sale = (over: Partial<SaleDoc>): SaleDoc => ({
    state: "open", opensAt: Timestamp.fromMillis(0), waiting: 2000, admitted: 0, active: 0, seatsLeft: 200,
    admittedThrough: "", marks: [], updatedAt: Timestamp.fromMillis(0), ...over,
  });
  const cfg = { admitPerMinute: 60 };
  it("is unknown, not the front, while the sale has published neither marks nor admittedThrough (a surge saw every page listen)", () => {
    expect(placeIsNear({ status: "waiting", order }, sale({}), cfg)).toBe(false);
  });
  it("is near once the line's published position puts it within a minute of admissions", () => {
    expect(placeIsNear({ status: "waiting", order }, sale({ marks: [{ order: "2", ahead: 50 }] }), cfg)).toBe(true);
    expect(placeIsNear({ status: "waiting", order }, sale({ admittedThrough: "0" + "f".repeat(31) }), cfg)).toBe(true);
  });
  it("is near only within one minute of admissions: no more than admitPerMinute can be let in before it", () => {
    const at = (ahead: number) => sale({ marks: [{ order: "1" + "5".repeat(17), ahead }] });
    expect(placeIsNear({ status: "waiting", order: "1" + "9".repeat(17) }, at(60), cfg)).toBe(true);
    expect(placeIsNear({ status: "waiting", order: "1" + "9".repeat(17) }, at(61), cfg)).toBe(false);
    expect(placeIsNear({ status: "waiting", order: "1" + "9".repeat(17) }, at(119), cfg)).toBe(false);
  });
  it("is far when the marks put it far back", () => {
    expect(placeIsNear({ status: "waiting", order: "1" + "9".repeat(17) }, sale({ marks: [{ order: "1" + "5".repeat(17), ahead: 900 }] }), cfg)).toBe(false);
  });
  it("is near, to listen, once admitted", () => {
    expect(placeIsNear({ status: "admitted", order }, sale({}), cfg)).toBe(true);
  });
});

describe("seatMapIdle", () => {
  const open0 = { state: "open" as const, seatsLeft: 0 };
  it("pauses an open sale's map that shows nothing free while SaleState says no seat is left", () => {
    expect(seatMapIdle("hhbb", 4, open0)).toBe(true);
    expect(seatMapIdle("bbbb", 4, open0)).toBe(true);
    expect(seatMapIdle("hhhh", 4, open0)).toBe(true);
  });
  it("never pauses while the map shows a seat free, wherever it is", () => {
    for (let i = 0; i < 4; i++) {
      const seats = `${"hhbb".slice(0, i)}.${"hhbb".slice(i + 1)}`;
      expect(seatMapIdle(seats, 4, open0), seats).toBe(false);
    }
    expect(seatMapIdle("hhb", 4, open0), "a seat the map has not written yet is free").toBe(false);
    expect(seatMapIdle("", 4, open0)).toBe(false);
  });
  it("never pauses while SaleState says a seat is left, even if the map shows none", () => {
    for (const seatsLeft of [1, 2, 200]) expect(seatMapIdle("hhbb", 4, { state: "open", seatsLeft })).toBe(false);
  });
  it("pauses during an operator's pause too: live passes go on choosing, and nothing is free to choose", () => {
    expect(seatMapIdle("hhbb", 4, { state: "paused", seatsLeft: 0 })).toBe(true);
    expect(seatMapIdle("hh.b", 4, { state: "paused", seatsLeft: 0 }), "a seat free").toBe(false);
    expect(seatMapIdle("hhbb", 4, { state: "paused", seatsLeft: 1 }), "a seat left").toBe(false);
  });
  it("never pauses outside an open or paused sale, nor without a map or a polled state", () => {
    for (const state of ["scheduled", "soldout", "closed"] as const) expect(seatMapIdle("hhbb", 4, { state, seatsLeft: 0 }), state).toBe(false);
    expect(seatMapIdle("hhbb", 4, undefined), "no sale state polled (or no sale)").toBe(false);
    expect(seatMapIdle(undefined, 4, open0), "no map yet").toBe(false);
    expect(seatMapIdle("", 0, open0), "no hall").toBe(false);
  });
  it("looks at the hall's seats only: characters past it do not count", () => {
    expect(seatMapIdle("hhbb.", 4, open0)).toBe(true);
  });
});
