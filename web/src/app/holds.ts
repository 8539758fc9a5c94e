/**
 * The user's holds as the page shows them (CONTRACT §3, §10): live, being
 * paid for, ran out, or released by an operator's revoke, and what can
 * still be done with each. Pure: the page paints what showHold returns,
 * and offers no action that cannot succeed.
 */
import { seatList } from "./seats";

/** `data-hold-state` of a hold on the page. */
export type HoldPhase = "held" | "paying" | "lapsed" | "revoked";

/** The buttons a hold may carry (their `data-action`). */
export type HoldAction = "confirm" | "pay" | "extend" | "release";

/** What the page knows of one of the user's holds. */
export interface HoldFacts {
  seats: readonly string[];
  /** Server time, in ms. */
  heldUntilMs: number;
  /** Being paid for (§10): its checkout session is open. */
  paying?: boolean;
}

/** What around the hold decides how it shows. */
export interface HoldSetting {
  /** The server's time as the page estimates it. */
  nowMs: number;
  /** The screening is paid for (§10): a hold is paid, not confirmed. */
  priced: boolean;
  /** An operator revoked the user's pass (§8): its holds are being released. */
  revoked: boolean;
  /** The seat map shows, so seats can be chosen on it now. */
  canChoose: boolean;
}

export interface HoldShown {
  phase: HoldPhase;
  /** The buttons offered, in order; none once the hold has ended. */
  actions: HoldAction[];
  /** Words for a hold that has ended; empty while it lives (its countdown says enough). */
  note: string;
}

export function showHold(h: HoldFacts, s: HoldSetting): HoldShown {
  const seats = seatList(h.seats);
  const isAre = h.seats.length === 1 ? "is" : "are";
  if (s.revoked) {
    return { phase: "revoked", actions: [], note: `Released as your pass ended: ${seats} ${isAre} free for others again.` };
  }
  if (h.heldUntilMs <= s.nowMs) {
    const it = h.seats.length === 1 ? "it" : "them";
    const then = h.paying
      ? ` A payment that still comes in books ${it} if ${h.seats.length === 1 ? "it is" : "they are"} still free, or is refunded in full.`
      : s.canChoose
        ? ` Choose ${it} again on the map if you still want ${it}.`
        : "";
    return { phase: "lapsed", actions: [], note: `Your hold ran out: ${seats} ${isAre} free for anyone again.${then}` };
  }
  if (h.paying) return { phase: "paying", actions: ["pay", "release"], note: "" }; // kept for paying (payHoldSeconds), not extended
  return { phase: "held", actions: [s.priced ? "pay" : "confirm", "extend", "release"], note: "" };
}
