// The seat map's pure logic (src/app/seats.ts) and the app's config parsing:
// plain unit tests, no emulator needed.
import { describe, expect, it } from "vitest";
import { Timestamp } from "firebase/firestore";
import { functionsURLFor, hostPort, optionsFromEnv } from "../src/app/config";
import { MAX_HALL_SEATS, countdown, errorMessage, layoutProblem, seatGrid, seatList, seatState, seatStateFromMap } from "../src/app/seats";

const none = { bookings: new Set<string>(), holds: new Set<string>(), bookedSeats: new Set<string>(), heldSeats: new Set<string>() };
const now = Date.parse("2026-11-23T10:00:00Z");
const at = (ms: number) => Timestamp.fromMillis(ms);

describe("seatState", () => {
  it("maps the §3 seat documents to the §6 states", () => {
    expect(seatState(undefined, "A1", false, none, now)).toBe("free");
    expect(seatState(undefined, "A1", true, none, now)).toBe("selected");
    expect(seatState({ status: "booked", bookingId: "b1" }, "A1", false, none, now)).toBe("booked");
    expect(seatState({ status: "booked", bookingId: "b1" }, "A1", false, { ...none, bookings: new Set(["b1"]) }, now)).toBe("mine-booked");
    expect(seatState({ status: "held", holdId: "h1", heldUntil: at(now + 1000) }, "A1", false, none, now)).toBe("held");
    expect(seatState({ status: "held", holdId: "h1", heldUntil: at(now + 1000) }, "A1", false, { ...none, holds: new Set(["h1"]) }, now)).toBe("mine-held");
  });

  it("shows a hold past its heldUntil as free, whether or not its document is gone", () => {
    const lapsed = { status: "held" as const, holdId: "h1", heldUntil: at(now) };
    expect(seatState(lapsed, "A1", false, none, now)).toBe("free");
    expect(seatState(lapsed, "A1", true, none, now)).toBe("selected");
    expect(seatState(lapsed, "A1", false, { ...none, holds: new Set(["h1"]) }, now)).toBe("free");
  });

  it("draws the user's own booking and live hold as theirs before the seat listener has them", () => {
    // The user's own documents say so: a seat listener that has not delivered
    // the write yet (or, on the emulator, lost it while its stream restarted
    // at sign-in) must not draw the user's own seats free beside "My bookings".
    const m = { ...none, bookings: new Set(["b1"]), bookedSeats: new Set(["C5"]), holds: new Set(["h1"]), heldSeats: new Set(["C7"]) };
    expect(seatState(undefined, "C5", false, m, now)).toBe("mine-booked");
    expect(seatState(undefined, "C7", false, m, now)).toBe("mine-held");
    expect(seatState(undefined, "C6", false, m, now)).toBe("free");
  });

  it("draws a seat free whose document still names the user's own booking or hold that ended", () => {
    // Cancelled or released: the answer came before the seat listener's
    // delete, and the seat must not show as someone else's meanwhile.
    const m = { ...none, ended: new Set(["b1", "h1"]) };
    expect(seatState({ status: "booked", bookingId: "b1" }, "C5", false, m, now)).toBe("free");
    expect(seatState({ status: "held", holdId: "h1", heldUntil: at(now + 1000) }, "C7", false, m, now)).toBe("free");
    expect(seatState({ status: "booked", bookingId: "b2" }, "C6", false, m, now)).toBe("booked");
    // A hold confirmed into a booking: the booking's seats are the user's.
    expect(seatState({ status: "held", holdId: "h1", heldUntil: at(now + 1000) }, "C7", false, { ...m, bookedSeats: new Set(["C7"]) }, now)).toBe("mine-booked");
  });

  it("a booked seat stays booked even if it was selected", () => {
    expect(seatState({ status: "booked", bookingId: "b1" }, "A1", true, none, now)).toBe("booked");
  });
});

describe("seatStateFromMap (a sale's one-document map, CONTRACT §7a)", () => {
  // "b.h" for A1 A2 A3: the character is the seat's index in seatGrid's order.
  const map = "b.h";
  const ch = (seat: string) => map[seatGrid({ rows: ["A"], seatsPerRow: 3 }).flat().indexOf(seat)];
  it("reads b, h and . as booked, held and free", () => {
    expect(seatStateFromMap(ch("A1"), "A1", false, none)).toBe("booked");
    expect(seatStateFromMap(ch("A2"), "A2", false, none)).toBe("free");
    expect(seatStateFromMap(ch("A2"), "A2", true, none)).toBe("selected");
    expect(seatStateFromMap(ch("A3"), "A3", false, none)).toBe("held");
  });
  it("shows the user's own seats as theirs, from their documents, even before the map has them", () => {
    expect(seatStateFromMap(ch("A1"), "A1", false, { ...none, bookedSeats: new Set(["A1"]) })).toBe("mine-booked");
    expect(seatStateFromMap(ch("A2"), "A2", false, { ...none, heldSeats: new Set(["A2"]) })).toBe("mine-held");
    expect(seatStateFromMap(ch("A3"), "A3", true, { ...none, heldSeats: new Set(["A3"]) })).toBe("mine-held");
  });
  it("a seat the map does not have yet is free", () => {
    expect(seatStateFromMap(undefined, "A4", false, none)).toBe("free");
  });
});

describe("formatting", () => {
  it("counts down as m:ss, rounding up and never below 0:00", () => {
    expect(countdown(420_000)).toBe("7:00");
    expect(countdown(419_001)).toBe("7:00");
    expect(countdown(61_000)).toBe("1:01");
    expect(countdown(9_500)).toBe("0:10");
    expect(countdown(0)).toBe("0:00");
    expect(countdown(-5_000)).toBe("0:00");
  });

  it("counts an hour as 60:00 (a pass's longest) and longer waits as h:mm:ss", () => {
    expect(countdown(3_600_000)).toBe("60:00");
    expect(countdown(3_600_001)).toBe("1:00:01");
    expect(countdown(26 * 3_600_000 + 5 * 60_000 + 9_000)).toBe("26:05:09");
  });

  it("lists seats as people write them", () => {
    expect(seatList([])).toBe("");
    expect(seatList(["F12"])).toBe("F12");
    expect(seatList(["F12", "F13"])).toBe("F12 and F13");
    expect(seatList(["F12", "F13", "F14"])).toBe("F12, F13 and F14");
    // In row and number order, whatever order the server or the user gave
    // (a booking of C9 and C10 read "C10 and C9": issue #29.16).
    expect(seatList(["C10", "C9"])).toBe("C9 and C10");
    expect(seatList(["B2", "A10", "A9", "B1"])).toBe("A9, A10, B1 and B2");
  });

  it("lays out the seats row by row", () => {
    expect(seatGrid({ rows: ["A", "B"], seatsPerRow: 3 })).toEqual([
      ["A1", "A2", "A3"],
      ["B1", "B2", "B3"],
    ]);
  });

  // booking.MaxHallSeats: the server refuses a layout over 100,000 seats as
  // malformed; the app must not try to draw it (a seatsPerRow of 2^40 threw
  // a RangeError in the screening's listener, one of 10^9 hung the tab).
  it("draws no hall for a layout that is no hall, and says why", () => {
    const long = Array.from({ length: MAX_HALL_SEATS + 1 }, (_, i) => `R${String(i)}`);
    for (const s of [
      { rows: ["A"], seatsPerRow: 2 ** 40 },
      { rows: ["A"], seatsPerRow: MAX_HALL_SEATS + 1 },
      { rows: long, seatsPerRow: 1 },
      { rows: ["A"], seatsPerRow: -1 },
      { rows: ["A"], seatsPerRow: 2.5 },
      { rows: "AB" as unknown as string[], seatsPerRow: 3 },
    ]) {
      expect(layoutProblem(s), JSON.stringify(s.seatsPerRow)).toMatch(/malformed/);
      expect(seatGrid(s)).toEqual([]);
    }
    expect(layoutProblem({ rows: long.slice(1), seatsPerRow: 1 })).toBeUndefined();
    expect(layoutProblem({ rows: [], seatsPerRow: 0 })).toBeUndefined();
  });
});

describe("errorMessage", () => {
  const err = (code: string, seats: string[] = [], message = "detail") => ({ code, seats, message });

  it("names the seats of a conflict, in words", () => {
    expect(errorMessage(err("seat_taken", ["D7"]))).toBe("Sorry, D7 was just booked by someone else. Please choose other seats.");
    expect(errorMessage(err("seat_taken", ["D7", "D8"]))).toContain("D7 and D8 were just booked");
    expect(errorMessage(err("seat_held", ["D7"]))).toContain("Seat D7 is being held by another moviegoer");
    expect(errorMessage(err("seat_busy", ["D7"]))).toContain("Someone else is booking D7 at this very moment");
  });

  it("tells a user who holds the seats to confirm their own hold", () => {
    expect(errorMessage(err("seat_held", ["D7"]), { ownHoldSeats: new Set(["D7"]) })).toBe("You are already holding D7. Confirm or release that hold below.");
  });

  it("names the sale's seat cap when the page knows it", () => {
    expect(errorMessage(err("seat_limit"), { maxSeatsPerUser: 2 })).toBe(
      "In this sale one moviegoer may hold and book 2 seats at most, counting the seats you already hold or booked. Please choose fewer seats.",
    );
    expect(errorMessage(err("seat_limit"), { maxSeatsPerUser: 1 })).toContain("book 1 seat at most");
    expect(errorMessage(err("seat_limit"))).toBe("That is more seats than one moviegoer may hold and book in this sale. Please choose fewer seats.");
  });

  it("says how many seats are left when no block of the count is (CONTRACT §11)", () => {
    expect(errorMessage({ ...err("no_seats_together"), seatsLeft: 3 }, { count: 4 })).toBe(
      "Sorry, there are no 4 free seats side by side any more (3 seats are left). Try fewer seats, or pick seats on the map.",
    );
    expect(errorMessage({ ...err("no_seats_together"), seatsLeft: 1 })).toContain("(1 seat is left)");
    expect(errorMessage({ ...err("no_seats_together"), seatsLeft: 0 }, { count: 2 })).toContain("every seat is booked or held right now");
  });

  it("asks to choose seats again after a hold ran out only while the map is there to choose them on", () => {
    expect(errorMessage(err("hold_expired"))).toBe("Your hold ran out, so those seats were released. Please choose them again.");
    expect(errorMessage(err("hold_expired"), { canChoose: true })).toContain("choose them again");
    expect(errorMessage(err("hold_expired"), { canChoose: false }), "a sale's pass has ended: the map is closed").toBe("Your hold ran out, so those seats were released.");
  });

  it("has words for every §3 and §7 code, and never shows a bare code", () => {
    for (const code of [
      "no_sale",
      "sold_out",
      "sale_not_open",
      "not_admitted",
      "seat_limit",
      "no_seats_together",
      "hold_expired",
      "screening_started",
      "screening_not_found",
      "booking_not_found",
      "hold_not_found",
      "unauthenticated",
      "permission_denied",
      "unavailable",
      "invalid_argument",
      "something_new",
    ]) {
      const text = errorMessage(err(code));
      expect(text, code).not.toContain(code);
      expect(text.length, code).toBeGreaterThan(20);
    }
  });
});

describe("config", () => {
  it("parses host:port, IPv6 included, and refuses anything else", () => {
    expect(hostPort("127.0.0.1:8080")).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(hostPort("[::1]:9099")).toEqual({ host: "[::1]", port: 9099 });
    expect(() => hostPort("localhost")).toThrow('"localhost" is not host:port');
    expect(() => hostPort(":80")).toThrow();
    expect(() => hostPort("h:0")).toThrow();
  });

  it("takes the project from the env, or leaves it to Hosting", () => {
    expect(optionsFromEnv({})).toBeUndefined();
    expect(optionsFromEnv({ VITE_FIREBASE_PROJECT_ID: "p" })).toEqual({ projectId: "p", apiKey: "fake-api-key" });
    expect(optionsFromEnv({ VITE_FIREBASE_PROJECT_ID: "p", VITE_FIREBASE_API_KEY: "k", VITE_FIREBASE_AUTH_DOMAIN: "p.firebaseapp.com" })).toEqual({
      projectId: "p",
      apiKey: "k",
      authDomain: "p.firebaseapp.com",
    });
  });

  it("defaults the functions URL to the project's us-central1 functions", () => {
    expect(functionsURLFor("p", {})).toBe("https://us-central1-p.cloudfunctions.net");
    expect(functionsURLFor("p", { VITE_FUNCTIONS_URL: "http://127.0.0.1:8086/" })).toBe("http://127.0.0.1:8086");
  });
});
