/**
 * "Your tickets" (CONTRACT §13), `tickets.html` (every ticket of the
 * signed-in user) or `tickets.html?booking=ID` (one order, as the seat map
 * links it from a booking): each ticket with its screening, time and zone,
 * seat, and a QR code of its code, live from `tickets` (where uid is the
 * user) and each ticket's `checkins/{ticketId}`: `data-ticket-state` turns
 * `in` once scanned, `cancelled` after a refund. A transfer form moves a
 * ticket to another account (`TransferTicket`): it leaves this list, shown
 * here as `reissued` until the page is left. The page writes nothing to
 * Firestore itself.
 */
import type { User } from "firebase/auth";
import { type Timestamp, type Unsubscribe, collection, doc, onSnapshot, query, where } from "firebase/firestore";
import QRCode from "qrcode";
import { Api, ApiError } from "./api";
import { services } from "./config";
import { STATE_WORDS, type TicketState, orderRef, ticketState, whenWords } from "./ticketview";
import { clockWords } from "./when";
import { $, Status, h, runAction } from "./ui";
import { mountAccount } from "./account";

interface TicketDoc {
  uid: string;
  screeningId: string;
  seatId: string;
  bookingId: string;
  status: "valid" | "cancelled";
  version: number;
  code: string;
  issuedAt?: Timestamp;
}

interface ScreeningDoc {
  title?: string;
  startsAt?: Timestamp;
  /** An IANA zone, when the screening names its own. */
  timeZone?: string;
}

interface EntryDoc {
  state: "in" | "out";
  version?: number;
  gate?: string;
  at?: Timestamp | null;
}

/** Words for TransferTicket's refusals (CONTRACT §13). */
function transferError(err: unknown): { code: string; message: string } {
  if (!(err instanceof ApiError)) return { code: "unavailable", message: `Something went wrong: ${err instanceof Error ? err.message : String(err)}` };
  const words: Record<string, string> = {
    user_not_found: "There is no firelock account with that email. Ask them to create one first, then try again.",
    ticket_used: "This ticket has been used at the door, so it cannot be transferred.",
    screening_started: "The screening has started: tickets can no longer be transferred.",
    permission_denied: "This ticket is not yours to transfer.",
    invalid_argument: "Please enter a valid email address.",
    unavailable: "We could not reach firelock. Check your connection and try again.",
  };
  return { code: err.code, message: words[err.code] ?? `The transfer failed: ${err.message}.` };
}

async function main(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const booking = params.get("booking");
  const status = new Status($("[data-status]"));
  const { auth, db, functionsURL, appCheckToken } = await services();
  const api = new Api(functionsURL, () => auth.currentUser, { appCheckToken });

  if (booking) {
    $("#title").textContent = "Your tickets";
    $("#order").textContent = `Order ${orderRef(booking)}`;
    $("#all").hidden = false;
  }

  let user: User | null = null;
  let loaded = false;
  const tickets = new Map<string, TicketDoc>();
  /** Tickets this user transferred in this visit: shown as reissued, without their code. */
  const departed = new Map<string, { ticket: TicketDoc; to: string }>();
  const screenings = new Map<string, ScreeningDoc>();
  const entries = new Map<string, EntryDoc>();
  /**
   * Tickets whose check-in listener has answered at least once: from then on a
   * scan shows live (`data-ticket-live` on the card). The Firestore emulator
   * can lose a write that lands while a listener on a missing document is
   * being set up (2 of 200 writes sent as the listen began, none of 300 sent
   * after its first answer: docs/testing.md), so a test scans after this.
   */
  const heard = new Set<string>();
  const stopScreening = new Map<string, Unsubscribe>();
  const stopEntry = new Map<string, Unsubscribe>();
  const qr = new Map<string, string>(); // code -> SVG
  const busy = new Set<string>();

  const list = $("#tickets");

  /** The QR code of a code, as SVG: error correction M, four modules of quiet zone. */
  async function qrSVG(code: string): Promise<string> {
    let svg = qr.get(code);
    if (svg === undefined) {
      svg = await QRCode.toString(code, { type: "svg", errorCorrectionLevel: "M", margin: 4, color: { dark: "#000000", light: "#ffffff" } });
      qr.set(code, svg);
    }
    return svg;
  }

  function shown(): { ticket: TicketDoc; id: string; state: TicketState; to?: string }[] {
    const out: { ticket: TicketDoc; id: string; state: TicketState; to?: string }[] = [];
    for (const [id, t] of tickets) {
      if (departed.has(id)) continue;
      out.push({ id, ticket: t, state: ticketState(t, entries.get(id), false) });
    }
    for (const [id, d] of departed) out.push({ id, ticket: d.ticket, state: "reissued", to: d.to });
    const startOf = (t: TicketDoc) => screenings.get(t.screeningId)?.startsAt?.toMillis() ?? 0;
    return out
      .filter((x) => !booking || x.ticket.bookingId === booking)
      .sort((a, b) => startOf(a.ticket) - startOf(b.ticket) || a.ticket.screeningId.localeCompare(b.ticket.screeningId) || a.ticket.seatId.localeCompare(b.ticket.seatId, undefined, { numeric: true }));
  }

  function paint(): void {
    const items = shown();
    const empty = $("#no-tickets");
    empty.hidden = !user || !loaded || items.length > 0;
    empty.textContent = booking
      ? "The tickets of this order appear here as soon as it is confirmed (after paying, that takes a few seconds)."
      : "You have no tickets yet. Book seats on a screening, and they appear here.";
    const keep = new Set(items.map((x) => x.id));
    for (const el of list.querySelectorAll<HTMLElement>("[data-ticket]")) if (!keep.has(el.dataset.ticket ?? "")) el.remove();
    items.forEach((x, i) => {
      const card = list.querySelector<HTMLElement>(`[data-ticket="${CSS.escape(x.id)}"]`) ?? makeCard(x.id);
      if (list.children[i] !== card) list.insertBefore(card, list.children[i] ?? null);
      fill(card, x.ticket, x.state, x.to);
    });
  }

  function makeCard(id: string): HTMLElement {
    const email = h("input", { type: "email", "data-field": "transfer-email", placeholder: "their@email.com", autocomplete: "off", required: "", "aria-label": "Their email" });
    const send = h("button", { type: "submit", "data-action": "transfer" }, "Transfer");
    const form = h("form", { class: "transfer-form" }, email, send);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      void transfer(id, email.value.trim());
    });
    const transferBox = h(
      "details",
      { class: "transfer" },
      h("summary", {}, "Transfer this ticket"),
      h("p", { class: "muted" }, "It moves to their firelock account with a new code. This code stops working at once."),
      form,
    );
    // The code as text: for a gate that takes typed or pasted codes.
    const codeText = h("code", { class: "code-text", "data-code-text": "" });
    const copy = h("button", { type: "button", "data-action": "copy-code" }, "Copy");
    copy.addEventListener("click", () => {
      void navigator.clipboard.writeText(codeText.textContent).then(
        () => status.ok("The ticket's code is copied."),
        () => status.error("unavailable", "The code could not be copied: select it and copy it by hand."),
      );
    });
    const codeBox = h("details", { class: "code" }, h("summary", {}, "The code as text"), codeText, copy);
    return h(
      "article",
      { class: "ticket", "data-ticket": id },
      h("header", {}, h("h2", { class: "title" }), h("p", { class: "when" })),
      h("div", { class: "seat-line" }, h("span", { class: "label" }, "Seat"), h("span", { class: "seat-id" })),
      h("div", { class: "qr", role: "img" }),
      h("p", { class: "state" }),
      h("p", { class: "order muted" }),
      codeBox,
      transferBox,
    );
  }

  function fill(card: HTMLElement, t: TicketDoc, state: TicketState, to?: string): void {
    const s = screenings.get(t.screeningId);
    if (card.dataset.ticketState !== state) card.dataset.ticketState = state;
    card.toggleAttribute("data-ticket-live", heard.has(card.dataset.ticket ?? ""));
    setText($(".title", card), s?.title ?? t.screeningId);
    setText($(".when", card), s?.startsAt ? whenWords(s.startsAt.toMillis(), s.timeZone) : "");
    setText($(".seat-id", card), t.seatId);
    const e = entries.get(card.dataset.ticket ?? "");
    const entered = state === "in" && e?.gate ? ` (gate ${e.gate}${e.at ? `, ${clockWords(e.at.toMillis(), s?.timeZone)}` : ""})` : "";
    setText($(".state", card), to ? `Transferred to ${to}: this code no longer works.` : STATE_WORDS[state] + entered);
    setText($(".order", card), `Order ${orderRef(t.bookingId)}`);
    const box = $(".qr", card);
    const live = state === "valid" || state === "out" || state === "in";
    box.hidden = !live;
    box.setAttribute("aria-label", `QR code of the ticket for seat ${t.seatId}`);
    if (live && box.dataset.code !== t.code) {
      box.dataset.code = t.code;
      void qrSVG(t.code).then((svg) => {
        if (box.dataset.code === t.code) box.innerHTML = svg;
      });
    }
    const codeBox = $(".code", card);
    codeBox.hidden = !live;
    setText($("[data-code-text]", card), live ? t.code : "");
    const transferBox = $(".transfer", card);
    transferBox.hidden = state !== "valid";
    for (const el of card.querySelectorAll<HTMLButtonElement | HTMLInputElement>("button, input")) el.disabled = busy.has(card.dataset.ticket ?? "");
  }

  function transfer(ticketId: string, toEmail: string): Promise<void> {
    const t = tickets.get(ticketId);
    return runAction(
      status,
      (on) => {
        if (on) busy.add(ticketId);
        else busy.delete(ticketId);
        paint();
      },
      `Transferring seat ${t?.seatId ?? ""} to ${toEmail}…`,
      async () => {
        if (!toEmail.includes("@")) throw new ApiError(400, "invalid_argument", "not an email");
        const r = await api.transferTicket(ticketId, toEmail);
        if (t) departed.set(ticketId, { ticket: t, to: toEmail });
        return `Seat ${r.seatId} is now ${toEmail}'s ticket, with a new code. Your copy of the old code no longer works.`;
      },
      transferError,
    );
  }

  function follow(): void {
    // Screenings and entries of the tickets shown, one listener each, closed when not needed.
    const need = new Set([...tickets.values()].map((t) => t.screeningId));
    for (const [id, stop] of stopScreening) {
      if (need.has(id)) continue;
      stop();
      stopScreening.delete(id);
    }
    for (const id of need) {
      if (stopScreening.has(id)) continue;
      stopScreening.set(
        id,
        onSnapshot(
          doc(db, "screenings", id),
          (snap) => {
            if (snap.exists()) screenings.set(id, snap.data());
            paint();
          },
          (err) => {
            console.warn(`screening ${id} could not be read (${err.code}); trying again`);
            stopScreening.delete(id);
            setTimeout(follow, 2000);
          },
        ),
      );
    }
    for (const [id, stop] of stopEntry) {
      if (tickets.has(id)) continue;
      stop();
      stopEntry.delete(id);
      entries.delete(id);
      heard.delete(id);
    }
    for (const id of tickets.keys()) {
      if (stopEntry.has(id)) continue;
      stopEntry.set(
        id,
        onSnapshot(
          doc(db, "checkins", id),
          (snap) => {
            if (snap.exists()) entries.set(id, snap.data() as EntryDoc);
            else entries.delete(id);
            heard.add(id);
            paint();
          },
          (err) => {
            // Without its entry the ticket shows its own status meanwhile; listen again soon.
            console.warn(`the entry of ticket ${id} could not be read (${err.code}); trying again`);
            stopEntry.delete(id);
            heard.delete(id);
            setTimeout(follow, 2000);
          },
        ),
      );
    }
  }

  let stopTickets: Unsubscribe | undefined;
  mountAccount($("#account"), auth, status, (u) => {
    stopTickets?.();
    stopTickets = undefined;
    for (const stop of [...stopScreening.values(), ...stopEntry.values()]) stop();
    stopScreening.clear();
    stopEntry.clear();
    tickets.clear();
    departed.clear();
    entries.clear();
    heard.clear();
    loaded = false;
    user = u;
    $("#signed-out").hidden = u !== null;
    if (u) {
      stopTickets = onSnapshot(
        query(collection(db, "tickets"), where("uid", "==", u.uid)),
        (snap) => {
          loaded = true;
          tickets.clear();
          for (const d of snap.docs) tickets.set(d.id, d.data() as TicketDoc);
          follow();
          paint();
        },
        (err) => status.error("unavailable", `Your tickets could not be loaded (${err.code}).`),
      );
    }
    paint();
  }, "Signed in.");
}

/** Sets an element's text only when it changes. */
function setText(el: HTMLElement, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

main().catch((err: unknown) => {
  const status = document.querySelector<HTMLElement>("[data-status]");
  if (status) new Status(status).error("unavailable", `The page could not start: ${err instanceof Error ? err.message : String(err)}`);
  console.error(err);
});
