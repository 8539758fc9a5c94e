/**
 * The door's verdict on one scan, decided at the gate (CONTRACT §13): the
 * same state machine the server's `door/` package and `firestore.rules`
 * follow, judged on what this scanner knows: the code's signature (checked
 * against the cached keys, src/ticketcode.ts), the door's configuration, the
 * ticket as last seen (status and version) and the ticket's entry as last
 * seen or made here. Pure: the scanner page and the benchmark call it.
 *
 * Online, the server's answer is the verdict and this only explains
 * a code at once; offline, this is the verdict, and the server may later
 * refuse it (a `conflict`).
 */
import { type CodeProblem, type TicketClaims, TicketCodeError, type TicketKeys, verifyTicketCode } from "../ticketcode";

/** A scan's `result` (CONTRACT §13). */
export type ScanResult =
  | "admitted"
  | "exited"
  | "already_in"
  | "not_in"
  | "cancelled"
  | "reissued"
  | "wrong_screening"
  | "door_closed"
  | "invalid"
  | "conflict"
  | "no_reentry";

export type Direction = "in" | "out";

/** `screenings/{id}.door`, with its time as ms. */
export interface Door {
  opensAtMs: number;
  gates: readonly string[];
  reentry: boolean;
}

/** A ticket as the scanner last saw it (`tickets/{id}`). */
export interface KnownTicket {
  status: "valid" | "cancelled";
  version: number;
  seatId?: string;
}

/** A ticket's entry (`checkins/{id}`) as last seen, or as this gate made it. */
export interface Entry {
  state: "in" | "out";
  seq: number;
  gate: string;
  /** ms: the server's `at`, or this device's clock for an entry made here offline. */
  atMs: number;
  nonce?: string;
}

export interface Verdict {
  result: ScanResult;
  /** Why, in words, for the person at the gate. */
  reason?: string;
  /** With `invalid`: what is wrong with the code. */
  problem?: CodeProblem;
  claims?: TicketClaims;
  /** With `already_in`: where and when it went in. */
  entry?: Entry;
  /** With `wrong_screening`: the ticket's screening. */
  screeningId?: string;
}

/** The results that let someone through. */
export const PASSES: ReadonlySet<ScanResult> = new Set(["admitted", "exited"]);

/** What the gate knows besides the code. */
export interface GateState {
  screeningId: string;
  gate: string;
  direction: Direction;
  nowMs: number;
  door: Door | undefined;
  ticket: (ticketId: string) => KnownTicket | undefined;
  entry: (ticketId: string) => Entry | undefined;
}

/** The verdict on a code whose signature already checked (claims). */
export function judge(claims: TicketClaims, g: GateState): Verdict {
  if (claims.screeningId !== g.screeningId) return { result: "wrong_screening", claims, screeningId: claims.screeningId };
  if (!g.door || g.nowMs < g.door.opensAtMs) return { result: "door_closed", claims };
  const ticket = g.ticket(claims.ticketId);
  if (ticket?.status === "cancelled") return { result: "cancelled", claims };
  if (ticket && ticket.version !== claims.version) return { result: "reissued", claims };
  // A ticket this scanner has never seen, with a genuine code, is let in:
  // that is what the signature is for.
  const entry = g.entry(claims.ticketId);
  const isIn = entry?.state === "in";
  if (g.direction === "in") return isIn ? { result: "already_in", claims, entry } : { result: "admitted", claims };
  if (!g.door.reentry) return { result: "no_reentry", claims };
  return isIn ? { result: "exited", claims } : { result: "not_in", claims };
}

/** Checks the code's signature offline, then judges it: the scanner's verdict. */
export async function decide(code: string, keys: TicketKeys, g: GateState): Promise<Verdict> {
  let claims: TicketClaims;
  try {
    claims = await verifyTicketCode(code, keys);
  } catch (err) {
    if (err instanceof TicketCodeError) return { result: "invalid", reason: err.message, problem: err.problem };
    throw err;
  }
  return judge(claims, g);
}

/** The entry a passing verdict makes: the next `seq`, alternating. */
export function nextEntry(prev: Entry | undefined, direction: Direction, gate: string, atMs: number, nonce: string): Entry {
  return { state: direction, seq: (prev?.seq ?? 0) + 1, gate, atMs, nonce };
}

/** CheckIn's error codes (CONTRACT §13) as scan results; undefined for codes that are not a verdict. */
export function resultOfError(code: string): ScanResult | undefined {
  switch (code) {
    case "already_in":
    case "not_in":
    case "wrong_screening":
    case "door_closed":
    case "no_reentry":
      return code;
    case "ticket_cancelled":
      return "cancelled";
    case "ticket_reissued":
      return "reissued";
    case "invalid_ticket":
      return "invalid";
    default:
      return undefined;
  }
}

/** "3 min ago", "just now", "2 h 5 min ago". */
export function agoWords(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 45) return s < 10 ? "just now" : `${String(s)} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${String(m)} min ago`;
  return `${String(Math.floor(m / 60))} h ${String(m % 60)} min ago`;
}

/** The big words of a verdict, and the line under them. */
export function verdictWords(v: Verdict, nowMs: number): { title: string; detail: string } {
  const seat = v.claims ? `Seat ${v.claims.seatId}` : "";
  switch (v.result) {
    case "admitted":
      return { title: "Welcome in", detail: seat };
    case "exited":
      return { title: "Out: see you soon", detail: seat };
    case "already_in":
    case "conflict": {
      const e = v.entry;
      const where = e ? `Went in at gate ${e.gate}, ${agoWords(nowMs - e.atMs)}` : "This ticket is already in";
      return { title: v.result === "conflict" ? "Already in (found later)" : "Already in", detail: seat ? `${seat}. ${where}` : where };
    }
    case "not_in":
      return { title: "Not in", detail: `${seat}: this ticket has not gone in, so it cannot go out.` };
    case "cancelled":
      return { title: "Cancelled", detail: `${seat}: this ticket was cancelled (refunded).` };
    case "reissued":
      return { title: "Old code", detail: `${seat}: this ticket was transferred; only its new code works.` };
    case "wrong_screening":
      return { title: "Wrong screening", detail: `${seat ? `${seat}, ` : ""}for screening ${v.screeningId ?? "another"}.` };
    case "door_closed":
      return { title: "Door closed", detail: "The door of this screening is not open yet." };
    case "no_reentry":
      return { title: "No re-entry", detail: `${seat}: leaving and coming back is not allowed for this screening.` };
    case "invalid":
      return { title: "Not a ticket", detail: v.reason ?? "The code is not a genuine firelock ticket." };
  }
}
