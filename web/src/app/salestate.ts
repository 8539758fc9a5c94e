/**
 * The sale's public state from the edge (CONTRACT §14): while waiting the
 * page listens to nothing; it polls `GET /SaleState` (with the last ETag,
 * so an unchanged state is a 304) every `refreshSeconds` while its place is
 * within about a minute of admission, and less often the further back it
 * is, at least every 30 s.
 */
import { Timestamp } from "firebase/firestore";
import { type Place, type SaleConfig, type SaleDoc, type SaleState, aheadOf, waitMs } from "./queue";

/** The answer of GET /SaleState. */
interface SaleStateAnswer {
  state: SaleState;
  opensAt: string;
  waiting: number;
  admitted: number;
  active: number;
  seatsLeft: number;
  admittedThrough: string;
  marks: { order: string; ahead: number }[];
  updatedAt: string;
  refreshSeconds: number;
}

/** The longest a waiting page goes without polling. */
export const MAX_POLL_MS = 30_000;

/** Within this of its admission, a place polls every refreshSeconds. */
export const NEAR_MS = 60_000;

/**
 * How long to wait before the next poll: `refreshSeconds` while the
 * estimated wait is unknown or within NEAR_MS, and a quarter of the wait
 * beyond that, at most MAX_POLL_MS (never less than refreshSeconds).
 */
export function nextPollMs(refreshSeconds: number, waitMs: number | undefined): number {
  const refresh = Math.max(1, refreshSeconds) * 1000;
  if (waitMs === undefined || !Number.isFinite(waitMs) || waitMs <= NEAR_MS) return refresh;
  return Math.max(refresh, Math.min(MAX_POLL_MS, waitMs / 4));
}

/**
 * The whole line's reads of their places, at most this many a second:
 * Firestore's ramp-up rule (500 operations a second for new traffic to a
 * collection) and what one emulator answers.
 */
export const PLACE_READS_PER_SECOND = 500;

/**
 * How long a page whose place has no order yet (an early joiner, after the
 * opening) waits before reading its place (CONTRACT §14: once after the
 * draw). Every early joiner's page sees the opening in the same second; read
 * at once, 5,000 of them are 5,000 gets in a second, and again at every new
 * state while the ranking (500 a tick) has not reached them. The first read
 * falls anywhere in `waiting / PLACE_READS_PER_SECOND` seconds (at least 1
 * s); a read that still found no order waits twice as long each time (half
 * the window, then anywhere in the other half), at most MAX_POLL_MS.
 * `random` is in [0, 1).
 */
export function placeReadDelayMs(waiting: number, attempt: number, random: number): number {
  const spread = Math.max(1000, (Math.max(0, waiting) / PLACE_READS_PER_SECOND) * 1000);
  if (attempt <= 0) return Math.floor(random * Math.min(MAX_POLL_MS, spread));
  const window = Math.min(MAX_POLL_MS, spread * 2 ** Math.min(attempt, 10));
  return Math.floor(window / 2 + (random * window) / 2);
}

/** A SaleState answer as the page's SaleDoc. */
export function saleDocOf(a: SaleStateAnswer): SaleDoc {
  const ts = (s: string) => Timestamp.fromMillis(Date.parse(s) || 0);
  return {
    state: a.state,
    opensAt: ts(a.opensAt),
    waiting: a.waiting,
    admitted: a.admitted,
    active: a.active,
    seatsLeft: a.seatsLeft,
    admittedThrough: a.admittedThrough,
    marks: a.marks,
    updatedAt: ts(a.updatedAt),
  };
}

/**
 * Polls SaleState of screeningId at baseURL until stopped: `onState` gets
 * each new state (undefined: the sale has none yet or no longer), `waitMs`
 * says the page's estimated wait (undefined: unknown) to pace the polls,
 * and `onError` a poll that failed (the next poll tries again). Returns the
 * stop function; `poke` polls at once.
 */
export function pollSaleState(
  baseURL: string,
  screeningId: string,
  onState: (sale: SaleDoc | undefined) => void,
  waitMs: () => number | undefined,
  onError: (err: unknown) => void,
): { stop: () => void; poke: () => void } {
  let etag: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let refreshSeconds = 1;
  const url = `${baseURL}/SaleState?screening=${encodeURIComponent(screeningId)}`;
  const poll = async (): Promise<void> => {
    timer = undefined;
    try {
      // no-store: the page keeps the ETag itself, so an unchanged state comes back as a 304 from the CDN.
      const res = await fetch(url, { cache: "no-store", headers: etag ? { "If-None-Match": etag } : {} });
      if (stopped) return;
      if (res.status === 200) {
        const a = (await res.json()) as SaleStateAnswer;
        etag = res.headers.get("ETag") ?? undefined;
        refreshSeconds = a.refreshSeconds;
        onState(saleDocOf(a));
      } else if (res.status === 404 || res.status === 409) {
        etag = undefined;
        onState(undefined);
      } else if (res.status !== 304) {
        onError(new Error(`SaleState answered ${String(res.status)}`));
      }
    } catch (err) {
      if (!stopped) onError(err);
    }
    if (!stopped) timer = setTimeout(() => void poll(), nextPollMs(refreshSeconds, waitMs()));
  };
  void poll();
  return {
    stop: () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    },
    poke: () => {
      if (stopped || timer === undefined) return;
      clearTimeout(timer);
      void poll();
    },
  };
}

/**
 * The estimated wait of a place in the sale, in ms, to pace the polls:
 * undefined (poll every refreshSeconds) when unknown, e.g. before the
 * draw, or when the place is near the front (placeIsNear).
 */
export function waitOf(
  place: Place | null | undefined,
  sale: SaleDoc | undefined,
  cfg: Pick<SaleConfig, "admitPerMinute" | "maxActive" | "passSeconds"> | undefined,
): number | undefined {
  if (!place || !sale || !cfg || place.status !== "waiting" || placeIsNear(place, sale, cfg)) return undefined;
  const ahead = aheadOf(place.order, sale);
  return ahead === undefined ? undefined : waitMs(ahead, cfg);
}

/**
 * Whether the page listens to its place: once it is not waiting (admitted,
 * done, expired: the pass's changes show live), or while it waits near the
 * front of an open or paused sale: at most admitPerMinute ahead, the most
 * the sale may admit in a minute, so that nobody further back can be let in
 * within a minute (CONTRACT §14's "about a minute of admission"). Further
 * back, before the draw, or before the sale has published where its line
 * stands (no marks, nobody admitted), it polls and reads the place instead:
 * a poll every refreshSeconds sees its admission as soon. (Two minutes'
 * worth made a surge's 2,000 pages open 1,374 listeners at its peak: every
 * early joiner was "near".)
 */
export function placeIsNear(
  place: Place | null | undefined,
  sale: SaleDoc | undefined,
  cfg: Pick<SaleConfig, "admitPerMinute"> | undefined,
): boolean {
  if (!place) return false;
  if (place.status !== "waiting") return true;
  if (!sale || !cfg || (sale.state !== "open" && sale.state !== "paused")) return false;
  // Nobody admitted and no marks yet (the moment between the opening and the
  // admitter's first publication): where the place is, is unknown, not "at
  // the front"; a surge of 2,000 saw every waiting page listen from then on.
  if (sale.admittedThrough === "" && sale.marks.length === 0) return false;
  const ahead = aheadOf(place.order, sale);
  return ahead !== undefined && ahead <= cfg.admitPerMinute;
}

/**
 * Where the page polls SaleState: deployed (the functions at
 * cloudfunctions.net or run.app), its own origin, whose Hosting rewrite
 * sends /SaleState to the function through the CDN (firebase.json); else
 * (the local run) the functions' URL.
 */
export function saleStateBase(functionsURL: string): string {
  return /^https:\/\/[^/]+\.(cloudfunctions\.net|run\.app)$/.test(functionsURL) ? "" : functionsURL;
}

/**
 * Whether an admitted page may stop listening to the sale's seat map
 * (issue #51): while the last map it saw (`seats`, one character a seat in
 * layout order, CONTRACT §7a: `.` free, `h` held, `b` booked) shows no seat
 * free among the hall's `hallSize`, and the polled public state says the
 * sale is open or paused with no seat left (§14: seats − booked − held).
 * Then every new version of the map (a hold, a confirmation, a lapse) is a
 * read that shows nothing to act on; the page keeps drawing the last map,
 * and listens again (one read) as soon as a poll shows a seat left or
 * another state. An operator's pause (§7a) counts as open here: it admits
 * nobody new, but live passes go on holding and booking, and the map and
 * seatsLeft are written as in an open sale. Never while a seat shows free
 * (a character missing from a short map is a seat not written yet: free),
 * while seats are left, without a map yet, or outside an open or paused
 * sale.
 */
export function seatMapIdle(seats: string | undefined, hallSize: number, sale: Pick<SaleDoc, "state" | "seatsLeft"> | undefined): boolean {
  if (seats === undefined || hallSize <= 0 || !sale || (sale.state !== "open" && sale.state !== "paused") || sale.seatsLeft !== 0) return false;
  for (let i = 0; i < hallSize; i++) {
    const ch = seats[i];
    if (ch !== "h" && ch !== "b") return false;
  }
  return true;
}

/**
 * How long an admitted page listens to the seat map, whatever seatMapIdle
 * says, after freeing seats itself (a release, a cancel, a hold of its own
 * that lapsed or ended): neither its last map nor SaleState shows them free
 * yet, and SaleState shows them up to about 3 s later (the publication
 * within a second, its cache, the poll), while the map shows a change
 * within about a second (§7a). Then, if nothing is free
 * after all (someone took the seats at once), it pauses again by the rule.
 * A few reads at most, once per action of the buyer's own.
 */
export const OWN_FREED_LISTEN_MS = 5_000;
