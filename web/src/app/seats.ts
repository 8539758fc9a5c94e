/**
 * The seat map's pure logic: seat ids, the §6 states of a seat, the time
 * left on a hold, and the words a moviegoer reads for each §3, §7 and §11
 * outcome.
 */
import type { Timestamp } from "firebase/firestore";
import type { ApiError } from "./api";
import type { Price } from "./pay";
import type { SaleConfig } from "./queue";

/** The §6 `data-state` of a seat. */
export type SeatState = "free" | "selected" | "held" | "booked" | "mine-held" | "mine-booked";

/** A document of `screenings/{id}/seats` (CONTRACT §3). */
export type SeatDoc =
  | { status: "booked"; bookingId: string; bookedAt?: Timestamp }
  | { status: "held"; holdId: string; heldUntil: Timestamp };

export interface Screening {
  title: string;
  startsAt: Timestamp;
  rows: string[];
  seatsPerRow: number;
  /** CONTRACT §7: the screening is sold through a waiting room. */
  sale?: SaleConfig;
  /** CONTRACT §10: seats are paid for; without it the screening is free. */
  price?: Price;
  /** CONTRACT §11: row labels, best first, for best available (any value: the server ignores a malformed one). */
  preference?: unknown;
  /** The screening's own IANA zone, when it names one: its times are written in it (when.ts). */
  timeZone?: string;
}

/** The most seats a hall has (booking.MaxHallSeats): the server refuses a larger layout as malformed. */
export const MAX_HALL_SEATS = 100_000;

/**
 * Why the screening's layout is no hall (rows not a list, seatsPerRow not
 * a whole number from 0, more than MAX_HALL_SEATS seats), in words; undefined:
 * it is one. A layout written wrong by hand must be said, not drawn seat by seat.
 */
export function layoutProblem(s: Pick<Screening, "rows" | "seatsPerRow">): string | undefined {
  const rows: unknown = s.rows;
  const perRow: unknown = s.seatsPerRow;
  if (!Array.isArray(rows) || typeof perRow !== "number" || !Number.isInteger(perRow) || perRow < 0 || rows.length * perRow > MAX_HALL_SEATS) {
    return `This screening's seat layout is malformed (at most ${MAX_HALL_SEATS.toLocaleString("en")} seats): it cannot be booked.`;
  }
  return undefined;
}

/** The seat ids of a screening, row by row: `[["A1", ...], ...]`; none for a layout that is no hall (layoutProblem). */
export function seatGrid(s: Pick<Screening, "rows" | "seatsPerRow">): string[][] {
  if (layoutProblem(s) !== undefined) return [];
  return s.rows.map((row) => Array.from({ length: s.seatsPerRow }, (_, i) => `${row}${String(i + 1)}`));
}

export interface Mine {
  bookings: ReadonlySet<string>;
  holds: ReadonlySet<string>;
  /** The seats of the user's bookings and live holds: drawn as theirs on either map. */
  bookedSeats: ReadonlySet<string>;
  heldSeats: ReadonlySet<string>;
  /**
   * The user's own bookings and holds that ended (cancelled, released,
   * confirmed, lapsed): a seat document that still names one is behind them.
   */
  ended?: ReadonlySet<string>;
}

/**
 * A sale's seat map in one document, `seatMaps/{screeningId}` (CONTRACT §7a):
 * one character a seat, in layout order (`seatGrid`'s rows, flattened):
 * `.` free, `h` held, `b` booked. It names no hold or booking: the user's
 * own come from their documents.
 */
export interface SeatMapDoc {
  seats: string;
  updatedAt: Timestamp;
}

/** The state of a seat from its character in a sale's seat map (`ch`, undefined: not in it yet). */
export function seatStateFromMap(ch: string | undefined, seat: string, selected: boolean, mine: Mine): SeatState {
  if (mine.bookedSeats.has(seat)) return "mine-booked";
  if (mine.heldSeats.has(seat)) return "mine-held";
  if (ch === "b") return "booked";
  if (ch === "h") return "held";
  return selected ? "selected" : "free";
}

/**
 * The state of one seat. `nowMs` is the best estimate of the server's time:
 * a hold past its `heldUntil` is free (CONTRACT §3), whether or not its
 * document is gone yet. The server decides for real when someone books it.
 */
export function seatState(d: SeatDoc | undefined, seat: string, selected: boolean, mine: Mine, nowMs: number): SeatState {
  // The user's own bookings and live holds say so first, as on a sale's map: a
  // seat listener behind them must not draw the user's seats free beside "My bookings".
  if (mine.bookedSeats.has(seat)) return "mine-booked";
  if (mine.heldSeats.has(seat)) return "mine-held";
  // The user cancelled or released it, and the seat listener has not delivered
  // the delete yet: the seat is free, not someone else's meanwhile.
  if (d !== undefined && mine.ended?.has(d.status === "booked" ? d.bookingId : d.holdId)) return selected ? "selected" : "free";
  if (d?.status === "booked") return mine.bookings.has(d.bookingId) ? "mine-booked" : "booked";
  if (d?.status === "held" && d.heldUntil.toMillis() > nowMs) return mine.holds.has(d.holdId) ? "mine-held" : "held";
  return selected ? "selected" : "free";
}

/** Time left as `m:ss` up to an hour, `h:mm:ss` beyond (never negative). */
export function countdown(msLeft: number): string {
  const s = Math.max(0, Math.ceil(msLeft / 1000));
  const ss = String(s % 60).padStart(2, "0");
  if (s <= 3600) return `${String(Math.floor(s / 60))}:${ss}`;
  return `${String(Math.floor(s / 3600))}:${String(Math.floor(s / 60) % 60).padStart(2, "0")}:${ss}`;
}

/** Orders seat ids by row, then number: A2 before A10, C9 before C10. */
export function seatOrder(a: string, b: string): number {
  const ra = a.replace(/\d+$/, "");
  const rb = b.replace(/\d+$/, "");
  return ra === rb ? Number(a.slice(ra.length)) - Number(b.slice(rb.length)) : ra.localeCompare(rb);
}

/** "F12", "F12 and F13", "C9, C10 and C11": in row and number order, whatever order they come in. */
export function seatList(seats: readonly string[]): string {
  const sorted = [...seats].sort(seatOrder);
  if (sorted.length <= 1) return sorted.join("");
  return `${sorted.slice(0, -1).join(", ")} and ${sorted[sorted.length - 1] ?? ""}`;
}

const seatWord = (seats: readonly string[]) => (seats.length === 1 ? `Seat ${seatList(seats)}` : `Seats ${seatList(seats)}`);
const isAre = (seats: readonly string[]) => (seats.length === 1 ? "is" : "are");

/** What the page knows that makes an error's words more precise. */
export interface ErrorContext {
  /** The seats of the user's own live holds. */
  ownHoldSeats?: ReadonlySet<string>;
  /** The sale's seat cap per user (CONTRACT §7). */
  maxSeatsPerUser?: number;
  /** How many seats a best-available request asked for (CONTRACT §11). */
  count?: number;
  /** The seat map shows, so seats can be chosen again (false: a sale's pass has ended). */
  canChoose?: boolean;
}

/** What a moviegoer reads when a call fails with this error. */
export function errorMessage(err: Pick<ApiError, "code" | "message" | "seats"> & { seatsLeft?: number | undefined }, context: ErrorContext = {}): string {
  const seats = err.seats;
  const ownHoldSeats = context.ownHoldSeats ?? new Set();
  switch (err.code) {
    case "seat_taken":
      return `Sorry, ${seatList(seats)} ${seats.length === 1 ? "was" : "were"} just booked by someone else. Please choose other seats.`;
    case "seat_held":
      if (seats.length > 0 && seats.every((s) => ownHoldSeats.has(s))) {
        return `You are already holding ${seatList(seats)}. Confirm or release that hold below.`;
      }
      return `${seatWord(seats)} ${isAre(seats)} being held by another moviegoer who is checking out. Try other seats, or try again in a few minutes.`;
    case "seat_busy":
      return `Someone else is booking ${seatList(seats)} at this very moment. Please try again.`;
    case "hold_expired":
      return context.canChoose === false
        ? "Your hold ran out, so those seats were released."
        : "Your hold ran out, so those seats were released. Please choose them again.";
    case "screening_started":
      return "This screening has already started, so it takes no more bookings.";
    case "no_sale":
      return "There is no waiting room to join for this screening right now. Please reload the page in a while.";
    case "sold_out":
      return "Sorry, this screening is sold out: every seat is booked.";
    case "sale_closed":
      return "The sale is closed: this screening takes no more bookings. A hold you already have can still be confirmed while it lasts.";
    case "sale_not_open":
      return "The sale has not opened yet. Join the queue, and the seat map opens here when it is your turn.";
    case "not_admitted":
      return "During this sale only people let in from the queue can hold or book seats, while their pass lasts. It is not your turn yet, or your pass has ended.";
    case "seat_limit":
      return context.maxSeatsPerUser === undefined
        ? "That is more seats than one moviegoer may hold and book in this sale. Please choose fewer seats."
        : `In this sale one moviegoer may hold and book ${String(context.maxSeatsPerUser)} seat${context.maxSeatsPerUser === 1 ? "" : "s"} at most, counting the seats you already hold or booked. Please choose fewer seats.`;
    case "no_seats_together":
      return err.seatsLeft === 0
        ? "Sorry, every seat is booked or held right now. Held seats come free again if their holders do not book: try again in a minute."
        : `Sorry, there are no ${context.count === undefined ? "" : `${String(context.count)} `}free seats side by side any more${
            err.seatsLeft === undefined ? "" : ` (${String(err.seatsLeft)} seat${err.seatsLeft === 1 ? " is" : "s are"} left)`
          }. Try fewer seats, or pick seats on the map.`;
    case "email_not_verified":
      return "This sale is for verified email addresses. Send yourself the verification email, open its link, then press “I have verified it” and join.";
    case "app_check_failed":
      return "This app could not prove it is the real app, so the box office refused the request. Reload the page and try again.";
    case "payment_required":
      return "Seats for this screening are paid for: hold them, then pay.";
    case "hold_confirmed":
      return "That hold is booked already: see your bookings.";
    case "not_priced":
      return "This screening is free: confirm the hold to book it.";
    case "screening_not_found":
      return "We could not find this screening. Check the link.";
    case "booking_not_found":
      return "We could not find that booking. It may have been removed.";
    case "hold_not_found":
      return "We could not find that hold. It may have ended already.";
    case "unauthenticated":
      return "Please sign in (again) to continue.";
    case "permission_denied":
      return "That booking or hold belongs to someone else.";
    case "unavailable":
      return "The box office is not answering right now. Nothing was booked; please try again in a moment.";
    case "invalid_argument":
      return `That request was not accepted: ${err.message}.`;
    default:
      return `Something went wrong (${err.message}). Nothing was booked.`;
  }
}
