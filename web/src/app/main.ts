/**
 * The seat-map app (CONTRACT §6): a live map of one screening's seats from
 * `onSnapshot`, sign-in, select then book or hold, a countdown on the
 * user's holds with confirm and release, and the user's bookings with cancel.
 * Everything that changes the map goes through the HTTP functions; the page
 * itself writes nothing to Firestore.
 *
 * A screening with a sale (§7) shows the waiting room instead of the map:
 * join, a countdown to the opening, "about N ahead of you" from the public
 * state of `sales/{id}`, polled from SaleState (§14, salestate.ts), and,
 * from the user's own place `queue/{queueId}` (read while far back,
 * listened to near the front), the map once admitted, with the pass's
 * countdown. The per-seat listener is
 * open only while the pass is live: waiting users never open it; and it
 * pauses while the map shows nothing free and SaleState no seat left
 * (seatMapIdle), listening again when a seat is left, or at once when the
 * page freed seats itself (a release, a cancel, its own hold's end).
 *
 * A priced screening (§10) is held, then paid through Stripe Checkout: the
 * hold shows its price and a Pay button that opens the checkout page; back
 * here, the payment's state shows live from `payments/{holdId}`.
 */
import type { Auth, User } from "firebase/auth";
import { type FirestoreError, type Timestamp, type Unsubscribe, collection, doc, getDoc, onSnapshot, query, where } from "firebase/firestore";
import { type BarStep, nextStep } from "./actionbar";
import { Api, ApiError, type Booking, type Hold } from "./api";
import { BestCard, bestWhy, flash } from "./best";
import { type HoldAction, type HoldPhase, showHold } from "./holds";
import { type PaymentDoc, type PriceCategory, money, paymentState, paymentWords, priceCategories, priceRange, rowsWords, seatPrice, totalOf } from "./pay";
import { buildHall, rowWidthInSeats } from "./hall";
import { MapZoom } from "./mapzoom";
import { whenWords } from "./when";
import { orderRef } from "./ticketview";
import { type Env, servicesBeforeAuth } from "./config";
import { OWN_FREED_LISTEN_MS, placeIsNear, placeReadDelayMs, pollSaleState, saleStateBase, seatMapIdle, waitOf } from "./salestate";
import {
  DEFAULT_MAX_SEATS_PER_USER,
  type Place,
  type PlaceStatus,
  type QueueState,
  type SaleDoc,
  type SaleState,
  ServerClock,
  lineEstimate,
  queueId,
  queueState,
} from "./queue";
import { type ErrorContext, type Mine, type Screening, type SeatDoc, type SeatMapDoc, type SeatState, countdown, errorMessage, layoutProblem, seatGrid, seatList, seatOrder, seatState, seatStateFromMap } from "./seats";
import { $, $as, Status, h, runAction } from "./ui";

const STATE_WORDS: Record<SeatState, string> = {
  free: "free",
  selected: "selected by you",
  held: "held by someone checking out",
  booked: "booked",
  "mine-held": "held for you",
  "mine-booked": "booked by you",
};
/** How many seats one booking may take. */
const MAX_SEATS = 10;

interface HoldView {
  holdId: string;
  seats: string[];
  heldUntilMs: number;
  /** Being paid for (§10): its checkout session is open. */
  paying?: boolean;
}

/** The user's place document, queue/{queueId}. */
type PlaceData = { status: PlaceStatus; order?: string; joinedAt?: Timestamp; admittedAt?: Timestamp; passUntil?: Timestamp; revokedAt?: Timestamp };

async function main(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const screeningId = params.get("screening") ?? "demo";
  const holdSecondsParam = Number(params.get("holdSeconds") ?? "");
  const holdSeconds = Number.isInteger(holdSecondsParam) && holdSecondsParam >= 5 && holdSecondsParam <= 900 ? holdSecondsParam : 420;

  const status = new Status($("[data-status]"));
  const env = import.meta.env as Env;
  const { app, db, functionsURL, appCheckToken } = await servicesBeforeAuth(env);
  // Auth comes once the map is drawn (below): until then, as signed out.
  let auth: Auth | undefined;
  const api = new Api(functionsURL, () => auth?.currentUser ?? null, { appCheckToken });

  const mapEl = $("#seatmap");
  const zoom = new MapZoom($("#mapview"), mapEl, $("#zoom"), $as(HTMLButtonElement, '[data-action="zoom-in"]'), $as(HTMLButtonElement, '[data-action="zoom-out"]'));
  const bookButton = $as(HTMLButtonElement, '[data-action="book"]');
  const holdButton = $as(HTMLButtonElement, '[data-action="hold"]');
  const holdMinutes = Math.round(holdSeconds / 60);
  holdButton.textContent = `Hold for ${holdMinutes >= 1 ? String(holdMinutes) : "<1"} min`;

  const joinButton = $as(HTMLButtonElement, '[data-action="join"]');
  const bestCard = new BestCard($("#best-card"), (count) => void holdBest(count));

  let screening: Screening | undefined;
  let user: User | null = null;
  let busy = false;
  const clock = new ServerClock();
  const seatDocs = new Map<string, SeatDoc>(); // the per-seat map, without a sale
  // During a sale, the map is one document (CONTRACT §7a): its characters
  // in layout order, and each seat's index in it.
  let saleMap: string | undefined;
  const seatIndex = new Map<string, number>();
  const seatButtons = new Map<string, HTMLButtonElement>();
  const selected = new Set<string>();
  // The user's bookings and holds: from the queries, and from the functions'
  // answers until the queries catch up (so the page never shows a just-made
  // booking as someone else's).
  const bookings = new Map<string, Booking>();
  const answeredBookings = new Map<string, Booking>();
  const holds = new Map<string, HoldView>();
  const answeredHolds = new Map<string, HoldView>();
  const gone = new Set<string>(); // cancelled bookings and ended holds, until the queries agree
  // Holds and bookings the queries dropped: they ended (released, expired, confirmed, cancelled), for good,
  // whatever answer comes after (the same user's other tab may end them).
  const ended = new Set<string>();
  const payments = new Map<string, PaymentDoc>(); // the user's payments for this screening, by hold (§10)
  // Back from the checkout page: ?checkout=paid|cancelled&hold=<holdId>.
  const returned = { outcome: params.get("checkout"), hold: params.get("hold") };
  const paidHold = returned.outcome === "paid" ? returned.hold : null;
  if (returned.outcome) {
    params.delete("checkout");
    params.delete("hold");
    history.replaceState(null, "", `${location.pathname}?${params.toString()}`);
  }

  // The waiting room (§7), for a screening with a sale.
  let sale: SaleDoc | undefined; // sales/{id}, live; undefined until the admitter first writes it
  let placeId: string | undefined; // queue/{placeId}: the signed-in user's place
  let placeSeen: Place | null | undefined; // from the listener; null: the user has no place
  let placeAnswered: Place | undefined; // from JoinQueue's answer, until the listener has the place
  let stopSeats: Unsubscribe | undefined;
  // The seat map's listener stopped while nothing is free (seatMapIdle): the last map still shows.
  let seatsPaused = false;
  // Until then (Date.now()) the map is listened to whatever seatMapIdle says: the page freed seats itself (ownSeatsFreed).
  let listenUntilMs = 0;
  // During a sale, seats the map as last painted shows free or selected (paint).
  let freeShown = 0;
  let stopSale: Unsubscribe | undefined;
  let stopPlace: Unsubscribe | undefined;
  let placeReading = false; // a get of the place is under way
  let placeReadTimer: ReturnType<typeof setTimeout> | undefined; // a read of a place without its order yet, spread over the line (placeReadDelayMs)
  let unrankedReads = 0; // reads scheduled for the place while it had no order, since the join or sign-in
  let shownQueueState: QueueState | undefined; // as last painted, while the sale is on
  const shownHolds = new Map<string, HoldPhase>(); // each hold's phase as last painted
  const confirmingCancel = new Set<string>(); // paid bookings whose cancel asks "and refund?"
  let orderShown: string | undefined; // the booking just paid for, shown as the order to keep

  const now = () => clock.now();
  const myPlace = () => placeSeen ?? placeAnswered ?? null;
  const saleState = (): SaleState => sale?.state ?? "scheduled"; // not written yet: scheduled, as the rules read it
  const selling = () => saleState() === "scheduled" || saleState() === "open" || saleState() === "paused";
  /**
   * Whether the seat map shows: always without a sale; during one, only to a
   * user whose pass is live while the sale is scheduled or open (the rules
   * let nobody else read it, and once it is sold out there is nothing to pick).
   */
  const mapShown = () => screening !== undefined && (!screening.sale || (queueState(myPlace(), now()) === "admitted" && selling()));
  /** Forgets a booking or hold that was cancelled, released, confirmed or has expired. */
  const forget = (id: string) => {
    gone.add(id);
    answeredBookings.delete(id);
    answeredHolds.delete(id);
  };
  /**
   * The page freed seats itself: a release or cancel it made, a hold of its
   * own that lapsed or ended. Its last map and SaleState do not show them
   * free yet: a paused map listens again at once (OWN_FREED_LISTEN_MS).
   */
  const ownSeatsFreed = () => {
    listenUntilMs = Date.now() + OWN_FREED_LISTEN_MS;
  };
  /**
   * During a sale, the map shows no seat to choose: every seat is booked or
   * held (the user's own among them, perhaps), whether or not the page
   * still listens to it (seatsPaused). Nothing to choose or find then.
   */
  const nothingFree = () => seatsPaused || (screening?.sale !== undefined && saleMap !== undefined && mapShown() && freeShown === 0);
  const myBookings = () => new Map([...answeredBookings, ...bookings].filter(([id]) => !gone.has(id) && !ended.has(id)));
  /** The user's live holds; of an answer and a snapshot, the later end wins (an extension). */
  const myHolds = () => {
    const out = new Map<string, HoldView>();
    for (const [id, hv] of [...answeredHolds, ...holds]) {
      if (gone.has(id) || ended.has(id)) continue;
      const seen = out.get(id);
      if (!seen || hv.heldUntilMs > seen.heldUntilMs) out.set(id, hv);
    }
    return out;
  };

  /** Which bookings and holds are this user's, for seatState. */
  const mine = (at: number = now()): Mine => {
    const bs = myBookings();
    const hs = [...myHolds().values()].filter((h) => h.heldUntilMs > at);
    return {
      bookings: new Set(bs.keys()),
      holds: new Set(hs.map((h) => h.holdId)),
      bookedSeats: new Set([...bs.values()].flatMap((b) => b.seats)),
      heldSeats: new Set(hs.flatMap((h) => h.seats)),
      ended: new Set([...gone, ...ended]),
    };
  };

  function stateOf(seat: string, m: Mine = mine(), at: number = now()): SeatState {
    if (saleMap !== undefined) return seatStateFromMap(saleMap[seatIndex.get(seat) ?? -1], seat, selected.has(seat), m);
    return seatState(seatDocs.get(seat), seat, selected.has(seat), m, at);
  }

  // ---- the map ----

  /**
   * The map, a row drawn as one row (the aisle in the middle of a row of 12
   * seats or more); wider than the screen, it pans and zooms in its own box
   * (mapzoom.ts), its seats a finger's size at the first zoom.
   */
  function buildMap(s: Screening): void {
    seatButtons.clear();
    seatIndex.clear();
    seatGrid(s).flat().forEach((seat, i) => seatIndex.set(seat, i));
    zoom.expect(rowWidthInSeats(s.seatsPerRow));
    const made = buildHall(s, (seat, number) => {
      const b = h("button", { type: "button", class: "seat", "data-seat": seat, tabindex: "-1" }, String(number));
      b.addEventListener("click", () => {
        toggle(seat);
        showTip(seat);
      });
      return b;
    }, mapEl);
    for (const [seat, b] of made) seatButtons.set(seat, b);
    const first = seatButtons.values().next().value;
    if (first) first.tabIndex = 0;
    paint();
    zoom.reset();
  }

  /** Arrow keys move between seats; the map is one tab stop (roving tabindex). */
  mapEl.addEventListener("keydown", (ev) => {
    const target = ev.target;
    if (!(target instanceof HTMLButtonElement) || !screening) return;
    const grid = seatGrid(screening);
    const seat = target.dataset.seat ?? "";
    const r = grid.findIndex((row) => row.includes(seat));
    const c = grid[r]?.indexOf(seat) ?? -1;
    const moves: Record<string, [number, number]> = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    let next: string | undefined;
    const move = moves[ev.key];
    if (move) {
      const nr = Math.min(Math.max(r + move[0], 0), grid.length - 1);
      const row = grid[nr] ?? [];
      next = row[Math.min(Math.max(c + move[1], 0), row.length - 1)];
    } else if (ev.key === "Home") {
      next = grid[r]?.[0];
    } else if (ev.key === "End") {
      const row = grid[r] ?? [];
      next = row[row.length - 1];
    }
    const b = next === undefined ? undefined : seatButtons.get(next);
    if (!b) return;
    ev.preventDefault();
    for (const other of seatButtons.values()) other.tabIndex = -1;
    b.tabIndex = 0;
    b.focus();
  });

  /** A tapped seat's price (and state, when it cannot be chosen), above it for a moment. */
  let tipTimer: ReturnType<typeof setTimeout> | undefined;
  // Placed in px above its seat: a new width (a phone turned) moves the seat, so the tip
  // goes (not on a new height alone: a phone's address bar comes and goes as it scrolls).
  let tipWidth = window.innerWidth;
  window.addEventListener("resize", () => {
    if (window.innerWidth !== tipWidth) $("#seat-tip").hidden = true;
    tipWidth = window.innerWidth;
  });
  function showTip(seat: string): void {
    const tip = $("#seat-tip");
    const b = seatButtons.get(seat);
    const price = screening?.price;
    clearTimeout(tipTimer);
    if (!b || !price) {
      tip.hidden = true;
      return;
    }
    const state = stateOf(seat);
    const words = state === "free" || state === "selected" ? "" : ` · ${STATE_WORDS[state]}`;
    tip.textContent = `${seat} · ${money(seatPrice(price, seat), price.currency)}${words}`;
    tip.hidden = false;
    const hall = $("#hall").getBoundingClientRect();
    const r = b.getBoundingClientRect();
    const half = tip.offsetWidth / 2;
    const x = Math.min(Math.max(r.left + r.width / 2 - hall.left, half + 4), hall.width - half - 4);
    tip.style.left = `${String(x)}px`;
    tip.style.top = `${String(r.top - hall.top - tip.offsetHeight - 6)}px`;
    tipTimer = setTimeout(() => (tip.hidden = true), 2500);
  }

  function toggle(seat: string): void {
    if (!user) {
      status.error("unauthenticated", "Sign in to choose seats. Anyone can look at the map.");
      return;
    }
    const state = stateOf(seat);
    if (state === "selected") {
      selected.delete(seat);
    } else if (state === "free") {
      if (selected.size >= MAX_SEATS) {
        status.error("invalid_argument", `You can book up to ${String(MAX_SEATS)} seats at once.`);
        return;
      }
      selected.add(seat);
    } else {
      return; // taken seats do nothing; their label says why
    }
    paint();
  }

  /** Brings the listeners, every seat, the selection, the lists and the waiting room up to date. */
  function paint(): void {
    syncListeners();
    let free = 0;
    const at = now();
    const m = mine(at);
    const cats = paintPrices();
    for (const [seat, b] of seatButtons) {
      let state = stateOf(seat, m, at);
      if (selected.has(seat) && state !== "selected") {
        selected.delete(seat); // taken by someone meanwhile
        state = stateOf(seat, m, at);
      }
      if (state === "free" || state === "selected") free++;
      if (b.dataset.state !== state) b.dataset.state = state;
      setAttr(b, "data-cat", cats.get(seat.replace(/\d+$/, "")) ?? "");
      const row = seat.replace(/\d+$/, "");
      const num = seat.slice(row.length);
      const cost = screening?.price ? `${money(seatPrice(screening.price, seat), screening.price.currency)}, ` : "";
      setAttr(b, "aria-label", `Row ${row}, seat ${num}, ${cost}${STATE_WORDS[state]}`);
      setAttr(b, "aria-pressed", String(state === "selected"));
      // Taken seats and a visitor's map stay clickable (a click explains,
      // or does nothing): the label says the state, and nothing waits for
      // a seat to become "enabled".
    }
    freeShown = free;
    $("#left").textContent = !screening
      ? ""
      : mapShown()
        ? `${String(free)} of ${String(seatButtons.size)} seats free`
        : sale
          ? `${String(sale.seatsLeft)} of ${String(seatButtons.size)} seats left`
          : "";
    mapEl.classList.toggle("readonly", !user);

    const sel = [...selected].sort(seatOrder);
    const price = screening?.price;
    $("#selection").textContent = !user
      ? "Sign in to choose seats."
      : sel.length > 0
        ? `${seatList(sel)} (${String(sel.length)} seat${sel.length === 1 ? "" : "s"}${price ? `, ${money(totalOf(price, sel), price.currency)}` : ""})`
        : nothingFree()
          ? "No seat is free to choose right now."
          : "Tap free seats on the map to choose them.";
    bookButton.disabled = holdButton.disabled = !user || sel.length === 0 || busy;
    // A priced screening is held, then paid (BookSeats answers 402).
    bookButton.hidden = price !== undefined;
    holdButton.classList.toggle("primary", price !== undefined);
    bestCard.update({
      // Nothing free to find while the map shows none.
      shown: user !== null && mapShown() && !nothingFree(),
      first: screening?.sale !== undefined,
      stage: $(".stage"),
      beforeInStage: $("#hall"),
      panel: $(".panel"),
      beforeInPanel: $("#holds-card"),
      max: screening?.sale ? (screening.sale.maxSeatsPerUser ?? DEFAULT_MAX_SEATS_PER_USER) : undefined,
      busy,
    });
    paintHolds();
    paintBookings();
    paintPayments();
    paintQueue();
    paintBar();
  }

  /**
   * The screening's prices before choosing (issue #50.3): its categories as
   * colours of the free seats with a legend (two or more), and the range on
   * the sale's screens. Returns each row's category (`data-cat`).
   */
  let shownPrices = "";
  function paintPrices(): Map<string, string> {
    const price = screening?.price;
    const rows = screening?.rows ?? [];
    const cats: PriceCategory[] = price ? priceCategories(price, rows) : [];
    // The cheapest rows keep the plain free colour; dearer ones take a category's.
    const catOf = (c: PriceCategory) => (c.cat === cats.length - 1 ? undefined : String(Math.min(c.cat, 3)));
    const byRow = new Map<string, string>();
    for (const c of cats) for (const r of c.rows) byRow.set(r, catOf(c) ?? "");
    const key = price ? JSON.stringify([price, rows]) : "";
    if (key !== shownPrices) {
      shownPrices = key;
      const legend = $("#price-legend");
      legend.hidden = cats.length === 0 || !price;
      legend.replaceChildren(
        ...cats.map((c) =>
          h(
            "li",
            {},
            ...(cats.length > 1 ? [h("span", catOf(c) === undefined ? { class: "swatch", "data-sample": "free" } : { class: "swatch", "data-sample-cat": catOf(c) ?? "" })] : []),
            h("strong", {}, price ? money(c.amount, price.currency) : ""),
            cats.length > 1 ? ` ${rowsWords(c.rows, rows)}` : " every seat",
          ),
        ),
      );
    }
    const range = $("[data-price-range]");
    const st = saleState();
    range.hidden = !price || st === "soldout" || st === "closed";
    if (price) {
      const [lo, hi] = priceRange(price, rows);
      setText(range, lo === hi ? `Tickets ${money(lo, price.currency)} each.` : `Tickets ${money(lo, price.currency)} to ${money(hi, price.currency)}, by row.`);
    }
    return byRow;
  }

  /** The phone's action bar: what is in hand, its total, and the one next step (shown by style.css on a narrow screen only). */
  let barStep: BarStep | undefined;
  function paintBar(): void {
    const at = now();
    barStep = nextStep({
      signedIn: user !== null,
      choosing: mapShown() && !nothingFree(), // nothing to choose while the map shows no seat free
      selection: [...selected].sort(seatOrder),
      // An operator's revoke released the holds (showHold): nothing to pay.
      holds: screening?.sale !== undefined && myPlace()?.revoked === true ? [] : [...myHolds().values()].sort((a, b) => a.heldUntilMs - b.heldUntilMs),
      price: screening?.price,
      nowMs: at,
      findCount: user !== null && mapShown() && !nothingFree() ? bestCard.count : undefined,
    });
    const bar = $("#actionbar");
    bar.hidden = barStep === undefined;
    if (!barStep) return;
    setText($("[data-bar-text]", bar), barStep.text);
    setText($("[data-bar-total]", bar), barStep.total);
    const button = $as(HTMLButtonElement, "[data-bar-action]", bar);
    button.hidden = barStep.action === undefined;
    button.dataset.barAction = barStep.action ?? "";
    setText(button, barStep.label);
    button.disabled = busy && barStep.action !== "sign-in";
  }
  $("[data-bar-action]").addEventListener("click", () => {
    const step = barStep;
    switch (step?.action) {
      case "sign-in":
        document.querySelector<HTMLElement>('[data-field="email"]')?.focus();
        return;
      case "hold":
        void holdSelected();
        return;
      case "find":
        void holdBest(bestCard.count);
        return;
      case "pay":
        if (step.holdId) void payHold(step.holdId);
        return;
      case "confirm":
        if (step.holdId) void confirmHold(step.holdId);
        return;
    }
  });

  /** The waiting room: hidden without a sale; with one, the queue screen, and the map only while it shows. */
  function paintQueue(): void {
    const cfg = screening?.sale;
    const box = $("#queue");
    box.hidden = !cfg;
    $("#hall").hidden = $("#selection-card").hidden = cfg !== undefined && !mapShown();
    if (!cfg) return;
    const at = now();
    const place = myPlace();
    const qs = queueState(place, at);
    const st = saleState();
    const before = at < cfg.opensAt.toMillis();
    const line = qs === "waiting" && !before && sale ? lineEstimate(place?.order, sale, cfg) : undefined;
    const ahead = line?.ahead;
    box.dataset.saleState = st;
    box.dataset.queueState = qs;
    // Why an expired place ended: an operator's revoke, or its time.
    if (qs === "expired") box.dataset.queueEnded = place?.revoked ? "revoked" : "time";
    else delete box.dataset.queueEnded;
    if (sale) box.dataset.seatsLeft = String(sale.seatsLeft);
    else delete box.dataset.seatsLeft;
    // The seat map's listener stopped while nothing is free (syncListeners).
    if (seatsPaused) box.dataset.seatMap = "paused";
    else delete box.dataset.seatMap;

    const max = cfg.maxSeatsPerUser ?? DEFAULT_MAX_SEATS_PER_USER;
    const seatsWord = `${String(max)} seat${max === 1 ? "" : "s"}`;
    let heading = "Waiting room";
    let text: string;
    if (st === "closed") {
      [heading, text] = ["Sales closed", "The sale is closed: this screening takes no more bookings."];
    } else if (st === "paused" && qs !== "admitted" && qs !== "done" && qs !== "expired") {
      [heading, text] = [
        "Sale paused",
        qs === "waiting"
          ? "The sale is paused for a moment. Your place in the queue is kept: keep this page open, and you will be let in as soon as it goes on."
          : "The sale is paused for a moment. You can still join the queue, and your place will be kept.",
      ];
    } else if (st === "soldout") {
      [heading, text] = ["Sold out", qs === "done" ? "Every seat is booked now, yours included: see your booking below." : "Sorry, every seat of this screening is booked."];
    } else if (qs === "none") {
      text = !user
        ? "Tickets for this screening are sold through a waiting room. Sign in to join the queue."
        : before
          ? "Join the queue now: everyone who joins before the opening gets a place in line by a fair, random draw, so there is no need to rush."
          : "Join the queue: people are let in to choose their seats in turn.";
    } else if (qs === "waiting") {
      // The join's status line says "You are in the queue.": the box says what comes next.
      text = before
        ? "At the opening, everyone who joined early gets a place in line by a random draw."
        : ahead === undefined
          ? "The sale has opened. Places in line are being drawn…"
          : "Keep this page open: the seat map appears here when it is your turn.";
    } else if (qs === "admitted" && nothingFree()) {
      // The user's own seats may be among those taken: they are not "someone checking out".
      const m = mine(at);
      const own = m.heldSeats.size > 0 || m.bookedSeats.size > 0;
      [heading, text] = [
        "Your turn",
        `${own ? "Apart from your own seats, every seat is booked or held by others right now." : "Every seat is booked or held by someone checking out right now."} Keep this page open: the map updates when a seat comes free.`,
      ];
    } else if (qs === "admitted") {
      [heading, text] = ["Your turn", `Choose up to ${seatsWord}, then hold or book them before your pass ends.`];
    } else if (qs === "done") {
      [heading, text] = ["All set", "Your booking is confirmed, so your pass has ended and the next person in line can choose."];
    } else if (place?.revoked) {
      // The heading says who ended it; the words say what follows (the status line tells it happened).
      [heading, text] =
        place.passUntilMs === undefined
          ? ["The box office removed your place", "If you think this is a mistake, please contact the box office."]
          : ["The box office ended your pass", "The seat map has closed and any seats you held were released. If you think this is a mistake, please contact the box office."];
    } else {
      const held = [...myHolds().values()].some((x) => x.heldUntilMs > at);
      const pay = screening?.price ? "paid for" : "confirmed";
      [heading, text] = ["Your pass has ended", `Time ran out, so the seat map has closed.${held ? ` The seats on hold for you can still be ${pay} below while the hold lasts.` : ""}`];
    }
    // An operator's pause admits nobody new; a live pass goes on (CONTRACT §7a), and the buyer is told so.
    if (st === "paused" && qs === "admitted") text += " The box office has paused letting more people in; your pass goes on.";
    setText($("#queue-h"), heading);
    setText($("#queue-text"), text);
    // The status line still tells of the join: say what changed since.
    if (shownQueueState === "waiting" && qs === "admitted")
      // Let in while nothing is free (SaleState, or the map drawn): nothing to choose yet (issue #51).
      status.ok(
        sale?.seatsLeft === 0 || nothingFree()
          ? "It is your turn. Every seat is taken right now: keep this page open, the map shows a seat as soon as one comes free."
          : "It is your turn: choose your seats before your pass ends.",
      );
    // What happened, in words of its own: the box below says where that leaves the buyer.
    else if (shownQueueState !== undefined && shownQueueState !== "expired" && qs === "expired" && place?.revoked)
      status.error("not_admitted", place.passUntilMs === undefined ? "The box office took you out of the queue." : "The box office ended your pass while you were choosing.");
    else if (shownQueueState === "waiting" && (st === "soldout" || st === "closed"))
      status.error(st === "soldout" ? "sold_out" : "screening_started", st === "soldout" ? "The last seats went while you waited." : "The sale closed while you waited.");
    shownQueueState = st === "soldout" || st === "closed" ? undefined : qs;

    $("#opens").hidden = !(before && selling());
    setText($("[data-opens-countdown]"), countdown(cfg.opensAt.toMillis() - at));
    const aheadEl = $("[data-queue-ahead]");
    aheadEl.hidden = ahead === undefined || !selling();
    aheadEl.dataset.queueAhead = ahead === undefined ? "" : String(ahead);
    setText(aheadEl, line?.aheadText ?? "");
    const wait = $("#queue-wait");
    wait.hidden = aheadEl.hidden;
    setText(wait, line?.waitText ?? "");
    $("#pass").hidden = !mapShown();
    setText($("[data-pass-countdown]"), countdown((place?.passUntilMs ?? 0) - at));
    joinButton.hidden = !user || qs !== "none" || !selling();
    joinButton.disabled = busy;
    // A sale for verified emails (§12): say so before the join, and help verify.
    const verify = $("#verify");
    verify.hidden = !(cfg.requireVerifiedEmail && user && !user.emailVerified && qs === "none" && selling());
    for (const b of verify.querySelectorAll("button")) b.disabled = busy;
  }

  /**
   * Opens and closes the listeners the state calls for: the seat map's only
   * while it shows (the rules judge a listener when it starts, and need not
   * judge it again when the pass ends, so the page closes it), the sale's while the
   * screening has one, and the user's place while signed in.
   */
  function syncListeners(): void {
    // Nothing free on the map and, by SaleState, no seat left: every version
    // of the map would be a read that shows nothing to do (issue #51). The
    // page stops listening and keeps drawing the last map; a poll that shows
    // a seat left (or another state) opens the listener again (one read).
    // The page's own release, cancel or hold's end overrules it for a moment
    // (ownSeatsFreed): it knows seats are free that neither shows yet.
    const idle = mapShown() && screening?.sale !== undefined && Date.now() >= listenUntilMs && seatMapIdle(saleMap, seatIndex.size, sale);
    if (idle && stopSeats) {
      stopSeats();
      stopSeats = undefined;
      seatsPaused = true;
    } else if (mapShown() && !idle && !stopSeats) {
      seatsPaused = false;
      // During a sale, one document (CONTRACT §7a): opening the map costs a
      // read, and a minute of it about 60, however many seats change.
      const onSnap = screening?.sale
        ? (next: (err: FirestoreError) => void): Unsubscribe =>
            onSnapshot(
              doc(db, "seatMaps", screeningId),
              (snap) => {
                const d = snap.data() as SeatMapDoc | undefined;
                saleMap = d?.seats ?? "";
                if (d) clock.sawAtLeast(d.updatedAt.toMillis());
                paint();
              },
              next,
            )
        : (next: (err: FirestoreError) => void): Unsubscribe =>
            onSnapshot(
              collection(db, "screenings", screeningId, "seats"),
              (snap) => {
                for (const change of snap.docChanges()) {
                  if (change.type === "removed") seatDocs.delete(change.doc.id);
                  else seatDocs.set(change.doc.id, change.doc.data() as SeatDoc);
                }
                paint();
              },
              next,
            );
      const listener: Unsubscribe = onSnap(
        // Left "open" (stopSeats stays set) so a refusal is not retried every second.
        (err) => {
          const stopped = () => status.error("unavailable", `The seat map stopped updating (${err.code}). Reload the page.`);
          if (err.code !== "permission-denied" || !screening?.sale) {
            stopped();
            return;
          }
          // The rules may end the listener as the pass ends (the emulator
          // judges it again when the place turns done), a moment before the
          // place's own update arrives: that is no error, unless the pass
          // still looks live by then.
          setTimeout(() => {
            if (stopSeats === listener && queueState(myPlace(), now()) === "admitted") stopped();
          }, 3000);
        },
      );
      stopSeats = listener;
    } else if (!mapShown() && (stopSeats || seatsPaused)) {
      stopSeats?.();
      stopSeats = undefined;
      seatsPaused = false;
      seatDocs.clear();
      saleMap = undefined;
      selected.clear();
    }

    const onSale = screening?.sale !== undefined;
    if (onSale && !stopSale) {
      // CONTRACT §14: the sale's public state is polled from SaleState (the CDN's), never listened to.
      stopSale = pollSaleState(
        saleStateBase(functionsURL),
        screeningId,
        (next) => {
          sale = next;
          if (sale) clock.sawAtLeast(sale.updatedAt.toMillis());
          rereadPlace(); // after the draw, and when admittedThrough reaches the place
          paint();
        },
        () => waitOf(myPlace(), sale, screening?.sale),
        () => undefined, // the next poll tries again
      ).stop;
    } else if (!onSale && stopSale) {
      stopSale();
      stopSale = undefined;
      sale = undefined;
    }

    // While waiting far from the front, the place is read (a get), not
    // listened to: once at first, once after the draw, and when
    // admittedThrough reaches it (rereadPlace); near the front, or
    // admitted, it is listened to.
    const near = placeIsNear(myPlace(), sale, screening?.sale);
    if (onSale && user && placeId !== undefined && !stopPlace && placeSeen === undefined && !near) readPlace();
    // placeSeen === null: the rules refused the place (nobody reads a place
    // that does not exist), so the user has none; listen again after a join.
    if (onSale && user && placeId !== undefined && !stopPlace && placeSeen !== null && near) {
      stopPlace = onSnapshot(
        doc(db, "queue", placeId),
        (snap) => {
          seePlace(snap.data() as PlaceData | undefined);
          paint();
        },
        (err) => {
          if (err.code === "permission-denied" && placeAnswered !== undefined) {
            // A listener opened before the join committed, refused only now:
            // the place exists (JoinQueue said so), so listen again.
            stopPlace = undefined;
            setTimeout(paint, 500);
          } else if (err.code === "permission-denied") {
            placeSeen = null;
            paint();
          } else {
            status.error("unavailable", `Your place in the queue stopped updating (${err.code}). Reload the page.`);
          }
        },
      );
    } else if (!(onSale && user) && stopPlace) {
      stopPlace();
      stopPlace = undefined;
    }
  }

  /** The user's place as a document gives it (listened to or read). */
  function seePlace(d: PlaceData | undefined): void {
    for (const t of [d?.joinedAt, d?.admittedAt, d?.revokedAt]) if (t) clock.sawAtLeast(t.toMillis());
    placeSeen = d
      ? {
          status: d.status,
          ...(d.order ? { order: d.order } : {}),
          ...(d.passUntil ? { passUntilMs: d.passUntil.toMillis() } : {}),
          ...(d.revokedAt ? { revoked: true } : {}),
        }
      : null;
  }

  /** Reads the user's place once (one get), unless a read is under way or it is listened to. */
  function readPlace(): void {
    const id = placeId;
    if (id === undefined || placeReading || stopPlace) return;
    placeReading = true;
    getDoc(doc(db, "queue", id))
      .then(
        (snap) => {
          if (placeId === id) seePlace(snap.data() as PlaceData | undefined);
        },
        (err: unknown) => {
          // Refused: no place (nobody reads a place that does not exist), unless JoinQueue said there is one.
          if (placeId === id && (err as FirestoreError).code === "permission-denied" && placeAnswered === undefined) placeSeen = null;
        },
      )
      .finally(() => {
        placeReading = false;
        paint();
      });
  }

  /**
   * A new sale state: the place is read again after the draw (it has no
   * order yet) and when admittedThrough reaches it. After the draw it is
   * read at a moment spread over the line (placeReadDelayMs): every early
   * joiner's page sees the opening at once, and the ranking reaches their
   * places over several ticks.
   */
  function rereadPlace(): void {
    const p = myPlace();
    if (!sale || !p || p.status !== "waiting" || stopPlace) return;
    if (p.order === undefined && sale.state !== "scheduled") {
      if (placeReadTimer !== undefined || placeReading) return;
      const id = placeId;
      placeReadTimer = setTimeout(
        () => {
          placeReadTimer = undefined;
          if (placeId === id) readPlace();
        },
        placeReadDelayMs(sale.waiting, unrankedReads++, Math.random()),
      );
      return;
    }
    if (p.order !== undefined && sale.admittedThrough !== "" && p.order <= sale.admittedThrough) readPlace();
  }

  /** Forgets a spread read of the place (placeReadDelayMs) when the place changes. */
  function forgetPlaceRead(): void {
    clearTimeout(placeReadTimer);
    placeReadTimer = undefined;
    unrankedReads = 0;
  }

  /** The user's holds, each as showHold says: live with its countdown and actions, or ended in words. */
  function paintHolds(): void {
    const list = $("#holds");
    const items = [...myHolds().values()].sort((a, b) => a.heldUntilMs - b.heldUntilMs);
    $("#holds-card").hidden = items.length === 0;
    const keep = new Set(items.map((x) => x.holdId));
    for (const li of list.querySelectorAll<HTMLElement>("[data-hold]")) if (!keep.has(li.dataset.hold ?? "")) li.remove();
    for (const id of shownHolds.keys()) if (!keep.has(id)) shownHolds.delete(id);
    const at = now();
    const setting = { nowMs: at, priced: screening?.price !== undefined, revoked: screening?.sale !== undefined && myPlace()?.revoked === true, canChoose: mapShown() };
    for (const hv of items) {
      let li = list.querySelector<HTMLElement>(`[data-hold="${CSS.escape(hv.holdId)}"]`);
      if (!li) {
        const confirm = h("button", { type: "button", class: "primary", "data-action": "confirm" }, "Confirm booking");
        const pay = h("button", { type: "button", class: "primary", "data-action": "pay" }, "Pay");
        const extend = h("button", { type: "button", "data-action": "extend" }, "More time");
        const release = h("button", { type: "button", "data-action": "release" }, "Release");
        extend.setAttribute("aria-label", `More time: hold for ${countdown(holdSeconds * 1000)} from now`);
        confirm.addEventListener("click", () => void confirmHold(hv.holdId));
        pay.addEventListener("click", () => void payHold(hv.holdId));
        extend.addEventListener("click", () => void extendHold(hv.holdId));
        release.addEventListener("click", () => void releaseHold(hv.holdId));
        li = h(
          "li",
          { "data-hold": hv.holdId },
          h("span", { class: "seats" }),
          h("span", { class: "price", "data-price": "" }),
          h("span", { class: "timer" }, h("span", { class: "sr-only" }, "Time left: "), h("span", { "data-countdown": "", role: "timer" })),
          h("p", { class: "note", "data-hold-note": "" }),
          h("span", { class: "buttons" }, confirm, pay, extend, release),
        );
        list.append(li);
      }
      const shown = showHold(hv, setting);
      // The status line still tells of the hold's making: say it ran out.
      const was = shownHolds.get(hv.holdId);
      if (shown.phase === "lapsed" && (was === "held" || was === "paying")) {
        status.error("hold_expired", shown.note);
        ownSeatsFreed();
        setTimeout(paint); // a paused map listens again now, not at the next second's paint
      }
      shownHolds.set(hv.holdId, shown.phase);
      if (li.dataset.holdState !== shown.phase) li.dataset.holdState = shown.phase;
      setText($(".seats", li), seatList(hv.seats));
      const price = screening?.price;
      const total = price ? money(totalOf(price, hv.seats), price.currency) : "";
      setText($("[data-price]", li), total);
      const pay = $('[data-action="pay"]', li);
      setText(pay, hv.paying ? `Continue to payment (${total})` : `Pay ${total}`);
      for (const b of li.querySelectorAll<HTMLButtonElement>("button[data-action]")) {
        b.hidden = !shown.actions.includes(b.dataset.action as HoldAction);
        b.disabled = busy;
      }
      $(".buttons", li).hidden = shown.actions.length === 0;
      if (shown.phase === "paying") li.dataset.paymentState = "paying";
      else delete li.dataset.paymentState;
      $(".timer", li).hidden = shown.phase === "revoked";
      setText($("[data-countdown]", li), countdown(hv.heldUntilMs - at));
      const note = $("[data-hold-note]", li);
      note.hidden = shown.note === "";
      setText(note, shown.note);
      li.classList.toggle("ended", shown.actions.length === 0);
    }
  }

  function paintBookings(): void {
    const list = $("#bookings");
    const items = [...myBookings().values()].filter((b) => b.status === "confirmed");
    const empty = $("#no-bookings");
    empty.hidden = items.length > 0;
    empty.textContent = user ? "No bookings for this screening yet." : "Sign in to see your bookings.";
    const keep = new Set(items.map((b) => b.bookingId));
    for (const li of list.querySelectorAll<HTMLElement>("[data-booking]")) if (!keep.has(li.dataset.booking ?? "")) li.remove();
    for (const bk of items) {
      let li = list.querySelector<HTMLElement>(`[data-booking="${CSS.escape(bk.bookingId)}"]`);
      if (!li) {
        const id = bk.bookingId;
        const cancel = h("button", { type: "button", "data-action": "cancel" }, "Cancel");
        cancel.setAttribute("aria-label", `Cancel the booking of ${seatList(bk.seats)}`);
        // A paid booking asks first, naming the refund (issue #50.5); a free one cancels at once.
        cancel.addEventListener("click", () => {
          if (myBookings().get(id)?.payment) {
            confirmingCancel.add(id);
            paint();
            document.querySelector<HTMLElement>(`[data-booking="${CSS.escape(id)}"] [data-action="cancel-refund"]`)?.focus();
          } else {
            void cancelBooking(id);
          }
        });
        const refund = h("button", { type: "button", class: "danger", "data-action": "cancel-refund" });
        refund.addEventListener("click", () => {
          confirmingCancel.delete(id);
          void cancelBooking(id);
        });
        const keep = h("button", { type: "button", "data-action": "cancel-keep" }, "Keep it");
        keep.addEventListener("click", () => {
          confirmingCancel.delete(id);
          paint();
          document.querySelector<HTMLElement>(`[data-booking="${CSS.escape(id)}"] [data-action="cancel"]`)?.focus();
        });
        // The order's tickets (CONTRACT §13), by its reference.
        const tickets = h("a", { class: "nav-link", href: `tickets.html?booking=${encodeURIComponent(id)}`, "data-action": "tickets" }, `Tickets · order ${orderRef(id)}`);
        li = h(
          "li",
          { "data-booking": id },
          h("span", { class: "seats" }, seatList(bk.seats)),
          tickets,
          h("span", { class: "buttons" }, cancel),
          h("div", { class: "confirm", "data-cancel-confirm": "", role: "group", "aria-label": "Cancel and refund?" }, h("p", { "data-cancel-question": "" }), h("span", { class: "buttons" }, refund, keep)),
        );
        list.append(li);
      }
      const asking = confirmingCancel.has(bk.bookingId) && bk.payment !== undefined;
      const refund = bk.payment ? money(bk.payment.amount, bk.payment.currency) : "";
      $(".buttons", li).hidden = asking;
      $("[data-cancel-confirm]", li).hidden = !asking;
      setText($("[data-cancel-question]", li), `Cancel ${seatList(bk.seats)} and refund ${refund}?`);
      setText($('[data-action="cancel-refund"]', li), `Cancel and refund ${refund}`);
      for (const b of li.querySelectorAll("button")) b.disabled = busy;
    }
    paintOrder();
  }

  /** After paying (issue #50.6), the order to keep: its reference, the film, the seats, what was paid and when, and its tickets. */
  function paintOrder(): void {
    const box = $("#order");
    const bk = orderShown === undefined ? undefined : myBookings().get(orderShown);
    box.hidden = !bk || !bk.payment;
    if (!bk?.payment) return;
    setText($("[data-order-ref]", box), orderRef(bk.bookingId));
    setText($("[data-order-film]", box), screening ? `${screening.title}, ${whenWords(screening.startsAt.toMillis(), screening.timeZone)}` : "");
    setText($("[data-order-seats]", box), seatList(bk.seats));
    const paid = money(bk.payment.amount, bk.payment.currency);
    setText($("[data-order-paid]", box), bk.createdAtMs === undefined ? paid : `${paid}, ${whenWords(bk.createdAtMs, screening?.timeZone)}`);
    $as(HTMLAnchorElement, "[data-order-tickets]", box).href = `tickets.html?booking=${encodeURIComponent(bk.bookingId)}`;
  }

  /** The user's payments for this screening (§10), live: `data-payment-state` on each. */
  function paintPayments(): void {
    const list = $("#payments");
    const items = [...payments.values()];
    $("#payments-card").hidden = items.length === 0;
    const keep = new Set(items.map((p) => p.holdId));
    for (const li of list.querySelectorAll<HTMLElement>("[data-payment]")) if (!keep.has(li.dataset.payment ?? "")) li.remove();
    for (const p of items) {
      let li = list.querySelector<HTMLElement>(`[data-payment="${CSS.escape(p.holdId)}"]`);
      if (!li) {
        li = h("li", { "data-payment": p.holdId }, h("span", { class: "seats" }), h("span", { class: "words" }));
        list.append(li);
      }
      const state = paymentState(p);
      if (li.dataset.paymentState !== state) li.dataset.paymentState = state;
      setText($(".seats", li), p.seats ? seatList(p.seats) : "");
      setText($(".words", li), paymentWords(p));
    }
  }

  // ---- actions ----

  /**
   * A call's answer, or its error, while the user who made it is still
   * signed in; else it rejects with SignedOutMeanwhile. The user may sign
   * out (here or in another tab) and someone else in before the answer
   * comes: their page must not take the first user's booking or hold as theirs.
   */
  async function ours<T>(call: Promise<T>): Promise<T> {
    const uid = user?.uid;
    let answer: T;
    try {
      answer = await call;
    } catch (err) {
      if (user?.uid !== uid) throw new SignedOutMeanwhile();
      throw err;
    }
    if (user?.uid !== uid) throw new SignedOutMeanwhile();
    return answer;
  }

  /** One action on the functions; a seat that was taken meanwhile leaves the selection by itself (paint). */
  function act(pending: string, fn: () => Promise<string>, count?: number): Promise<void> {
    const setBusy = (on: boolean) => {
      busy = on;
      paint();
    };
    return runAction(status, setBusy, pending, fn, (err) => {
      if (err instanceof SignedOutMeanwhile) return { code: "unauthenticated", message: err.message };
      if (!(err instanceof ApiError)) return { code: "unavailable", message: `Something went wrong: ${err instanceof Error ? err.message : String(err)}` };
      const context: ErrorContext = { ownHoldSeats: new Set([...myHolds().values()].flatMap((x) => x.seats)), canChoose: mapShown() };
      if (screening?.sale) context.maxSeatsPerUser = screening.sale.maxSeatsPerUser ?? DEFAULT_MAX_SEATS_PER_USER;
      if (count !== undefined) context.count = count;
      return { code: err.code, message: errorMessage(err, context) };
    });
  }

  $('[data-action="send-verification"]').addEventListener("click", () => {
    void act("Sending the verification email…", async () => {
      if (!user) throw new ApiError(401, "unauthenticated", "sign in first");
      await (await account).sendEmailVerification(user);
      return `We sent a verification link to ${user.email ?? "your address"}. Open it, then come back and press “I have verified it”.`;
    });
  });

  $('[data-action="verified"]').addEventListener("click", () => {
    void act("Checking your address…", async () => {
      if (!user) throw new ApiError(401, "unauthenticated", "sign in first");
      await user.reload();
      await user.getIdToken(true); // a fresh token carries email_verified
      if (!user.emailVerified) throw new ApiError(403, "email_not_verified", "not verified yet");
      return "Your address is verified. You can join the queue now.";
    });
  });

  joinButton.addEventListener("click", () => {
    void act("Joining the queue…", async () => {
      const p = await ours(api.joinQueue(screeningId));
      placeAnswered = { status: p.status, ...(p.passUntil ? { passUntilMs: Date.parse(p.passUntil) } : {}) };
      if (placeId !== p.queueId || !placeSeen) {
        // Listen (again): the place exists now. A listener that has not
        // delivered yet may have been opened before it did, and be refused.
        stopPlace?.();
        stopPlace = undefined;
        placeSeen = undefined;
        forgetPlaceRead();
        placeId = p.queueId;
        // Waiting before the opening: no draw has given the place an order
        // yet, so a get would say no more than this answer. The place is
        // read after the draw (rereadPlace), as CONTRACT §14 has it: the
        // first state polled that is not scheduled reads it (a sale not
        // polled yet counts as scheduled, as saleState says; if it had
        // opened, the next poll reads the place).
        if (p.status === "waiting" && saleState() === "scheduled") placeSeen = { status: "waiting" };
      }
      return p.status === "admitted" ? "It is your turn: choose your seats." : "You are in the queue.";
    });
  });

  bookButton.addEventListener("click", () => {
    const seats = [...selected].sort(seatOrder);
    void act(`Booking ${seatList(seats)}…`, async () => {
      const b = await ours(api.bookSeats(screeningId, seats));
      answeredBookings.set(b.bookingId, b);
      for (const s of seats) selected.delete(s);
      return `Booked ${seatList(b.seats)}. Enjoy the film!`;
    });
  });

  holdButton.addEventListener("click", () => void holdSelected());

  /** Holds the selected seats. */
  function holdSelected(): Promise<void> {
    const seats = [...selected].sort(seatOrder);
    return act(`Holding ${seatList(seats)}…`, async () => {
      const hold = await ours(api.holdSeats(screeningId, seats, holdSeconds));
      const heldUntilMs = Date.parse(hold.heldUntil);
      // heldUntil = the server's commit time + holdSeconds, before the answer came.
      clock.sawAtLeast(heldUntilMs - holdSeconds * 1000);
      answeredHolds.set(hold.holdId, { holdId: hold.holdId, seats: hold.seats, heldUntilMs });
      for (const s of seats) selected.delete(s);
      return `${seatList(hold.seats)} ${hold.seats.length === 1 ? "is" : "are"} yours for ${countdown(heldUntilMs - now())}. ${screening?.price ? "Pay to book." : "Confirm to book."}`;
    });
  }

  /** Best available (CONTRACT §11): the server chooses and holds `count` seats; they flash on the map as the user's. */
  function holdBest(count: number): Promise<void> {
    return act(
      `Finding the best ${String(count)} seat${count === 1 ? "" : "s"} for you…`,
      async () => {
        const hold = await ours(api.holdBest(screeningId, count, { holdSeconds }));
        const heldUntilMs = Date.parse(hold.heldUntil);
        clock.sawAtLeast(heldUntilMs - holdSeconds * 1000);
        answeredHolds.set(hold.holdId, { holdId: hold.holdId, seats: hold.seats, heldUntilMs });
        for (const s of hold.seats) selected.delete(s);
        paint();
        flash(hold.seats.flatMap((s) => seatButtons.get(s) ?? []));
        // Why these seats (issue #50.7): the server's order of rows, said.
        const why = screening ? ` ${capital(bestWhy(screening.rows, Array.isArray(screening.preference) ? screening.preference : undefined, hold.seats))}.` : "";
        return `We found ${seatList(hold.seats)} for you.${why} ${hold.seats.length === 1 ? "It is" : "They are"} yours for ${countdown(heldUntilMs - now())}. ${screening?.price ? "Pay to book." : "Confirm to book."}`;
      },
      count,
    );
  }

  function confirmHold(holdId: string): Promise<void> {
    return act("Confirming your booking…", async () => {
      try {
        const b = await ours(api.confirmHold(holdId));
        answeredBookings.set(b.bookingId, b);
        forget(holdId);
        return `Booked ${seatList(b.seats)}. Enjoy the film!`;
      } catch (err) {
        if (err instanceof ApiError && (err.code === "hold_expired" || err.code === "hold_not_found")) {
          forget(holdId);
          ownSeatsFreed();
        }
        throw err;
      }
    });
  }

  /** Opens the hold's checkout (§10): a retry answers the same session. */
  function payHold(holdId: string): Promise<void> {
    return act("Opening the checkout…", async () => {
      try {
        const back = new URL(location.href);
        back.search = new URLSearchParams({ screening: screeningId }).toString();
        const c = await ours(api.checkoutHold(holdId, back.toString()));
        location.assign(c.checkoutUrl);
        return `Taking you to the checkout to pay ${money(c.amount, c.currency)}…`;
      } catch (err) {
        if (err instanceof ApiError && (err.code === "hold_expired" || err.code === "hold_not_found")) {
          forget(holdId);
          ownSeatsFreed();
        }
        throw err;
      }
    });
  }

  function extendHold(holdId: string): Promise<void> {
    return act("Asking for more time…", async () => {
      try {
        const hold = await ours(api.extendHold(holdId, holdSeconds));
        const heldUntilMs = Date.parse(hold.heldUntil);
        clock.sawAtLeast(heldUntilMs - holdSeconds * 1000);
        answeredHolds.set(hold.holdId, { holdId: hold.holdId, seats: hold.seats, heldUntilMs });
        return `${seatList(hold.seats)} ${hold.seats.length === 1 ? "is" : "are"} yours for ${countdown(heldUntilMs - now())} more.`;
      } catch (err) {
        if (err instanceof ApiError && err.code === "invalid_argument") {
          throw new ApiError(err.status, err.code, "a hold lasts at most 30 minutes in all; please confirm or release it", err.seats);
        }
        if (err instanceof ApiError && (err.code === "hold_expired" || err.code === "hold_not_found")) {
          forget(holdId);
          ownSeatsFreed();
        }
        throw err;
      }
    });
  }

  function releaseHold(holdId: string): Promise<void> {
    return act("Releasing your hold…", async () => {
      const hold: Hold = await ours(api.releaseHold(holdId));
      forget(holdId);
      ownSeatsFreed();
      return `Released ${seatList(hold.seats)}. Those seats are free for others again.`;
    });
  }

  function cancelBooking(bookingId: string): Promise<void> {
    const paid = myBookings().get(bookingId)?.payment;
    return act(paid ? "Cancelling your booking and refunding it…" : "Cancelling your booking…", async () => {
      const b = await ours(api.cancelBooking(bookingId));
      forget(bookingId);
      ownSeatsFreed();
      // CONTRACT §10: a paid booking is refunded in full as it is cancelled.
      return paid
        ? `Cancelled ${seatList(b.seats)} and refunded ${money(paid.amount, paid.currency)} in full.`
        : `Cancelled your booking of ${seatList(b.seats)}.`;
    });
  }

  // ---- live data ----

  // Auth (its SDK, the user, the sign-in panel) loads once the screening is
  // drawn, or could not be, and the page is idle: its evaluation and start
  // are a long task that would otherwise block the map's first drawing
  // (Lighthouse's Total Blocking Time, issue #50). Firestore reads as nobody
  // until then, and then restarts its streams as the user, if any.
  let drawn: () => void = () => undefined;
  const firstDrawn = new Promise<void>((resolve) => (drawn = resolve));
  setTimeout(drawn, 3000); // the screening is slow to come: the sign-in panel does not wait for it
  const account = firstDrawn.then(whenIdle).then(() => import("./account"));
  // Its start in a task after its evaluation's.
  const authStarted = account.then(nextTask).then(async () => (auth = (await account).startAuth(app, env)));

  onSnapshot(
    doc(db, "screenings", screeningId),
    (snap) => {
      // The hall is drawn below (or not at all): what it pushes down shows from this frame on.
      delete $(".layout").dataset.loading;
      setTimeout(drawn); // after this callback's drawing
      if (!snap.exists()) {
        // Said once, with nothing to pick or book below it.
        screening = undefined;
        document.title = "Screening not found · firelock cinema";
        $("#title").textContent = "Screening not found";
        $("#when").textContent = errorMessage({ code: "screening_not_found", message: "", seats: [] });
        $("#left").textContent = "";
        $(".layout").hidden = true;
        return;
      }
      const s = snap.data() as Screening;
      const malformed = layoutProblem(s);
      if (malformed !== undefined) {
        // Said, not drawn: the server refuses it too (booking.MaxHallSeats).
        screening = undefined;
        document.title = "Screening unavailable · firelock cinema";
        $("#title").textContent = typeof s.title === "string" ? s.title : "Screening unavailable";
        $("#when").textContent = malformed;
        $("#left").textContent = "";
        $(".layout").hidden = true;
        return;
      }
      $(".layout").hidden = false;
      const changed = !screening || screening.rows.join() !== s.rows.join() || screening.seatsPerRow !== s.seatsPerRow;
      screening = s;
      document.title = `${s.title} · firelock cinema`;
      $("#title").textContent = s.title;
      $("#when").textContent = whenWords(s.startsAt.toMillis(), s.timeZone);
      if (changed) buildMap(s); // paints, which opens the listeners the screening calls for
      else paint();
    },
    (err) => {
      delete $(".layout").dataset.loading;
      drawn();
      status.error("unavailable", `The seat map could not be loaded (${err.code}).`);
    },
  );

  // Countdowns, and holds that lapse, by the estimated server clock.
  setInterval(paint, 1000);

  let unsubscribeMine: Unsubscribe[] = [];
  const { mountAccount } = await account;
  mountAccount($("#account"), await authStarted, status, (u) => {
    for (const un of unsubscribeMine) un();
    unsubscribeMine = [];
    stopPlace?.();
    stopPlace = undefined;
    forgetPlaceRead();
    placeId = undefined;
    placeSeen = placeAnswered = undefined;
    shownQueueState = undefined;
    user = u;
    selected.clear();
    bookings.clear();
    answeredBookings.clear();
    holds.clear();
    answeredHolds.clear();
    shownHolds.clear();
    payments.clear();
    gone.clear();
    ended.clear();
    delete document.documentElement.dataset.mineLive;
    if (u) {
      // data-mine-live: the user's three lists have answered from the server
      // (web/README.md's hooks). They were added on the stream that sign-in
      // restarted, after the map's own listener, so that stream is set up by
      // then: the Firestore emulator can lose a write that lands while a
      // listener is being set up again (docs/testing.md), and the e2e kit's
      // signIn waits for this before acting.
      const fromServer = new Set<string>();
      const answered = (list: string, snap: { metadata: { fromCache: boolean } }) => {
        if (snap.metadata.fromCache || fromServer.has(list) || user !== u) return;
        fromServer.add(list);
        if (fromServer.size === 3) document.documentElement.dataset.mineLive = "";
      };
      const withMetadata = { includeMetadataChanges: true }; // a cached first answer turning the server's raises one more
      unsubscribeMine = [
        onSnapshot(
          query(collection(db, "bookings"), where("uid", "==", u.uid), where("screeningId", "==", screeningId), where("status", "==", "confirmed")),
          withMetadata,
          (snap) => {
            answered("bookings", snap);
            // A booking that leaves the query was cancelled (in the user's other
            // tab, say): an answer that came after the query first had it must
            // not keep it in the list, nor its seats drawn as the user's.
            for (const change of snap.docChanges()) {
              if (change.type !== "removed") continue;
              // Its seats are free: a cancel of the page's own said so already.
              if (!gone.has(change.doc.id)) ownSeatsFreed();
              ended.add(change.doc.id);
              answeredBookings.delete(change.doc.id);
            }
            bookings.clear();
            for (const d of snap.docs) {
              const data = d.data() as { seats: string[]; status: "confirmed" | "cancelled"; payment?: { amount: number; currency: string }; createdAt?: Timestamp };
              bookings.set(d.id, {
                bookingId: d.id,
                screeningId,
                seats: data.seats,
                status: data.status,
                ...(data.payment ? { payment: { amount: data.payment.amount, currency: data.payment.currency } } : {}),
                ...(data.createdAt ? { createdAtMs: data.createdAt.toMillis() } : {}),
              });
              answeredBookings.delete(d.id);
            }
            for (const id of gone) if (!bookings.has(id) && !holds.has(id)) gone.delete(id);
            paint();
          },
          (err) => status.error("unavailable", `Your bookings could not be loaded (${err.code}).`),
        ),
        onSnapshot(
          query(collection(db, "holds"), where("uid", "==", u.uid), where("screeningId", "==", screeningId), where("status", "in", ["held", "paying"])),
          withMetadata,
          (snap) => {
            answered("holds", snap);
            // A hold that leaves the query has ended (an operator's revoke
            // releases it, the sweep expires it): an answer that came after
            // the listener first saw it must not keep it on the page.
            for (const change of snap.docChanges()) {
              if (change.type !== "removed") continue;
              // Its seats are free unless it was confirmed: a release or confirm of the page's own said so already.
              if (!gone.has(change.doc.id)) ownSeatsFreed();
              ended.add(change.doc.id);
              answeredHolds.delete(change.doc.id);
            }
            holds.clear();
            for (const d of snap.docs) {
              const data = d.data() as { seats: string[]; heldUntil: { toMillis(): number }; status: string };
              holds.set(d.id, { holdId: d.id, seats: data.seats, heldUntilMs: data.heldUntil.toMillis(), paying: data.status === "paying" });
              answeredHolds.delete(d.id);
            }
            for (const id of gone) if (!bookings.has(id) && !holds.has(id)) gone.delete(id);
            paint();
          },
          (err) => status.error("unavailable", `Your holds could not be loaded (${err.code}).`),
        ),
        onSnapshot(
          query(collection(db, "payments"), where("uid", "==", u.uid), where("screeningId", "==", screeningId)),
          withMetadata,
          (snap) => {
            answered("payments", snap);
            payments.clear();
            for (const d of snap.docs) payments.set(d.id, { ...(d.data() as Omit<PaymentDoc, "holdId">), holdId: d.id });
            const back = returned.hold ? payments.get(returned.hold) : undefined;
            if (back) {
              // Said once, on the way back from the checkout page.
              returned.hold = null;
              if (returned.outcome === "cancelled" && paymentState(back) !== "paid") {
                status.ok("You left the checkout without paying, so nothing was charged and the seats were let go.");
                ownSeatsFreed();
              }
              else status.ok(paymentWords(back));
            }
            // Back from paying: the order shows once its payment is booked (the webhook may come after the page).
            const paidFor = paidHold === null ? undefined : payments.get(paidHold);
            if (orderShown === undefined && paidFor && paymentState(paidFor) === "paid" && paidFor.bookingId) {
              orderShown = paidFor.bookingId;
            }
            paint();
          },
          (err) => status.error("unavailable", `Your payments could not be loaded (${err.code}).`),
        ),
      ];
      // The place's id is derived as the rules derive it; then paint listens to it.
      void queueId(screeningId, u.uid).then((id) => {
        if (user?.uid !== u.uid || placeId !== undefined) return;
        placeId = id;
        paint();
      });
    }
    paint();
  }, () => (screening?.sale ? "Signed in." : "Signed in. Pick your seats."));
}

/** A call's answer came after its user signed out: it is no answer for whoever is signed in now. */
class SignedOutMeanwhile extends Error {
  constructor() {
    super("You were signed out before the answer came, so it is not shown here: sign in to that account again to see its seats.");
  }
}

/** Resolves in a task of its own (after the one running now). */
function nextTask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve));
}

/** Resolves when the page is idle (or after a second at most). */
function whenIdle(): Promise<void> {
  return new Promise((resolve) => {
    if (typeof requestIdleCallback === "function") requestIdleCallback(() => resolve(), { timeout: 1000 });
    else setTimeout(resolve, 50); // Safari has no requestIdleCallback
  });
}

/** Sets an element's text only when it changes (screen readers announce changes of a timer). */
function setText(el: HTMLElement, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

/** The sentence with its first letter capitalized. */
function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Sets an attribute only when it changes (paint runs every second over every seat). */
function setAttr(el: HTMLElement, name: string, value: string): void {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

main().catch((err: unknown) => {
  const status = document.querySelector<HTMLElement>("[data-status]");
  if (status) new Status(status).error("unavailable", `The app could not start: ${err instanceof Error ? err.message : String(err)}`);
  console.error(err);
});
