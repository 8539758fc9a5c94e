/**
 * The buyer's tickets in words (CONTRACT §13): a ticket's state as the app
 * shows it, its time with the zone written out, and the order reference a
 * booking is known by. Pure, for the tickets page and its tests.
 */

/** `data-ticket-state`: the ticket's status, its entry, or that it moved on. */
export type TicketState = "valid" | "in" | "out" | "cancelled" | "reissued";

/**
 * The state a ticket shows: `reissued` once its code was replaced (this
 * user transferred it, or it came back with a newer version than the code
 * shown), `cancelled`, else its entry's state (`in`, `out`) if the entry is
 * of this version, else `valid`.
 */
export function ticketState(t: { status: "valid" | "cancelled"; version: number }, entry: { state: "in" | "out"; version?: number } | undefined, transferredAway: boolean): TicketState {
  if (transferredAway) return "reissued";
  if (t.status === "cancelled") return "cancelled";
  if (entry && (entry.version === undefined || entry.version === t.version)) return entry.state;
  return "valid";
}

export const STATE_WORDS: Record<TicketState, string> = {
  valid: "Valid: show this code at the door",
  in: "Used: you are in",
  out: "Out: show it again to come back in",
  cancelled: "Cancelled: this ticket was refunded",
  reissued: "Transferred: this code no longer works",
};

/** A screening's time with its zone ("Sat 28 Nov, 19:30 CET"): the one format of when.ts. */
export { whenWords } from "./when";

/** A booking's order reference, as the buyer reads it out: "7F3K-9QXD" from its id. */
export function orderRef(bookingId: string): string {
  const s = bookingId.replace(/[^A-Za-z0-9]/g, "").slice(0, 8).toUpperCase();
  return s.length > 4 ? `${s.slice(0, 4)}-${s.slice(4)}` : s;
}
