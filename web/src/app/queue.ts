/**
 * The waiting room's pure logic (CONTRACT §7): the id of the user's place,
 * what the queue screen shows of it (`data-queue-state`), "about N ahead of
 * you" from the public sale document's marks, the wait that the sale's rate
 * gives, and the page's estimate of Firestore's clock.
 */
import type { Timestamp } from "firebase/firestore";

/** `screenings/{id}.sale`, written by admins. */
export interface SaleConfig {
  opensAt: Timestamp;
  admitPerMinute: number;
  maxActive: number;
  passSeconds?: number;
  maxSeatsPerUser?: number;
  /** CONTRACT §12: only users whose email is verified may join. */
  requireVerifiedEmail?: boolean;
}

/** The contract's defaults of `passSeconds` and `maxSeatsPerUser`. */
export const DEFAULT_PASS_SECONDS = 600;
export const DEFAULT_MAX_SEATS_PER_USER = 6;

/** `paused` (CONTRACT §7a): nobody new is admitted; places are kept, joins go on, live passes keep working. */
export type SaleState = "scheduled" | "open" | "paused" | "soldout" | "closed";

/** A point along the waiting line: about `ahead` places not yet admitted sort before `order`. */
export interface Mark {
  order: string;
  ahead: number;
}

/** `sales/{screeningId}`, public, written by the admitter at most once a second. */
export interface SaleDoc {
  state: SaleState;
  opensAt: Timestamp;
  waiting: number;
  admitted: number;
  active: number;
  seatsLeft: number;
  admittedThrough: string;
  marks: Mark[];
  updatedAt: Timestamp;
}

export type PlaceStatus = "waiting" | "admitted" | "done" | "expired";

/** What the page needs of the user's place `queue/{queueId}` (or of JoinQueue's answer). */
export interface Place {
  status: PlaceStatus;
  /** Set once the place is ranked (for an early joiner, at the opening). */
  order?: string;
  /** Server time, in ms. */
  passUntilMs?: number;
  /** An operator revoked it (`revokedAt`, CONTRACT §8): the pass or the place in line ended then. */
  revoked?: boolean;
}

/** The §7 `data-queue-state`. */
export type QueueState = "none" | PlaceStatus;

/**
 * The id of uid's place in the sale of screeningId: the lowercase hex
 * SHA-256 of `screeningId + "/" + uid`, as `sale.QueueID` and the rules
 * compute it (docs/waiting-room.md).
 */
export async function queueId(screeningId: string, uid: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${screeningId}/${uid}`));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The state the queue screen shows. A pass whose `passUntil` has passed by
 * the estimated server clock shows as expired at once, as a lapsed hold
 * shows as free: the rules judge a pass by `passUntil` alone, and the
 * admitter marks it expired within 2 s.
 */
export function queueState(place: Place | null | undefined, nowMs: number): QueueState {
  if (!place) return "none";
  if (place.status === "admitted" && (place.passUntilMs ?? 0) <= nowMs) return "expired";
  return place.status;
}

/**
 * Where an order lies along its part of the line, for interpolating
 * between marks. docs/waiting-room.md gives the format: `"0" + draw` (hex,
 * uniformly random) for early joiners, `"0~" + draw` for stragglers, and
 * `"1"` + the join time in µs (17 digits) for later joiners. Any other
 * string has no position, and the estimate does without.
 */
function position(order: string): { part: string; at: number } | undefined {
  const early = /^(0~?)([0-9a-f]{0,13})/.exec(order);
  if (early) return { part: early[1] ?? "", at: parseInt((early[2] ?? "").padEnd(13, "0"), 16) };
  const later = /^1(\d{17})/.exec(order);
  if (later) return { part: "1", at: Number(later[1]) };
  return undefined;
}

/**
 * About how many places not yet admitted sort before `order`, from the
 * public sale document alone (nobody else's place is read): 0 at or before
 * `admittedThrough`; else the last mark at or before `order` (the front of
 * the line, with nobody ahead, when there is none), interpolated towards
 * the next mark when both lie in the same part of the line. Never more than
 * `waiting`. Undefined while the place has no order (an early joiner before
 * the ranking).
 *
 * A mark counts the places before its own order, so the next mark after
 * `order` counts the place of `order` itself: of the places between the
 * two marks, one is the user's, and only the others may be ahead. (With
 * nobody else in line, the admitter's tail mark after the user says 1,
 * and the user is that one.)
 */
export function aheadOf(order: string | undefined, sale: Pick<SaleDoc, "marks" | "admittedThrough"> & Partial<Pick<SaleDoc, "waiting">>): number | undefined {
  if (order === undefined || order === "") return undefined;
  if (sale.admittedThrough !== "" && order <= sale.admittedThrough) return 0;
  const marks = [...sale.marks].sort((x, y) => (x.order < y.order ? -1 : x.order > y.order ? 1 : 0));
  // The front of the line: nobody left ahead there ("0" sorts before every order).
  let lo: Mark = { order: sale.admittedThrough || "0", ahead: 0 };
  let hi: Mark | undefined;
  for (const m of marks) {
    if (m.order <= order) lo = m;
    else {
      hi = m;
      break;
    }
  }
  const atMost = (n: number) => Math.max(0, sale.waiting === undefined ? n : Math.min(n, sale.waiting));
  if (!hi || lo.order === order) return atMost(lo.ahead);
  const [a, x, b] = [position(lo.order), position(order), position(hi.order)];
  if (!a || !x || !b || a.part !== x.part || x.part !== b.part || b.at <= a.at) return atMost(lo.ahead);
  const f = Math.min(1, Math.max(0, (x.at - a.at) / (b.at - a.at)));
  const others = Math.max(0, hi.ahead - lo.ahead - 1); // between the marks, besides the user
  return atMost(Math.round(lo.ahead + others * f));
}

/**
 * How many people the sale admits a minute at most: `admitPerMinute`, or
 * fewer when `maxActive` passes of `passSeconds` bind (passes that end early
 * make room sooner, so this errs on the long side).
 */
export function admitRatePerMinute(c: Pick<SaleConfig, "admitPerMinute" | "maxActive" | "passSeconds">): number {
  const pass = c.passSeconds ?? DEFAULT_PASS_SECONDS;
  return Math.min(c.admitPerMinute, (c.maxActive * 60) / pass);
}

/** The wait, in ms, of someone with `ahead` people before them. */
export function waitMs(ahead: number, c: Pick<SaleConfig, "admitPerMinute" | "maxActive" | "passSeconds">): number {
  const rate = admitRatePerMinute(c);
  return rate > 0 ? (ahead / rate) * 60_000 : Number.POSITIVE_INFINITY;
}

/** A wait in words: "less than a minute", "about 4 minutes", "about 2 h 10 min". */
export function waitWords(ms: number): string {
  if (!Number.isFinite(ms)) return "unknown";
  if (ms < 60_000) return "less than a minute";
  const min = Math.round(ms / 60_000);
  if (min < 60) return min === 1 ? "about a minute" : `about ${String(min)} minutes`;
  const h = Math.floor(min / 60);
  const rest = min % 60;
  return rest === 0 ? `about ${String(h)} hour${h === 1 ? "" : "s"}` : `about ${String(h)} h ${String(rest)} min`;
}

/** What the queue screen says of the line ahead of a user waiting in it. */
export interface LineEstimate {
  /** About how many people are ahead (`data-queue-ahead`). */
  ahead: number;
  aheadText: string;
  waitText: string;
}

/**
 * The line ahead of a waiting user whose place has `order`, in words:
 * aheadOf, and the wait that the sale's rate gives. Undefined while the
 * place has no order.
 */
export function lineEstimate(
  order: string | undefined,
  sale: Pick<SaleDoc, "state" | "waiting" | "marks" | "admittedThrough">,
  c: Pick<SaleConfig, "admitPerMinute" | "maxActive" | "passSeconds">,
): LineEstimate | undefined {
  const ahead = aheadOf(order, sale);
  if (ahead === undefined) return undefined;
  const paused = sale.state === "paused";
  const wait = waitWords(waitMs(ahead, c));
  // An estimate (people who joined since the last mark are not counted yet), so 0 is "near".
  return {
    ahead,
    aheadText: ahead > 0 ? `About ${String(ahead)} ${ahead === 1 ? "person" : "people"} ahead of you` : "You are at or near the front of the line.",
    waitText: paused
      ? ahead === 0
        ? "You will be let in as soon as the sale goes on."
        : `Once the sale goes on, the estimated wait is ${wait}.`
      : ahead === 0
        ? "Your turn comes soon, as places free up."
        : `Estimated wait: ${wait}.`,
  };
}

/**
 * The page's estimate of Firestore's clock, for countdowns only (the
 * server decides whether a hold or pass has ended). Every server timestamp
 * the page sees (a hold's commit, a sale's update, an admission) is a lower
 * bound of the server's time when it arrives; the estimate is the local
 * clock moved forward by the largest such bound.
 */
export class ServerClock {
  private offsetMs: number | undefined;

  /** The server's clock read at least `serverMs` by local time `localMs`. */
  sawAtLeast(serverMs: number, localMs: number = Date.now()): void {
    const offset = serverMs - localMs;
    if (Number.isFinite(offset) && (this.offsetMs === undefined || offset > this.offsetMs)) this.offsetMs = offset;
  }

  /** The server's time now, as best known (the local clock until anything was seen). */
  now(localMs: number = Date.now()): number {
    return localMs + (this.offsetMs ?? 0);
  }
}
