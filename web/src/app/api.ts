/**
 * The booking functions of CONTRACT §3 (and §11's best available) and the
 * waiting room's `JoinQueue` (§7), called from the browser with the signed-in user's ID token. Every
 * failure becomes an {@link ApiError} with the contract's code; a network
 * failure is `unavailable`.
 *
 * Calls that create something carry a `requestId`, so a retry after a lost
 * answer or a `503` joins the first attempt instead of booking twice: these
 * are retried here, with the same `requestId`, a few times. `JoinQueue`
 * needs none: a user has one place per sale, and joining again answers it.
 *
 * With App Check on (appcheck.ts), the sale's functions (CONTRACT §12) get
 * its token in `X-Firebase-AppCheck`.
 *
 * The door (CONTRACT §13): `CheckIn` (a scan, idempotent by its `nonce`),
 * `TransferTicket`, and `GET /TicketKeys` (no token).
 */
import type { User } from "firebase/auth";
import type { TicketKeySet } from "../ticketcode";

export interface Booking {
  bookingId: string;
  screeningId: string;
  seats: string[];
  status: "confirmed" | "cancelled";
  /** What paid for it, on a priced screening (CONTRACT §10). */
  payment?: { amount: number; currency: string };
  /** When it was made (the document's createdAt), in ms; not in the functions' answers. */
  createdAtMs?: number;
}

export interface Hold {
  holdId: string;
  screeningId: string;
  seats: string[];
  status: "held" | "paying" | "confirmed" | "released" | "expired";
  /** RFC 3339, the server's time. */
  heldUntil: string;
}

/** JoinQueue's answer: the caller's place in the sale's queue (CONTRACT §7). */
export interface QueuePlace {
  screeningId: string;
  queueId: string;
  status: "waiting" | "admitted" | "done" | "expired";
  /** RFC 3339, the server's time; with `admitted`. */
  passUntil?: string;
}

/** CheckoutHold's answer (CONTRACT §10): where to pay, and what. */
export interface Checkout {
  holdId: string;
  checkoutUrl: string;
  /** RFC 3339: the hold is kept for paying until then. */
  heldUntil: string;
  amount: number;
  currency: string;
}

/** The §7 fields of a sale, as OperateSale takes and answers them (opensAt in RFC 3339). */
export interface SaleFields {
  opensAt?: string;
  admitPerMinute?: number | null;
  maxActive?: number | null;
  passSeconds?: number | null;
  maxSeatsPerUser?: number | null;
  /** CONTRACT §12: only users whose email is verified may join. */
  requireVerifiedEmail?: boolean;
}

/** `screenings/{id}.door` as OperateSale takes it (CONTRACT §13; opensAt in RFC 3339). */
export interface DoorFields {
  opensAt?: string;
  gates?: string[];
  reentry?: boolean;
}

/** OperateSale's request (CONTRACT §8; `configure-door` of §13). */
export interface Operation {
  screeningId: string;
  action: "configure" | "pause" | "resume" | "close" | "revoke" | "configure-door";
  sale?: SaleFields;
  door?: DoorFields;
  uid?: string;
  reason?: string;
}

/** OperateSale's answer: the sale's state and fields after the action. */
export interface Operated {
  screeningId: string;
  state: string;
  sale: SaleFields & Record<string, unknown>;
}

/** CheckIn's answer (CONTRACT §13): the scan let someone in or out. */
export interface CheckedIn {
  result: "admitted" | "exited";
  ticketId: string;
  screeningId: string;
  seatId: string;
  gate: string;
  /** RFC 3339, the server's time of the entry. */
  at: string;
}

/** CheckIn's request: `screeningId` and `gate` are the scanner's. */
export interface Scan {
  screeningId: string;
  gate: string;
  code: string;
  /** The scanner's, at least 16 characters, one per scan: a retry with it answers the same. */
  nonce: string;
  direction?: "in" | "out";
  /** RFC 3339, the device's clock when the code was read. */
  scannedAt?: string;
  offline?: boolean;
}

/** TransferTicket's answer: the ticket as its new user has it (not its code). */
export interface Transferred {
  ticketId: string;
  screeningId: string;
  seatId: string;
  version: number;
}

/** The extras of a §13 error, beside its code: where and when a ticket went in, or its screening. */
export interface ErrorDetails {
  gate?: string;
  /** RFC 3339. */
  at?: string;
  screeningId?: string;
}

/** A §3 error answer (or `unavailable` when no answer came). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The seats a `409` names. */
    readonly seats: string[] = [],
    /** The seats left, with `409 no_seats_together` (CONTRACT §11). */
    readonly seatsLeft?: number,
    /** CheckIn's extras (CONTRACT §13): `already_in`'s gate and at, `wrong_screening`'s screeningId. */
    readonly details: ErrorDetails = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}

interface ErrorBody {
  error?: { code?: unknown; message?: unknown; seats?: unknown; seatsLeft?: unknown; gate?: unknown; at?: unknown; screeningId?: unknown };
}

/** Turns an error answer into an ApiError, whatever its body. */
export async function errorFrom(res: Response): Promise<ApiError> {
  let body: ErrorBody = {};
  try {
    body = (await res.json()) as ErrorBody;
  } catch {
    // not JSON: a proxy's page, say
  }
  const e = body.error ?? {};
  // A front end's 429 (no instance free in time; plain text) is retried as a 503 is.
  const busy = res.status >= 500 || res.status === 429;
  const code = typeof e.code === "string" ? e.code : busy ? "unavailable" : "unknown";
  const message = typeof e.message === "string" ? e.message : `HTTP ${String(res.status)}`;
  const seats = Array.isArray(e.seats) ? e.seats.filter((s): s is string => typeof s === "string") : [];
  const details: ErrorDetails = {};
  if (typeof e.gate === "string") details.gate = e.gate;
  if (typeof e.at === "string") details.at = e.at;
  if (typeof e.screeningId === "string") details.screeningId = e.screeningId;
  return new ApiError(res.status, code, message, seats, typeof e.seatsLeft === "number" ? e.seatsLeft : undefined, details);
}

/** The functions that verify App Check tokens (CONTRACT §12). */
export const APP_CHECKED: ReadonlySet<string> = new Set(["JoinQueue", "HoldSeats", "BookSeats", "CheckoutHold"]);
export const APP_CHECK_HEADER = "X-Firebase-AppCheck";

export interface ApiOptions {
  /** Attempts for a lost answer, a `503`, a front end's `429` or a `409 seat_busy`. Default 3. */
  attempts?: number;
  /** Wait before the first retry, doubled each time (a `Retry-After` wins, up to 5 s). Default 400 ms. */
  backoffMs?: number;
  /**
   * The App Check token for the functions in APP_CHECKED (appcheck.ts);
   * undefined: App Check is off, no header.
   */
  appCheckToken?: ((forceRefresh: boolean) => Promise<string>) | undefined;
  /** Gives up on an attempt after this long (then `unavailable`, retried as a lost answer is). Default: none. */
  timeoutMs?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A client of the functions at `baseURL` for the user that `user()` returns. */
export class Api {
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly appCheckToken: ((forceRefresh: boolean) => Promise<string>) | undefined;
  private readonly timeoutMs: number | undefined;

  constructor(
    private readonly baseURL: string,
    private readonly user: () => User | null,
    options: ApiOptions = {},
  ) {
    this.attempts = options.attempts ?? 3;
    this.backoffMs = options.backoffMs ?? 400;
    this.appCheckToken = options.appCheckToken;
    this.timeoutMs = options.timeoutMs;
  }

  bookSeats(screeningId: string, seats: string[], requestId: string = crypto.randomUUID()): Promise<Booking> {
    return this.call("BookSeats", { screeningId, seats, requestId });
  }

  holdSeats(screeningId: string, seats: string[], holdSeconds?: number, requestId: string = crypto.randomUUID()): Promise<Hold> {
    return this.call("HoldSeats", holdSeconds === undefined ? { screeningId, seats, requestId } : { screeningId, seats, requestId, holdSeconds });
  }

  /** Holds `count` seats the server chooses, best first (CONTRACT §11); `together: false` takes them apart if need be. */
  holdBest(screeningId: string, count: number, opts: { holdSeconds?: number; together?: boolean } = {}, requestId: string = crypto.randomUUID()): Promise<Hold> {
    const body: Record<string, unknown> = { screeningId, count, requestId };
    if (opts.holdSeconds !== undefined) body.holdSeconds = opts.holdSeconds;
    if (opts.together === false) body.together = false;
    return this.call("HoldSeats", body);
  }

  extendHold(holdId: string, holdSeconds: number): Promise<Hold> {
    return this.call("ExtendHold", { holdId, holdSeconds });
  }

  confirmHold(holdId: string): Promise<Booking> {
    return this.call("ConfirmHold", { holdId });
  }

  /** Starts paying for a hold (§10): a retry answers the same Checkout Session. `returnUrl`: where the checkout sends the buyer back. */
  checkoutHold(holdId: string, returnUrl: string): Promise<Checkout> {
    return this.call("CheckoutHold", { holdId, returnUrl });
  }

  releaseHold(holdId: string): Promise<Hold> {
    return this.call("ReleaseHold", { holdId });
  }

  cancelBooking(bookingId: string): Promise<Booking> {
    return this.call("CancelBooking", { bookingId });
  }

  /** Joins the queue of the screening's sale, or answers the place the caller has. */
  joinQueue(screeningId: string): Promise<QueuePlace> {
    return this.call("JoinQueue", { screeningId });
  }

  /** Runs an operator's action on a sale (CONTRACT §8; every action is idempotent, so it is retried like the rest). */
  operateSale(op: Operation): Promise<Operated> {
    const body: Record<string, unknown> = { screeningId: op.screeningId, action: op.action };
    if (op.sale !== undefined) body.sale = op.sale;
    if (op.door !== undefined) body.door = op.door;
    if (op.uid !== undefined) body.uid = op.uid;
    if (op.reason) body.reason = op.reason;
    return this.call("OperateSale", body);
  }

  /** A scan at a gate (CONTRACT §13): a retry with the same nonce answers the same and writes nothing more. */
  checkIn(scan: Scan): Promise<CheckedIn> {
    return this.call("CheckIn", { ...scan });
  }

  /** Moves the caller's ticket to the account of `toEmail`: a new version and code; the old code is refused from then on. */
  transferTicket(ticketId: string, toEmail: string): Promise<Transferred> {
    return this.call("TransferTicket", { ticketId, toEmail });
  }

  /** Sets or changes a screening's door (CONTRACT §13) through OperateSale. */
  configureDoor(screeningId: string, door: DoorFields, reason?: string): Promise<Operated> {
    return this.operateSale({ screeningId, action: "configure-door", door, ...(reason ? { reason } : {}) });
  }

  /** The public keys of the ticket codes (`GET /TicketKeys`, no token): a JWK Set. */
  async ticketKeys(): Promise<TicketKeySet> {
    let res: Response;
    try {
      // Revalidated, not taken from the HTTP cache: an answer means the server is there.
      const init: RequestInit = { cache: "no-cache" };
      if (this.timeoutMs !== undefined) init.signal = AbortSignal.timeout(this.timeoutMs);
      res = await fetch(`${this.baseURL}/TicketKeys`, init);
    } catch (cause) {
      throw new ApiError(0, "unavailable", cause instanceof Error ? cause.message : String(cause));
    }
    if (!res.ok) throw await errorFrom(res);
    return (await res.json()) as TicketKeySet;
  }

  /** POSTs body to the function, retrying what is safe to retry. */
  async call<T>(fn: string, body: object): Promise<T> {
    const user = this.user();
    if (!user) throw new ApiError(401, "unauthenticated", "sign in first");
    let wait = this.backoffMs;
    const appCheck = APP_CHECKED.has(fn) ? this.appCheckToken : undefined;
    let refreshAppCheck = false;
    for (let attempt = 1; ; attempt++) {
      let err: ApiError;
      try {
        const headers: Record<string, string> = { "Content-Type": "application/json", Authorization: `Bearer ${await user.getIdToken()}` };
        if (appCheck) headers[APP_CHECK_HEADER] = await appCheck(refreshAppCheck);
        const init: RequestInit = { method: "POST", headers, body: JSON.stringify(body) };
        if (this.timeoutMs !== undefined) init.signal = AbortSignal.timeout(this.timeoutMs);
        const res = await fetch(`${this.baseURL}/${fn}`, init);
        if (res.ok) return (await res.json()) as T;
        err = await errorFrom(res);
        const retryAfter = Number(res.headers.get("Retry-After"));
        if (retryAfter > 0) wait = Math.min(retryAfter * 1000, 5000);
      } catch (cause) {
        err = new ApiError(0, "unavailable", cause instanceof Error ? cause.message : String(cause));
      }
      // A refused App Check token may be one the SDK kept from before (a
      // local run's key is new each run): once more, with a fresh token, at once.
      if (err.code === "app_check_failed" && appCheck && !refreshAppCheck && attempt < this.attempts) {
        refreshAppCheck = true;
        continue;
      }
      const retriable = err.code === "unavailable" || err.code === "seat_busy";
      if (!retriable || attempt >= this.attempts) throw err;
      await sleep(wait);
      wait *= 2;
    }
  }
}
