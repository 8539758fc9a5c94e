/**
 * The console's person search (CONTRACT §8, operators only): one person's
 * place in this sale, found by email (places keep it in lowercase), by
 * queue id, or by uid (the queue id is derived from it), and shown live:
 * their status as the queue screen shows it, about how many are ahead of
 * them (from the public sale document's marks, as the queue screen
 * computes it), when their pass ends, and their holds and bookings of this
 * screening. From here an operator revokes their pass, with a reason and
 * after a confirmation.
 */
import {
  type DocumentSnapshot,
  type Firestore,
  type Timestamp,
  type Unsubscribe,
  collection,
  doc,
  limit,
  onSnapshot,
  query,
  where,
} from "firebase/firestore";
import { type SaleDoc, aheadOf, queueId, queueState } from "./queue";
import { $, $as, h } from "./ui";
import { whenExact } from "./when";

interface PlaceDoc {
  uid: string;
  screeningId: string;
  email?: string;
  status: "waiting" | "admitted" | "done" | "expired";
  order?: string;
  joinedAt?: Timestamp;
  admittedAt?: Timestamp;
  passUntil?: Timestamp;
  revokedAt?: Timestamp;
}

interface SeatsDoc {
  seats: string[];
  status: string;
  heldUntil?: Timestamp;
  createdAt?: Timestamp;
}

export interface Finder {
  /** The public sale document changed (the estimate of who is ahead follows it). */
  salePublished(sale: Pick<SaleDoc, "marks" | "admittedThrough"> | undefined): void;
  stop(): void;
}

const STATUS_WORDS: Record<string, string> = {
  waiting: "Waiting",
  admitted: "Admitted: pass live",
  done: "Done: booked, pass ended",
  expired: "Expired",
};

const time = (t: Timestamp | undefined) => (t ? whenExact(t.toMillis()) : "–");
const mss = (ms: number) => {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${String(Math.floor(s / 60))}:${String(s % 60).padStart(2, "0")}`;
};

/**
 * Mounts the search of `#find-form` into `#person`. `revoke` ends a
 * person's pass through OperateSale (and reports on the status line).
 */
export function mountFinder(db: Firestore, screeningId: string, revoke: (uid: string, reason: string) => Promise<void>): Finder {
  const form = $as(HTMLFormElement, "#find-form");
  const box = $("#person");
  const field = $as(HTMLInputElement, '[data-field="find"]', form);

  let sale: Pick<SaleDoc, "marks" | "admittedThrough"> | undefined;
  let searchStop: Unsubscribe | undefined;
  let mineStops: Unsubscribe[] = [];
  let mineOf: string | undefined; // the uid whose holds and bookings are listened to
  let place: { id: string; data: PlaceDoc } | undefined;
  let holds: { id: string; data: SeatsDoc }[] = [];
  let bookings: { id: string; data: SeatsDoc }[] = [];
  let card: ReturnType<typeof buildCard> | undefined;
  let tick: ReturnType<typeof setInterval> | undefined;

  function stopMine(): void {
    for (const s of mineStops) s();
    mineStops = [];
    mineOf = undefined;
    holds = [];
    bookings = [];
  }

  function reset(): void {
    searchStop?.();
    searchStop = undefined;
    stopMine();
    place = undefined;
    card = undefined;
    clearInterval(tick);
    tick = undefined;
  }

  function nobody(asked: string): void {
    stopMine();
    place = undefined;
    card = undefined;
    box.replaceChildren(h("p", { class: "person-none", "data-person-none": "" }, `Nobody in this sale matches “${asked}”. `, h("span", { class: "muted" }, "Search by the email they signed in with, their queue id or their uid.")));
  }

  function found(id: string, data: PlaceDoc): void {
    if (place?.id !== id) card = undefined;
    place = { id, data };
    if (mineOf !== data.uid) {
      stopMine();
      mineOf = data.uid;
      const mine = (coll: "holds" | "bookings", set: (docs: { id: string; data: SeatsDoc }[]) => void) =>
        onSnapshot(
          query(collection(db, coll), where("uid", "==", data.uid), where("screeningId", "==", screeningId)),
          (snap) => {
            const docs = snap.docs.map((d) => ({ id: d.id, data: d.data() as SeatsDoc }));
            docs.sort((a, b) => (b.data.createdAt?.toMillis() ?? 0) - (a.data.createdAt?.toMillis() ?? 0));
            set(docs);
            paint();
          },
          (err) => {
            box.append(h("p", { class: "field-error" }, `Their ${coll} could not be read (${err.code}).`));
          },
        );
      mineStops = [
        mine("holds", (d) => (holds = d)),
        mine("bookings", (d) => (bookings = d)),
      ];
    }
    paint();
  }

  function buildCard(who: string, uid: string) {
    const facts = h("dl", { class: "person-facts" });
    const holdList = h("ul", { class: "person-seats", "aria-label": "Holds" });
    const bookingList = h("ul", { class: "person-seats", "aria-label": "Bookings" });
    const badge = h("span", { class: "badge state" });
    const revokeButton = h("button", { type: "button", class: "danger", "data-action": "revoke" }, "Revoke the pass…");
    const reason = h("input", { type: "text", "data-field": "revoke-reason", id: "revoke-reason", placeholder: "e.g. a bot: 40 joins from one card", "aria-describedby": "revoke-reason-error" });
    const reasonError = h("p", { class: "field-error", id: "revoke-reason-error", hidden: "" });
    const confirmButton = h("button", { type: "button", class: "danger", "data-action": "confirm-revoke" }, "Revoke the pass");
    const cancelButton = h("button", { type: "button", "data-action": "cancel-revoke" }, "Keep it");
    const confirm = h(
      "div",
      { class: "confirm", id: "confirm-revoke", role: "alertdialog", "aria-labelledby": "confirm-revoke-text", hidden: "" },
      h("p", { id: "confirm-revoke-text" }, `Revoke ${who}'s pass? Their holds are released, their place ends, and the slot goes to the next in line.`),
      h("label", {}, "Reason (required, for the log) ", reason),
      reasonError,
      h("div", { class: "buttons" }, confirmButton, cancelButton),
    );
    const flag = (text: string) => {
      reasonError.textContent = text;
      reasonError.hidden = text === "";
      reason.setAttribute("aria-invalid", String(text !== ""));
    };
    revokeButton.addEventListener("click", () => {
      confirm.hidden = false;
      reason.focus();
    });
    cancelButton.addEventListener("click", () => {
      confirm.hidden = true;
      flag("");
    });
    reason.addEventListener("input", () => {
      if (reason.value.trim() !== "") flag("");
    });
    confirmButton.addEventListener("click", () => {
      const why = reason.value.trim();
      if (why === "") {
        flag("Say why: the log keeps it beside their name.");
        reason.focus();
        return;
      }
      confirm.hidden = true;
      reason.value = "";
      confirmButton.disabled = revokeButton.disabled = true;
      void revoke(uid, why).finally(() => {
        confirmButton.disabled = false;
        paint();
      });
    });
    const el = h(
      "article",
      { class: "person", "data-person": uid, "aria-label": who },
      h("div", { class: "person-head" }, h("strong", { class: "person-who" }, who), badge),
      facts,
      h("h3", {}, "Holds"),
      holdList,
      h("h3", {}, "Bookings"),
      bookingList,
      h("div", { class: "buttons" }, revokeButton),
      confirm,
    );
    return { el, facts, holdList, bookingList, badge, revokeButton };
  }

  function paint(): void {
    if (!place) return;
    const p = place.data;
    const now = Date.now();
    const state = queueState({ status: p.status, ...(p.order === undefined ? {} : { order: p.order }), ...(p.passUntil ? { passUntilMs: p.passUntil.toMillis() } : {}) }, now);
    const who = p.email ?? p.uid;
    if (!card) {
      card = buildCard(who, p.uid);
      box.replaceChildren(card.el);
    }
    card.el.dataset.personStatus = state;
    card.el.dataset.queueId = place.id;
    card.badge.dataset.personState = state;
    card.badge.textContent = STATUS_WORDS[state] ?? state;

    let where: string;
    if (state === "waiting") {
      const ahead = sale ? aheadOf(p.order, sale) : undefined;
      where = p.order === undefined ? "not ranked yet: joined before the opening, ranked by the draw at it" : ahead === undefined ? "in line" : `about ${ahead.toLocaleString()} ahead`;
    } else if (state === "admitted") {
      where = `let in at ${time(p.admittedAt)}`;
    } else {
      where = p.revokedAt ? `revoked at ${time(p.revokedAt)}` : p.admittedAt ? `let in at ${time(p.admittedAt)}` : "never let in";
    }
    const pass =
      p.passUntil === undefined ? "–" : state === "admitted" ? `${time(p.passUntil)} (in ${mss(p.passUntil.toMillis() - now)})` : `${time(p.passUntil)} (ended)`;
    const fact = (term: string, hook: string, value: string) => h("div", {}, h("dt", {}, term), h("dd", { [`data-person-${hook}`]: "" }, value));
    card.facts.replaceChildren(
      fact("Place", "place", where),
      fact("Pass ends", "pass", pass),
      fact("Joined", "joined", p.joinedAt ? whenExact(p.joinedAt.toMillis()) : "–"),
      fact("uid", "uid", p.uid),
      fact("Queue id", "queue-id", place.id),
    );

    const live = (d: SeatsDoc) => (d.status === "held" || d.status === "paying") && (d.heldUntil?.toMillis() ?? 0) > now;
    card.holdList.replaceChildren(
      ...(holds.length === 0
        ? [h("li", { class: "muted" }, "No holds.")]
        : holds.map((x) => {
            const status = (x.data.status === "held" || x.data.status === "paying") && !live(x.data) ? "expired" : x.data.status;
            return h(
              "li",
              { "data-person-hold": x.id, "data-hold-status": status },
              h("strong", {}, x.data.seats.join(", ")),
              ` ${status}`,
              live(x.data) && x.data.heldUntil ? ` until ${time(x.data.heldUntil)}` : "",
            );
          })),
    );
    card.bookingList.replaceChildren(
      ...(bookings.length === 0
        ? [h("li", { class: "muted" }, "No bookings.")]
        : bookings.map((x) => h("li", { "data-person-booking": x.id, "data-booking-status": x.data.status }, h("strong", {}, x.data.seats.join(", ")), ` ${x.data.status}`))),
    );
    // A revoke ends a live place, and releases live holds even after the pass.
    card.revokeButton.disabled = !(state === "waiting" || state === "admitted" || holds.some((x) => live(x.data)));

    if (state === "admitted" && tick === undefined) tick = setInterval(paint, 1000);
    if (state !== "admitted" && tick !== undefined) {
      clearInterval(tick);
      tick = undefined;
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const asked = field.value.trim();
    reset();
    if (asked === "") {
      box.replaceChildren(h("p", { class: "muted" }, "Type the email they signed in with, their queue id or their uid."));
      return;
    }
    box.replaceChildren(h("p", { class: "muted" }, "Looking…"));
    const onPlace = (snap: DocumentSnapshot) => {
      const d = snap.data() as PlaceDoc | undefined;
      if (d?.screeningId === screeningId) found(snap.id, d);
      else nobody(asked);
    };
    const failed = (err: { code: string }) => {
      box.replaceChildren(h("p", { class: "field-error" }, `The queue could not be searched (${err.code}).`));
    };
    if (asked.includes("@")) {
      searchStop = onSnapshot(
        query(collection(db, "queue"), where("screeningId", "==", screeningId), where("email", "==", asked.toLowerCase()), limit(1)),
        (snap) => {
          const d = snap.docs[0];
          if (d) onPlace(d);
          else nobody(asked);
        },
        failed,
      );
    } else if (/^[0-9a-f]{64}$/i.test(asked)) {
      searchStop = onSnapshot(doc(db, "queue", asked.toLowerCase()), onPlace, failed);
    } else {
      // A uid: its place's id is derived from it (CONTRACT §7).
      void queueId(screeningId, asked).then((id) => {
        if (field.value.trim() !== asked) return;
        searchStop = onSnapshot(doc(db, "queue", id), onPlace, failed);
      });
    }
  });

  return {
    salePublished(s) {
      sale = s;
      paint();
    },
    stop() {
      reset();
      box.replaceChildren();
    },
  };
}
