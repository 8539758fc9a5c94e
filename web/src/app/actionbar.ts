/**
 * The action bar on a phone (issue #50): what the buyer has in hand (the
 * selection, the hold, or the hold being paid for), its total, and the one
 * next step (sign in, hold, pay, confirm, find seats), kept at the bottom
 * of the screen so it is always in reach. On a wide screen the side panel
 * says the same and the bar is not shown (style.css).
 *
 * Pure: main.ts paints what nextStep returns, and runs the step.
 */
import { type Price, money, totalOf } from "./pay";
import { countdown, seatList } from "./seats";

/** The step the bar's button takes (`data-bar-action`). */
export type BarAction = "sign-in" | "hold" | "pay" | "confirm" | "find";

export interface BarFacts {
  signedIn: boolean;
  /** The seat map shows (no sale, or a live pass). */
  choosing: boolean;
  /** The selected seats. */
  selection: readonly string[];
  /** The user's live holds, soonest end first. */
  holds: readonly { holdId: string; seats: readonly string[]; heldUntilMs: number; paying?: boolean }[];
  price: Price | undefined;
  /** The server's time as the page estimates it. */
  nowMs: number;
  /** How many seats best available would look for (its card's count); undefined: it is not offered. */
  findCount: number | undefined;
}

export interface BarStep {
  /** What the buyer has in hand, in words. */
  text: string;
  /** Its total: money on a priced screening, else a count of seats ("" for nothing). */
  total: string;
  action: BarAction | undefined;
  /** The button's words. */
  label: string;
  /** The hold the step acts on (pay, confirm). */
  holdId?: string;
}

const seatsWord = (n: number) => `${String(n)} seat${n === 1 ? "" : "s"}`;

/** The one next step, or undefined: the bar has nothing to say (a sale's waiting room says it all). */
export function nextStep(f: BarFacts): BarStep | undefined {
  const totalOfSeats = (seats: readonly string[]) => (f.price ? money(totalOf(f.price, seats), f.price.currency) : seatsWord(seats.length));
  // A hold first: its time runs.
  const hold = f.holds.find((x) => x.heldUntilMs > f.nowMs);
  if (hold) {
    const left = countdown(hold.heldUntilMs - f.nowMs);
    const base = { total: totalOfSeats(hold.seats), holdId: hold.holdId };
    if (hold.paying) return { ...base, text: `${seatList(hold.seats)} kept for paying · ${left}`, action: "pay", label: "Continue paying" };
    if (f.price) return { ...base, text: `${seatList(hold.seats)} held for you · ${left}`, action: "pay", label: "Pay" };
    return { ...base, text: `${seatList(hold.seats)} held for you · ${left}`, action: "confirm", label: "Confirm" };
  }
  if (!f.choosing) return undefined;
  if (!f.signedIn) return { text: "Sign in to choose seats.", total: "", action: "sign-in", label: "Sign in" };
  if (f.selection.length > 0) {
    return { text: seatList(f.selection), total: totalOfSeats(f.selection), action: "hold", label: `Hold ${seatsWord(f.selection.length)}` };
  }
  if (f.findCount === undefined) return { text: "Tap free seats on the map to choose them.", total: "", action: undefined, label: "" };
  return { text: "Tap seats on the map, or let us find the best ones.", total: "", action: "find", label: `Find ${seatsWord(f.findCount)}` };
}
