/**
 * The sale console (CONTRACT §8), `operate.html?screening=ID`: for operators
 * (the custom claim operator: true), anyone else sees `data-op-denied`.
 *
 * It shows the sale live from `sales/{id}` (the numbers and the state), four
 * charts drawn from `saleStats/{id}/minutes`, the configuration form, the
 * pause, resume and close buttons (close asks first), and the log from
 * `saleLog/{id}/entries`, newest first. Every change goes through the
 * OperateSale function; the page itself writes nothing to Firestore.
 */
import type { User } from "firebase/auth";
import { type Timestamp, type Unsubscribe, collection, doc, limit, onSnapshot, orderBy, query } from "firebase/firestore";
import { Api, ApiError, type Operation, type SaleFields } from "./api";
import { drawChart } from "./chart";
import { money } from "./pay";
import { services } from "./config";
import { $, $as, Status, h, mountAccount, runAction } from "./ui";

type Field = "opensAt" | "admitPerMinute" | "maxActive" | "passSeconds" | "maxSeatsPerUser";
const FIELDS: Field[] = ["opensAt", "admitPerMinute", "maxActive", "passSeconds", "maxSeatsPerUser"];

interface MinuteDoc {
  at: Timestamp;
  waiting: number;
  admitted: number;
  active: number;
  seatsLeft: number;
  admissions: number;
  /** CONTRACT §10: money in and back within the minute, in the currency's smallest unit; late payments booked. */
  revenue?: number;
  refunds?: number;
  latePayments?: number;
}

interface LogEntry {
  at?: Timestamp;
  uid: string;
  email?: string;
  action: string;
  reason?: string;
  before?: Record<string, unknown>;
  after?: Record<string, unknown>;
}

const STATE_WORDS: Record<string, string> = {
  scheduled: "Scheduled",
  open: "Open",
  paused: "Paused",
  soldout: "Sold out",
  closed: "Closed",
};

/** The field of a §8 invalid_sale message ("sale.maxActive must be ..."), if it names one. */
export function fieldOf(message: string): Field | undefined {
  const m = /\bsale\.(\w+)/.exec(message);
  const f = m?.[1];
  return FIELDS.find((x) => x === f);
}

/** A stored value in words (a number, a time, a string; anything else as JSON). */
function words(v: unknown): string {
  if (v === undefined || v === null) return "default";
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

/** What a log entry changed, in words: "maxActive 5 → 10", "paused". */
export function changeWords(e: Pick<LogEntry, "action" | "before" | "after">): string {
  const before = e.before ?? {};
  const after = e.after ?? {};
  if (e.action === "revoke") return `user ${words(after.user ?? before.user)}'s pass ended`;
  const changed = Object.keys({ ...before, ...after })
    .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]) && k !== "paused" && k !== "closed")
    .map((k) => (k in before ? `${k} ${words(before[k])} → ${words(after[k])}` : `${k} ${words(after[k])}`));
  return changed.join(", ");
}

async function main(): Promise<void> {
  const screeningId = new URLSearchParams(location.search).get("screening") ?? "onsale";
  const status = new Status($("[data-status]"));
  const { auth, db, functionsURL } = await services();
  const api = new Api(functionsURL, () => auth.currentUser);

  const form = $as(HTMLFormElement, "#sale-form");
  const input = (f: Field | "reason") => $as(HTMLInputElement, `[name="${f}"]`, form);
  const buttons = {
    pause: $as(HTMLButtonElement, '[data-action="pause"]'),
    resume: $as(HTMLButtonElement, '[data-action="resume"]'),
    close: $as(HTMLButtonElement, '[data-action="close"]'),
    confirmClose: $as(HTMLButtonElement, '[data-action="confirm-close"]'),
    cancelClose: $as(HTMLButtonElement, '[data-action="cancel-close"]'),
    save: $as(HTMLButtonElement, '[data-action="save-sale"]'),
  };

  let stops: Unsubscribe[] = [];
  let sale: Record<string, unknown> | undefined; // the stored sale, in the form's terms
  let control: { paused?: boolean; closed?: boolean } = {};
  let state = "";
  let busy = false;
  const dirty = new Set<string>(); // fields the operator is editing

  const showConsole = (mode: "signed-out" | "denied" | "console") => {
    $("#signed-out").hidden = mode !== "signed-out";
    $("[data-op-denied]").hidden = mode !== "denied";
    $("#console").hidden = mode !== "console";
  };

  function paintControls(): void {
    const closed = state === "closed" || control.closed === true;
    const paused = state === "paused" || control.paused === true;
    buttons.pause.disabled = busy || closed || paused || !sale;
    buttons.resume.disabled = busy || closed || !paused;
    buttons.close.disabled = busy || closed || !sale;
    buttons.save.disabled = busy || closed;
    buttons.confirmClose.disabled = buttons.cancelClose.disabled = busy;
  }

  function fillForm(): void {
    for (const f of FIELDS) {
      const el = input(f);
      if (dirty.has(f) || document.activeElement === el) continue;
      const v = sale?.[f];
      el.value = v === undefined || v === null ? "" : words(v);
    }
  }

  const act = (pending: string, fn: () => Promise<string>) =>
    runAction(
      status,
      (on) => {
        busy = on;
        paintControls();
      },
      pending,
      fn,
      (err) => (err instanceof ApiError ? { code: err.code, message: err.message } : { code: "unavailable", message: String(err) }),
    );

  const operate = (op: Omit<Operation, "screeningId">, pending: string) =>
    act(pending, async () => {
      const r = await api.operateSale({ screeningId, ...op });
      return `Done: the sale is ${STATE_WORDS[r.state]?.toLowerCase() ?? r.state} (the numbers follow within 2 s).`;
    });

  buttons.pause.addEventListener("click", () => void operate({ action: "pause", reason: input("reason").value.trim() }, "Pausing admissions…"));
  buttons.resume.addEventListener("click", () => void operate({ action: "resume", reason: input("reason").value.trim() }, "Resuming admissions…"));
  buttons.close.addEventListener("click", () => {
    $("#confirm-close").hidden = false;
    $as(HTMLInputElement, "#close-reason").focus();
  });
  buttons.cancelClose.addEventListener("click", () => {
    $("#confirm-close").hidden = true;
  });
  buttons.confirmClose.addEventListener("click", () => {
    $("#confirm-close").hidden = true;
    void operate({ action: "close", reason: $as(HTMLInputElement, "#close-reason").value.trim() }, "Closing the sale…");
  });

  for (const f of FIELDS) input(f).addEventListener("input", () => dirty.add(f));

  const fieldError = (f: Field, text: string) => {
    const p = $(`[data-error-for="${f}"]`);
    p.textContent = text;
    p.hidden = text === "";
    input(f).setAttribute("aria-invalid", String(text !== ""));
    if (text) input(f).setAttribute("aria-describedby", `error-${f}`);
    p.id = `error-${f}`;
  };

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    for (const f of FIELDS) fieldError(f, "");
    const fields: SaleFields = {};
    for (const f of FIELDS) {
      const raw = input(f).value.trim();
      const was = sale?.[f];
      if (raw === (was === undefined || was === null ? "" : words(was))) continue;
      if (f === "opensAt") {
        fields.opensAt = raw;
      } else if (raw === "") {
        fields[f] = null; // back to the default (passSeconds, maxSeatsPerUser), or refused with its reason
      } else {
        // Sent as typed: the function checks it and says what is wrong, beside the field.
        const n = Number(raw);
        (fields as Record<string, unknown>)[f] = /^-?\d+(\.\d+)?$/.test(raw) ? n : raw;
      }
    }
    if (Object.keys(fields).length === 0) {
      status.ok("Nothing to save: the form is as the sale is.");
      return;
    }
    void act("Saving the sale…", async () => {
      try {
        const r = await api.operateSale({ screeningId, action: "configure", sale: fields, reason: input("reason").value.trim() });
        dirty.clear();
        sale = { ...r.sale };
        fillForm();
        return "Saved. New rates and limits take effect within 2 s.";
      } catch (err) {
        if (err instanceof ApiError && err.code === "invalid_sale") {
          const f = fieldOf(err.message);
          if (f) fieldError(f, err.message);
        }
        throw err;
      }
    });
  });

  // The takings of a priced sale (§10), from the finished minutes.
  let currency: string | undefined;
  let minutes: MinuteDoc[] = [];
  function paintMoney(): void {
    $("[data-op-money]").hidden = currency === undefined;
    const chart = $('[data-chart="revenue"]');
    chart.hidden = currency === undefined;
    if (currency === undefined) return;
    let revenue = 0;
    let refunds = 0;
    let late = 0;
    for (const m of minutes) {
      revenue += m.revenue ?? 0;
      refunds += m.refunds ?? 0;
      late += m.latePayments ?? 0;
    }
    $("[data-op-takings]").textContent = money(revenue - refunds, currency);
    $("[data-op-refunds]").textContent = `${money(revenue, currency)} in, ${money(refunds, currency)} refunded; ${String(late)} paid late`;
    const cents = 10 ** (new Intl.NumberFormat(undefined, { style: "currency", currency: currency.toUpperCase() }).resolvedOptions().maximumFractionDigits ?? 2);
    drawChart($(".plot", chart), minutes.map((m) => ({ at: m.at.toMillis(), value: ((m.revenue ?? 0) - (m.refunds ?? 0)) / cents })), true, "Takings per minute, after refunds");
  }

  function listen(): void {
    for (const stop of stops) stop();
    stops = [
      onSnapshot(
        doc(db, "screenings", screeningId),
        (snap) => {
          if (!snap.exists()) {
            $("#title").textContent = "Screening not found";
            $("#when").textContent = `There is no screening ${screeningId}.`;
            $("#console").hidden = true;
            return;
          }
          const d = snap.data() as { title?: string; startsAt?: Timestamp; sale?: Record<string, unknown> | null; saleControl?: { paused?: boolean; closed?: boolean }; price?: { currency?: string } };
          currency = d.price?.currency;
          paintMoney();
          $("#title").textContent = `${d.title ?? screeningId}: sale console`;
          $("#when").textContent = d.startsAt ? `Screening ${d.startsAt.toDate().toLocaleString()}` : "";
          sale = d.sale ? Object.fromEntries(Object.entries(d.sale).map(([k, v]) => [k, isTimestamp(v) ? v.toDate().toISOString().replace(".000Z", "Z") : v])) : undefined;
          control = d.saleControl ?? {};
          fillForm();
          paintControls();
        },
        (err) => status.error("unavailable", `The screening could not be read (${err.code}).`),
      ),
      onSnapshot(
        doc(db, "sales", screeningId),
        (snap) => {
          const p = snap.data() as { state: string; waiting: number; admitted: number; active: number; seatsLeft: number; updatedAt: Timestamp } | undefined;
          state = p?.state ?? "";
          const badge = $("[data-op-state]");
          badge.dataset.opState = state || "none";
          badge.textContent = p ? (STATE_WORDS[state] ?? state) : "Not published yet";
          const num = (sel: string, v: number | undefined) => {
            const e = $(sel);
            e.textContent = v === undefined ? "–" : v.toLocaleString();
          };
          num("[data-op-waiting]", p?.waiting);
          num("[data-op-admitted]", p?.admitted);
          num("[data-op-active]", p?.active);
          num("[data-op-seats-left]", p?.seatsLeft);
          $("#updated").textContent = p ? `as of ${p.updatedAt.toDate().toLocaleTimeString()}` : "the admitter publishes it on its next run";
          paintControls();
        },
        (err) => status.error("unavailable", `The sale's numbers could not be read (${err.code}).`),
      ),
      onSnapshot(
        // The last day's minutes: newest first from the store, oldest first on the charts.
        query(collection(db, "saleStats", screeningId, "minutes"), orderBy("at", "desc"), limit(1440)),
        (snap) => {
          const ms = snap.docs.map((d) => d.data() as MinuteDoc).reverse();
          const series = (f: (m: MinuteDoc) => number) => ms.map((m) => ({ at: m.at.toMillis(), value: f(m) }));
          const plot = (name: string) => $(`[data-chart="${name}"] .plot`);
          drawChart(plot("waiting"), series((m) => m.waiting), false, "People waiting, by minute");
          drawChart(plot("admissions"), series((m) => m.admissions), true, "Admissions per minute");
          drawChart(plot("active"), series((m) => m.active), false, "Active passes, by minute");
          drawChart(plot("seats-left"), series((m) => m.seatsLeft), false, "Seats left, by minute");
          minutes = ms;
          paintMoney();
        },
        (err) => status.error("unavailable", `The sale's minutes could not be read (${err.code}).`),
      ),
      onSnapshot(
        query(collection(db, "saleLog", screeningId, "entries"), orderBy("at", "desc"), limit(100)),
        (snap) => {
          const rows = snap.docs.map((d) => {
            const e = d.data({ serverTimestamps: "estimate" }) as LogEntry;
            const when = e.at ? e.at.toDate().toLocaleString() : "";
            return h(
              "li",
              { "data-op-log": d.id, "data-action-logged": e.action },
              h("span", { class: "when" }, when),
              h("span", { class: "what" }, e.action),
              h("span", { class: "who" }, e.email || e.uid),
              h("span", { class: "change" }, changeWords(e)),
              h("span", { class: "reason" }, e.reason ? `“${e.reason}”` : ""),
            );
          });
          $("#log").replaceChildren(...rows);
          $("#no-log").hidden = rows.length > 0;
        },
        (err) => status.error("unavailable", `The log could not be read (${err.code}).`),
      ),
    ];
  }

  mountAccount(
    $("#account"),
    auth,
    status,
    (u: User | null) => {
      for (const stop of stops) stop();
      stops = [];
      if (!u) {
        showConsole("signed-out");
        return;
      }
      // A fresh token: a claim granted since the last sign-in shows at once.
      void u.getIdTokenResult(true).then((t) => {
        if (auth.currentUser?.uid !== u.uid) return;
        if (t.claims.operator !== true) {
          showConsole("denied");
          return;
        }
        showConsole("console");
        listen();
      });
    },
    "Signed in.",
  );
  paintControls();
}

function isTimestamp(v: unknown): v is Timestamp {
  return typeof v === "object" && v !== null && "toDate" in v && typeof v.toDate === "function";
}

main().catch((err: unknown) => {
  const status = document.querySelector<HTMLElement>("[data-status]");
  if (status) new Status(status).error("unavailable", `The console could not start: ${err instanceof Error ? err.message : String(err)}`);
  console.error(err);
});
