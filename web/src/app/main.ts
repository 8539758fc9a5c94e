/**
 * The seat-map app (CONTRACT §6): a live map of one screening's seats from
 * `onSnapshot`, sign-in, select then book or hold, a countdown on the
 * user's holds with confirm and release, and the user's bookings with cancel.
 * Everything that changes the map goes through the HTTP functions; the page
 * itself writes nothing to Firestore.
 */
import type { User } from "firebase/auth";
import { type Unsubscribe, collection, doc, onSnapshot, query, where } from "firebase/firestore";
import { Api, ApiError, type Booking, type Hold } from "./api";
import { services } from "./config";
import { type Mine, type Screening, type SeatDoc, type SeatState, countdown, errorMessage, seatGrid, seatList, seatState } from "./seats";
import { $, $as, Status, h, mountAccount, runAction } from "./ui";

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
}

async function main(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const screeningId = params.get("screening") ?? "demo";
  const holdSecondsParam = Number(params.get("holdSeconds") ?? "");
  const holdSeconds = Number.isInteger(holdSecondsParam) && holdSecondsParam >= 5 && holdSecondsParam <= 900 ? holdSecondsParam : 420;

  const status = new Status($("[data-status]"));
  const { auth, db, functionsURL } = await services();
  const api = new Api(functionsURL, () => auth.currentUser);

  const mapEl = $("#seatmap");
  const bookButton = $as(HTMLButtonElement, '[data-action="book"]');
  const holdButton = $as(HTMLButtonElement, '[data-action="hold"]');
  holdButton.textContent = `Hold for ${String(Math.round(holdSeconds / 60)) || "<1"} min`;

  let screening: Screening | undefined;
  let user: User | null = null;
  let busy = false;
  /** Server time minus local time, estimated from the last hold's answer. */
  let clockOffsetMs = 0;
  const seatDocs = new Map<string, SeatDoc>();
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

  const now = () => Date.now() + clockOffsetMs;
  /** Forgets a booking or hold that was cancelled, released, confirmed or has expired. */
  const forget = (id: string) => {
    gone.add(id);
    answeredBookings.delete(id);
    answeredHolds.delete(id);
  };
  const myBookings = () => new Map([...answeredBookings, ...bookings].filter(([id]) => !gone.has(id)));
  /** The user's live holds; of an answer and a snapshot, the later end wins (an extension). */
  const myHolds = () => {
    const out = new Map<string, HoldView>();
    for (const [id, hv] of [...answeredHolds, ...holds]) {
      if (gone.has(id)) continue;
      const seen = out.get(id);
      if (!seen || hv.heldUntilMs > seen.heldUntilMs) out.set(id, hv);
    }
    return out;
  };

  /** Which bookings and holds are this user's, for seatState. */
  const mine = (): Mine => ({ bookings: new Set(myBookings().keys()), holds: new Set(myHolds().keys()) });

  function stateOf(seat: string, m: Mine = mine(), at: number = now()): SeatState {
    return seatState(seatDocs.get(seat), selected.has(seat), m, at);
  }

  // ---- the map ----

  function buildMap(s: Screening): void {
    seatButtons.clear();
    const rows = seatGrid(s).map((seats, r) => {
      const label = s.rows[r] ?? "";
      const row = h("div", { class: "row", role: "group", "aria-label": `Row ${label}` }, h("span", { class: "rowlabel", "aria-hidden": "true" }, label));
      seats.forEach((seat, i) => {
        if (s.seatsPerRow >= 12 && i === Math.floor(s.seatsPerRow / 2)) row.append(h("span", { class: "aisle", "aria-hidden": "true" }));
        const b = h("button", { type: "button", class: "seat", "data-seat": seat, tabindex: "-1" }, String(i + 1));
        b.addEventListener("click", () => toggle(seat));
        seatButtons.set(seat, b);
        row.append(b);
      });
      row.append(h("span", { class: "rowlabel", "aria-hidden": "true" }, label));
      return row;
    });
    mapEl.replaceChildren(...rows);
    // On a narrow screen the map scrolls sideways: start at its middle.
    const scroller = mapEl.parentElement;
    if (scroller) scroller.scrollLeft = (scroller.scrollWidth - scroller.clientWidth) / 2;
    const first = seatButtons.values().next().value;
    if (first) first.tabIndex = 0;
    paint();
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

  /** Brings every seat, the selection and the lists up to date. */
  function paint(): void {
    let free = 0;
    const m = mine();
    const at = now();
    for (const [seat, b] of seatButtons) {
      let state = stateOf(seat, m, at);
      if (selected.has(seat) && state !== "selected") {
        selected.delete(seat); // taken by someone meanwhile
        state = stateOf(seat, m, at);
      }
      if (state === "free" || state === "selected") free++;
      if (b.dataset.state !== state) b.dataset.state = state;
      const row = seat.replace(/\d+$/, "");
      const num = seat.slice(row.length);
      b.setAttribute("aria-label", `Row ${row}, seat ${num}, ${STATE_WORDS[state]}`);
      b.setAttribute("aria-pressed", String(state === "selected"));
      // Taken seats and a visitor's map stay clickable (a click explains,
      // or does nothing): the label says the state, and nothing waits for
      // a seat to become "enabled".
    }
    $("#left").textContent = screening ? `${String(free)} of ${String(seatButtons.size)} seats free` : "";
    mapEl.classList.toggle("readonly", !user);

    const sel = [...selected].sort(seatOrder);
    $("#selection").textContent = !user
      ? "Sign in to choose seats."
      : sel.length > 0
        ? `${seatList(sel)} (${String(sel.length)} seat${sel.length === 1 ? "" : "s"})`
        : "Tap free seats on the map to choose them.";
    bookButton.disabled = holdButton.disabled = !user || sel.length === 0 || busy;
    paintHolds();
    paintBookings();
  }

  function paintHolds(): void {
    const list = $("#holds");
    const items = [...myHolds().values()].sort((a, b) => a.heldUntilMs - b.heldUntilMs);
    $("#holds-card").hidden = items.length === 0;
    const keep = new Set(items.map((x) => x.holdId));
    for (const li of list.querySelectorAll<HTMLElement>("[data-hold]")) if (!keep.has(li.dataset.hold ?? "")) li.remove();
    for (const hv of items) {
      let li = list.querySelector<HTMLElement>(`[data-hold="${CSS.escape(hv.holdId)}"]`);
      if (!li) {
        const confirm = h("button", { type: "button", class: "primary", "data-action": "confirm" }, "Confirm booking");
        const extend = h("button", { type: "button", "data-action": "extend" }, "More time");
        const release = h("button", { type: "button", "data-action": "release" }, "Release");
        extend.setAttribute("aria-label", `More time: hold for ${countdown(holdSeconds * 1000)} from now`);
        confirm.addEventListener("click", () => void confirmHold(hv.holdId));
        extend.addEventListener("click", () => void extendHold(hv.holdId));
        release.addEventListener("click", () => void releaseHold(hv.holdId));
        li = h(
          "li",
          { "data-hold": hv.holdId },
          h("span", { class: "seats" }),
          h("span", { class: "timer" }, h("span", { class: "sr-only" }, "Time left: "), h("span", { "data-countdown": "", role: "timer" })),
          h("span", { class: "buttons" }, confirm, extend, release),
        );
        list.append(li);
      }
      $(".seats", li).textContent = seatList(hv.seats);
      const left = hv.heldUntilMs - now();
      const cd = $("[data-countdown]", li);
      const text = countdown(left);
      if (cd.textContent !== text) cd.textContent = text;
      li.classList.toggle("ended", left <= 0);
      for (const b of li.querySelectorAll("button")) b.disabled = busy;
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
        const cancel = h("button", { type: "button", "data-action": "cancel" }, "Cancel");
        cancel.setAttribute("aria-label", `Cancel the booking of ${seatList(bk.seats)}`);
        cancel.addEventListener("click", () => void cancelBooking(bk.bookingId));
        li = h("li", { "data-booking": bk.bookingId }, h("span", { class: "seats" }, seatList(bk.seats)), h("span", { class: "buttons" }, cancel));
        list.append(li);
      }
      for (const b of li.querySelectorAll("button")) b.disabled = busy;
    }
  }

  // ---- actions ----

  /** One action on the functions; a seat that was taken meanwhile leaves the selection by itself (paint). */
  function act(pending: string, fn: () => Promise<string>): Promise<void> {
    const setBusy = (on: boolean) => {
      busy = on;
      paint();
    };
    return runAction(status, setBusy, pending, fn, (err) =>
      err instanceof ApiError
        ? { code: err.code, message: errorMessage(err, new Set([...myHolds().values()].flatMap((x) => x.seats))) }
        : { code: "unavailable", message: `Something went wrong: ${err instanceof Error ? err.message : String(err)}` },
    );
  }

  bookButton.addEventListener("click", () => {
    const seats = [...selected].sort(seatOrder);
    void act(`Booking ${seatList(seats)}…`, async () => {
      const b = await api.bookSeats(screeningId, seats);
      answeredBookings.set(b.bookingId, b);
      for (const s of seats) selected.delete(s);
      return `Booked ${seatList(b.seats)}. Enjoy the film!`;
    });
  });

  holdButton.addEventListener("click", () => {
    const seats = [...selected].sort(seatOrder);
    void act(`Holding ${seatList(seats)}…`, async () => {
      const sent = Date.now();
      const hold = await api.holdSeats(screeningId, seats, holdSeconds);
      const heldUntilMs = Date.parse(hold.heldUntil);
      // heldUntil = the server's commit time + holdSeconds; the commit
      // happened between sending and the answer.
      clockOffsetMs = heldUntilMs - holdSeconds * 1000 - (sent + Date.now()) / 2;
      answeredHolds.set(hold.holdId, { holdId: hold.holdId, seats: hold.seats, heldUntilMs });
      for (const s of seats) selected.delete(s);
      return `${seatList(hold.seats)} ${hold.seats.length === 1 ? "is" : "are"} yours for ${countdown(heldUntilMs - now())}. Confirm to book.`;
    });
  });

  function confirmHold(holdId: string): Promise<void> {
    return act("Confirming your booking…", async () => {
      try {
        const b = await api.confirmHold(holdId);
        answeredBookings.set(b.bookingId, b);
        forget(holdId);
        return `Booked ${seatList(b.seats)}. Enjoy the film!`;
      } catch (err) {
        if (err instanceof ApiError && (err.code === "hold_expired" || err.code === "hold_not_found")) forget(holdId);
        throw err;
      }
    });
  }

  function extendHold(holdId: string): Promise<void> {
    return act("Asking for more time…", async () => {
      try {
        const hold = await api.extendHold(holdId, holdSeconds);
        const heldUntilMs = Date.parse(hold.heldUntil);
        answeredHolds.set(hold.holdId, { holdId: hold.holdId, seats: hold.seats, heldUntilMs });
        return `${seatList(hold.seats)} ${hold.seats.length === 1 ? "is" : "are"} yours for ${countdown(heldUntilMs - now())} more.`;
      } catch (err) {
        if (err instanceof ApiError && err.code === "invalid_argument") {
          throw new ApiError(err.status, err.code, "a hold lasts at most 30 minutes in all; please confirm or release it", err.seats);
        }
        if (err instanceof ApiError && (err.code === "hold_expired" || err.code === "hold_not_found")) forget(holdId);
        throw err;
      }
    });
  }

  function releaseHold(holdId: string): Promise<void> {
    return act("Releasing your hold…", async () => {
      const hold: Hold = await api.releaseHold(holdId);
      forget(holdId);
      return `Released ${seatList(hold.seats)}. Those seats are free for others again.`;
    });
  }

  function cancelBooking(bookingId: string): Promise<void> {
    return act("Cancelling your booking…", async () => {
      const b = await api.cancelBooking(bookingId);
      forget(bookingId);
      return `Cancelled your booking of ${seatList(b.seats)}.`;
    });
  }

  // ---- live data ----

  onSnapshot(
    doc(db, "screenings", screeningId),
    (snap) => {
      if (!snap.exists()) {
        $("#title").textContent = "Screening not found";
        $("#when").textContent = "Check the link: there is no screening with this id.";
        status.error("screening_not_found", errorMessage({ code: "screening_not_found", message: "", seats: [] }));
        return;
      }
      const s = snap.data() as Screening;
      const changed = !screening || screening.rows.join() !== s.rows.join() || screening.seatsPerRow !== s.seatsPerRow;
      screening = s;
      document.title = `${s.title} · firelock cinema`;
      $("#title").textContent = s.title;
      const starts = s.startsAt.toDate();
      $("#when").textContent = starts.toLocaleString(undefined, { weekday: "long", day: "numeric", month: "long", hour: "2-digit", minute: "2-digit" });
      if (changed) buildMap(s);
    },
    (err) => status.error("unavailable", `The seat map could not be loaded (${err.code}).`),
  );

  onSnapshot(
    collection(db, "screenings", screeningId, "seats"),
    (snap) => {
      for (const change of snap.docChanges()) {
        if (change.type === "removed") seatDocs.delete(change.doc.id);
        else seatDocs.set(change.doc.id, change.doc.data() as SeatDoc);
      }
      paint();
    },
    (err) => status.error("unavailable", `The seat map stopped updating (${err.code}). Reload the page.`),
  );

  let unsubscribeMine: Unsubscribe[] = [];
  mountAccount($("#account"), auth, status, (u) => {
    for (const un of unsubscribeMine) un();
    unsubscribeMine = [];
    user = u;
    selected.clear();
    bookings.clear();
    answeredBookings.clear();
    holds.clear();
    answeredHolds.clear();
    gone.clear();
    if (u) {
      unsubscribeMine = [
        onSnapshot(
          query(collection(db, "bookings"), where("uid", "==", u.uid), where("screeningId", "==", screeningId), where("status", "==", "confirmed")),
          (snap) => {
            bookings.clear();
            for (const d of snap.docs) {
              const data = d.data() as { seats: string[]; status: "confirmed" | "cancelled" };
              bookings.set(d.id, { bookingId: d.id, screeningId, seats: data.seats, status: data.status });
              answeredBookings.delete(d.id);
            }
            for (const id of gone) if (!bookings.has(id) && !holds.has(id)) gone.delete(id);
            paint();
          },
          (err) => status.error("unavailable", `Your bookings could not be loaded (${err.code}).`),
        ),
        onSnapshot(
          query(collection(db, "holds"), where("uid", "==", u.uid), where("screeningId", "==", screeningId), where("status", "==", "held")),
          (snap) => {
            holds.clear();
            for (const d of snap.docs) {
              const data = d.data() as { seats: string[]; heldUntil: { toMillis(): number } };
              holds.set(d.id, { holdId: d.id, seats: data.seats, heldUntilMs: data.heldUntil.toMillis() });
              answeredHolds.delete(d.id);
            }
            for (const id of gone) if (!bookings.has(id) && !holds.has(id)) gone.delete(id);
            paint();
          },
          (err) => status.error("unavailable", `Your holds could not be loaded (${err.code}).`),
        ),
      ];
    }
    paint();
  }, "Signed in. Pick your seats.");

  // Countdowns, and holds that lapse, by the estimated server clock.
  setInterval(paint, 1000);
}

/** Orders seat ids by row, then number: A2 before A10. */
function seatOrder(a: string, b: string): number {
  const ra = a.replace(/\d+$/, "");
  const rb = b.replace(/\d+$/, "");
  return ra === rb ? Number(a.slice(ra.length)) - Number(b.slice(rb.length)) : ra.localeCompare(rb);
}

main().catch((err: unknown) => {
  const status = document.querySelector<HTMLElement>("[data-status]");
  if (status) new Status(status).error("unavailable", `The app could not start: ${err instanceof Error ? err.message : String(err)}`);
  console.error(err);
});
