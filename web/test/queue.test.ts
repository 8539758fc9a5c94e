// The waiting room's pure logic (src/app/queue.ts): plain unit tests, no
// emulator needed.
import { describe, expect, it } from "vitest";
import { type SaleDoc, ServerClock, admitRatePerMinute, aheadOf, lineEstimate, queueId, queueState, waitMs, waitWords } from "../src/app/queue";

describe("queueId", () => {
  it("is the lowercase hex SHA-256 of screeningId/uid, as sale.QueueID and the rules compute it", async () => {
    // Expected values from Go: sale.QueueID("hot", "alice") and
    // sale.QueueID("e2e-1234", "uid-ü"), which `printf 'hot/alice' | sha256sum`
    // (and 'e2e-1234/uid-ü', UTF-8) agree with.
    expect(await queueId("hot", "alice")).toBe("1350bf20e69cf66147a10e8a1681775b983bce46f345bb048d3046362a8491d9");
    expect(await queueId("e2e-1234", "uid-ü")).toBe("511f2e0bba0d38c0959578491c7b7df08d101cd8a903bacfbd2bc6f2e97840d5");
  });
});

describe("queueState", () => {
  const now = 1_000_000;
  it("is none without a place, else the place's status", () => {
    expect(queueState(null, now)).toBe("none");
    expect(queueState(undefined, now)).toBe("none");
    expect(queueState({ status: "waiting" }, now)).toBe("waiting");
    expect(queueState({ status: "admitted", passUntilMs: now + 1 }, now)).toBe("admitted");
    expect(queueState({ status: "done", passUntilMs: now + 60_000 }, now)).toBe("done");
    expect(queueState({ status: "expired" }, now)).toBe("expired");
  });

  it("shows a pass past its passUntil as expired before the admitter marks it", () => {
    expect(queueState({ status: "admitted", passUntilMs: now }, now)).toBe("expired");
    expect(queueState({ status: "admitted" }, now)).toBe("expired");
  });
});

// Orders as docs/waiting-room.md gives them: "0" + a 32-digit hex draw for
// early joiners, "1" + 17 digits of µs + 12 of the queueId for later ones,
// and a tail mark "1" + 17 digits + "~".
const early = (draw: string) => "0" + draw.padEnd(32, "0");
const later = (us: number, tie = "abcdefabcdef") => "1" + String(us).padStart(17, "0") + tie;
const tail = (us: number) => "1" + String(us).padStart(17, "0") + "~";

describe("aheadOf", () => {
  it("is unknown without an order (an early joiner before the ranking reaches them)", () => {
    expect(aheadOf(undefined, { marks: [], admittedThrough: "" })).toBeUndefined();
    expect(aheadOf("", { marks: [], admittedThrough: "" })).toBeUndefined();
  });

  it("is 0 at or before admittedThrough", () => {
    const sale = { marks: [{ order: early("8"), ahead: 40 }], admittedThrough: early("4") };
    expect(aheadOf(early("4"), sale)).toBe(0);
    expect(aheadOf(early("3"), sale)).toBe(0);
  });

  it("takes a mark's count exactly at the mark", () => {
    const sale = { marks: [{ order: early("4"), ahead: 10 }, { order: early("8"), ahead: 20 }], admittedThrough: "" };
    expect(aheadOf(early("4"), sale)).toBe(10);
    expect(aheadOf(early("8"), sale)).toBe(20);
  });

  it("interpolates between marks of the same part of the line (draws are uniform, joins steady)", () => {
    const sale = { marks: [{ order: early("8"), ahead: 30 }, { order: early("4"), ahead: 10 }], admittedThrough: "" }; // unsorted on purpose
    expect(aheadOf(early("6"), sale)).toBe(20);
    expect(aheadOf(early("5"), sale)).toBe(15);
    const laterSale = { marks: [{ order: tail(1_000_000), ahead: 100 }, { order: tail(6_000_000), ahead: 200 }], admittedThrough: "" };
    expect(aheadOf(later(2_000_000), laterSale)).toBe(120);
  });

  it("counts from the front of the line (nobody ahead) before the first mark", () => {
    // Nobody admitted yet: an early joiner halfway to the first mark.
    expect(aheadOf(early("2"), { marks: [{ order: early("4"), ahead: 10 }], admittedThrough: "" })).toBe(5);
    // The admitted front of the line is the start.
    expect(aheadOf(early("6"), { marks: [{ order: early("8"), ahead: 10 }], admittedThrough: early("4") })).toBe(5);
  });

  it("takes the last mark before it when it cannot interpolate: after the last mark, or across parts of the line", () => {
    const sale = {
      marks: [
        { order: early("4"), ahead: 10 },
        { order: early("c"), ahead: 30 },
        { order: tail(5_000_000), ahead: 45 },
      ],
      admittedThrough: "",
    };
    expect(aheadOf(early("e"), sale), "an early joiner past the last early mark, before the first later one").toBe(30);
    expect(aheadOf("0~" + "1".repeat(32), sale), "a straggler").toBe(30);
    expect(aheadOf(later(9_000_000), sale), "past the last mark").toBe(45);
  });

  it("compares orders as Go does (bytewise), the tail mark's ~ after every tiebreak", () => {
    const sale = { marks: [{ order: tail(5_000_000), ahead: 7 }], admittedThrough: "" };
    expect(aheadOf(later(5_000_000, "ffffffffffff"), sale), "joined in the mark's microsecond: before it").toBe(0);
    expect(aheadOf(later(5_000_001), sale)).toBe(7);
  });
});

describe("lineEstimate", () => {
  // What the queue screen says to a user in line, from the public sale
  // document alone. The admitter's tail mark counts everyone waiting when
  // it was laid, the user's own place included when they joined before it.
  const cfg = { admitPerMinute: 10, maxActive: 100, passSeconds: 60 };
  const slow = { admitPerMinute: 60, maxActive: 1, passSeconds: 180 }; // one pass of 3 minutes at a time
  const me = later(5_000_000);
  type Case = {
    name: string;
    sale: Pick<SaleDoc, "state" | "waiting" | "marks" | "admittedThrough">;
    cfg?: typeof cfg;
    ahead: number;
    aheadText: string;
    waitText: string;
  };
  const cases: Case[] = [
    {
      name: "an empty line, paused: the only mark counts the user alone (the defect: about 1 ahead, about 3 minutes)",
      sale: { state: "paused", waiting: 1, marks: [{ order: tail(6_000_000), ahead: 1 }], admittedThrough: later(1_000_000) },
      cfg: slow,
      ahead: 0,
      aheadText: "You are at or near the front of the line.",
      waitText: "You will be let in as soon as the sale goes on.",
    },
    {
      name: "an empty line, open",
      sale: { state: "open", waiting: 1, marks: [{ order: tail(6_000_000), ahead: 1 }], admittedThrough: later(1_000_000) },
      cfg: slow,
      ahead: 0,
      aheadText: "You are at or near the front of the line.",
      waitText: "Your turn comes soon, as places free up.",
    },
    {
      name: "an empty line the sale document has not counted yet",
      sale: { state: "paused", waiting: 0, marks: [], admittedThrough: later(1_000_000) },
      ahead: 0,
      aheadText: "You are at or near the front of the line.",
      waitText: "You will be let in as soon as the sale goes on.",
    },
    {
      name: "the front of the line: nobody left before the user",
      sale: { state: "open", waiting: 4, marks: [{ order: tail(9_000_000), ahead: 4 }], admittedThrough: later(4_999_999) },
      ahead: 0,
      aheadText: "You are at or near the front of the line.",
      waitText: "Your turn comes soon, as places free up.",
    },
    {
      name: "30 ahead at 10 a minute, open",
      sale: { state: "open", waiting: 40, marks: [{ order: later(4_000_000), ahead: 30 }], admittedThrough: "" },
      ahead: 30,
      aheadText: "About 30 people ahead of you",
      waitText: "Estimated wait: about 3 minutes.",
    },
    {
      name: "30 ahead, paused: the wait counts from the resume",
      sale: { state: "paused", waiting: 40, marks: [{ order: later(4_000_000), ahead: 30 }], admittedThrough: "" },
      ahead: 30,
      aheadText: "About 30 people ahead of you",
      waitText: "Once the sale goes on, the estimated wait is about 3 minutes.",
    },
    {
      name: "one person ahead: the mark after the user counts them and the user",
      sale: { state: "open", waiting: 2, marks: [{ order: tail(6_000_000), ahead: 2 }], admittedThrough: later(1_000_000) },
      cfg: slow,
      ahead: 1,
      aheadText: "About 1 person ahead of you",
      waitText: "Estimated wait: about 3 minutes.",
    },
    {
      name: "never more ahead than are waiting",
      sale: { state: "open", waiting: 2, marks: [{ order: later(4_000_000), ahead: 5 }], admittedThrough: "" },
      ahead: 2,
      aheadText: "About 2 people ahead of you",
      waitText: "Estimated wait: less than a minute.",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(lineEstimate(me, c.sale, c.cfg ?? cfg)).toEqual({ ahead: c.ahead, aheadText: c.aheadText, waitText: c.waitText });
    });
  }

  it("is unknown while the user has no place in line yet", () => {
    expect(lineEstimate(undefined, { state: "open", waiting: 3, marks: [], admittedThrough: "" }, cfg)).toBeUndefined();
  });
});

describe("wait", () => {
  it("admits at admitPerMinute, or at maxActive per pass when that binds", () => {
    expect(admitRatePerMinute({ admitPerMinute: 100, maxActive: 1000, passSeconds: 600 })).toBe(100);
    expect(admitRatePerMinute({ admitPerMinute: 100, maxActive: 50, passSeconds: 600 })).toBe(5);
    expect(admitRatePerMinute({ admitPerMinute: 100, maxActive: 50 })).toBe(5); // passSeconds defaults to 600
  });

  it("waits ahead / rate", () => {
    expect(waitMs(0, { admitPerMinute: 10, maxActive: 100, passSeconds: 60 })).toBe(0);
    expect(waitMs(30, { admitPerMinute: 10, maxActive: 100, passSeconds: 60 })).toBe(3 * 60_000);
    expect(waitMs(30, { admitPerMinute: 10, maxActive: 1, passSeconds: 120 })).toBe(60 * 60_000);
  });

  it("says a wait in words", () => {
    expect(waitWords(0)).toBe("less than a minute");
    expect(waitWords(59_999)).toBe("less than a minute");
    expect(waitWords(80_000)).toBe("about a minute");
    expect(waitWords(4 * 60_000)).toBe("about 4 minutes");
    expect(waitWords(60 * 60_000)).toBe("about 1 hour");
    expect(waitWords(130 * 60_000)).toBe("about 2 h 10 min");
    expect(waitWords(Number.POSITIVE_INFINITY)).toBe("unknown");
  });
});

describe("ServerClock", () => {
  it("is the local clock until it sees a server time", () => {
    expect(new ServerClock().now(5_000)).toBe(5_000);
  });

  it("moves to the latest lower bound the server's timestamps give, never back", () => {
    const c = new ServerClock();
    c.sawAtLeast(10_000, 7_000); // the server read 10 s when the local clock read 7 s
    expect(c.now(8_000)).toBe(11_000);
    c.sawAtLeast(9_000, 8_000); // an old timestamp: a weaker bound
    expect(c.now(8_000)).toBe(11_000);
    c.sawAtLeast(12_500, 9_000);
    expect(c.now(9_000)).toBe(12_500);
  });

  it("follows a local clock that runs ahead of the server's", () => {
    const c = new ServerClock();
    c.sawAtLeast(1_000, 6_000);
    expect(c.now(6_000)).toBe(1_000);
  });
});
