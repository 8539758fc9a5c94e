/**
 * The sale console (CONTRACT §8), `operate.html?screening=ID`: for operators
 * (the custom claim operator: true), anyone else sees `data-op-denied`.
 *
 * It shows the sale live from `sales/{id}` (the numbers, the state, and the
 * wait a join now would have), charts drawn from `saleStats/{id}/minutes`
 * with the limits, pauses and changes the log tells, the configuration form,
 * the pause, resume and close buttons (close asks first), and the log from
 * `saleLog/{id}/entries`, newest first. Every change goes through the
 * OperateSale function; the page itself writes nothing to Firestore.
 */
import type { Auth, User } from "firebase/auth";
import { type Timestamp, type Unsubscribe, collection, doc, limit, onSnapshot, orderBy, query } from "firebase/firestore";
import { Api, ApiError, type Operation, type SaleFields } from "./api";
import { type Series, drawChart, minuteStart, zoneOf } from "./chart";
import { mountDoorPanel } from "./doorpanel";
import { countJoinChecks, joinCheckWords } from "./joinchecks";
import { minorUnits, money } from "./pay";
import { FIELDS, type Field, fieldProblem, formProblems } from "./saleform";
import { services } from "./config";
import { STATE_WORDS, listSales } from "./salelist";
import { clockWords, whenExact, whenWords } from "./when";
import { mountFinder } from "./person";
import { type Mark, DEFAULT_PASS_SECONDS, admitRatePerMinute, waitMs, waitWords } from "./queue";
import { type StoryEntry, changeMarks, limitSteps, pausedSpans } from "./salestory";
import { $, $as, Status, h, runAction } from "./ui";
import { mountAccount } from "./account";


interface MinuteDoc {
  /** The minute's start, ms: from the document's id (UTC `YYYYMMDDHHmm`), as minutes.csv labels it. */
  start: number;
  at: Timestamp;
  waiting: number;
  admitted: number;
  active: number;
  seatsLeft: number;
  seatsHeld?: number;
  seatsSold?: number;
  joins?: number;
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
  before?: Record<string, unknown> | undefined;
  after?: Record<string, unknown> | undefined;
}


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
  if (e.action === "revoke") {
    const who = after.userEmail ?? before.userEmail ?? after.user ?? before.user;
    const released = typeof after.holdsReleased === "number" && after.holdsReleased > 0 ? `, ${String(after.holdsReleased)} hold${after.holdsReleased === 1 ? "" : "s"} released` : "";
    return `${words(who)}'s pass ended (${words(before.status)} → ${words(after.status)})${released}`;
  }
  const changed = Object.keys({ ...before, ...after })
    .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]) && k !== "paused" && k !== "closed")
    .map((k) => (k in before ? `${k} ${words(before[k])} → ${words(after[k])}` : `${k} ${words(after[k])}`));
  return changed.join(", ");
}

/**
 * The operator's gate, on both views: a fresh ID token on sign-in (a claim
 * granted since the last sign-in counts at once), then `open` for an
 * operator; `data-op-denied` for anyone else. `open` returns what closes it.
 */
function gate(auth: Auth, status: Status, open: () => Unsubscribe): void {
  let close: Unsubscribe | undefined;
  const show = (mode: "signed-out" | "denied" | "open") => {
    $("#signed-out").hidden = mode !== "signed-out";
    $("[data-op-denied]").hidden = mode !== "denied";
  };
  mountAccount(
    $("#account"),
    auth,
    status,
    (u: User | null) => {
      close?.();
      close = undefined;
      if (!u) {
        show("signed-out");
        return;
      }
      void u.getIdTokenResult(true).then((t) => {
        if (auth.currentUser?.uid !== u.uid) return;
        if (t.claims.operator !== true) {
          show("denied");
          return;
        }
        show("open");
        close = open();
      });
    },
    "Signed in.",
  );
}

/** `operate.html` without `?screening=`: every sale, live (src/app/salelist.ts). */
async function allSales(): Promise<void> {
  const status = new Status($("[data-status]"));
  const { auth, db } = await services();
  $("#title").textContent = "Every sale";
  document.title = "Every sale · firelock cinema";
  gate(auth, status, () => {
    $("[data-sales-list]").hidden = false;
    const stop = listSales(db, (what, code) => {
      status.error("unavailable", `${what} could not be read (${code}).`);
    });
    return () => {
      stop();
      $("[data-sales-list]").hidden = true;
    };
  });
}

async function main(): Promise<void> {
  const asked = new URLSearchParams(location.search).get("screening");
  if (asked === null || asked === "") {
    await allSales();
    return;
  }
  const screeningId: string = asked;
  const status = new Status($("[data-status]"));
  const { auth, db, functionsURL, appCheckToken } = await services();
  const api = new Api(functionsURL, () => auth.currentUser, { appCheckToken });

  const form = $as(HTMLFormElement, "#sale-form");
  const input = (f: Field | "reason") => $as(HTMLInputElement, `[name="${f}"]`, form);
  const buttons = {
    pause: $as(HTMLButtonElement, '[data-action="pause"]'),
    resume: $as(HTMLButtonElement, '[data-action="resume"]'),
    close: $as(HTMLButtonElement, '[data-action="close"]'),
    confirmClose: $as(HTMLButtonElement, '[data-action="confirm-close"]'),
    cancelClose: $as(HTMLButtonElement, '[data-action="cancel-close"]'),
    confirmPause: $as(HTMLButtonElement, '[data-action="confirm-pause"]'),
    cancelPause: $as(HTMLButtonElement, '[data-action="cancel-pause"]'),
    save: $as(HTMLButtonElement, '[data-action="save-sale"]'),
  };

  let stops: Unsubscribe[] = [];
  let sale: Record<string, unknown> | undefined; // the stored sale, in the form's terms
  let control: { paused?: boolean; closed?: boolean } = {};
  let state = "";
  let startsAtMs: number | undefined; // the screening's start: a sale opens before it
  let timeZone: string | undefined; // the screening's own zone, when it names one (when.ts)
  let busy = false;
  const dirty = new Set<string>(); // fields the operator is editing

  function paintControls(): void {
    const closed = state === "closed" || control.closed === true;
    const paused = state === "paused" || control.paused === true;
    buttons.pause.disabled = busy || closed || paused || !sale;
    buttons.resume.disabled = busy || closed || !paused;
    buttons.close.disabled = busy || closed || !sale;
    buttons.save.disabled = busy || closed;
    buttons.confirmClose.disabled = buttons.cancelClose.disabled = busy;
    buttons.confirmPause.disabled = busy || closed || paused || !sale;
    buttons.cancelPause.disabled = busy;
  }

  const verifiedBox = $as(HTMLInputElement, '[data-field="requireVerifiedEmail"]');
  verifiedBox.addEventListener("change", () => dirty.add("requireVerifiedEmail"));

  function fillForm(): void {
    for (const f of FIELDS) {
      const el = input(f);
      if (dirty.has(f) || document.activeElement === el) continue;
      const v = sale?.[f];
      el.value = v === undefined || v === null ? "" : words(v);
    }
    if (!dirty.has("requireVerifiedEmail")) verifiedBox.checked = sale?.requireVerifiedEmail === true;
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

  // Pause asks why first (the log keeps it), as close asks to be sure.
  const pauseReason = $as(HTMLInputElement, "#pause-reason");
  const pauseError = $("#pause-reason-error");
  const flagPauseReason = (text: string) => {
    pauseError.textContent = text;
    pauseError.hidden = text === "";
    pauseReason.setAttribute("aria-invalid", String(text !== ""));
  };
  buttons.pause.addEventListener("click", () => {
    $("#confirm-pause").hidden = false;
    if (pauseReason.value === "") pauseReason.value = input("reason").value.trim();
    pauseReason.focus();
  });
  pauseReason.addEventListener("input", () => {
    if (pauseReason.value.trim() !== "") flagPauseReason("");
  });
  buttons.cancelPause.addEventListener("click", () => {
    $("#confirm-pause").hidden = true;
    flagPauseReason("");
  });
  buttons.confirmPause.addEventListener("click", () => {
    const reason = pauseReason.value.trim();
    if (reason === "") {
      flagPauseReason("Say why admissions pause: the log keeps it for whoever resumes.");
      pauseReason.focus();
      return;
    }
    flagPauseReason("");
    $("#confirm-pause").hidden = true;
    pauseReason.value = "";
    void operate({ action: "pause", reason }, "Pausing admissions…");
  });
  buttons.resume.addEventListener("click", () => void operate({ action: "resume", reason: input("reason").value.trim() }, "Resuming admissions…"));
  buttons.close.addEventListener("click", () => {
    $("#confirm-close").hidden = false;
    $as(HTMLInputElement, "#close-reason").focus();
  });
  // The person search; a revoke from it goes through OperateSale like every action.
  const finder = mountFinder(db, screeningId, (uid, reason) =>
    act("Revoking the pass…", async () => {
      await api.operateSale({ screeningId, action: "revoke", uid, reason });
      return "Revoked: their pass has ended and their live holds are released.";
    }),
  );

  buttons.cancelClose.addEventListener("click", () => {
    $("#confirm-close").hidden = true;
  });
  buttons.confirmClose.addEventListener("click", () => {
    $("#confirm-close").hidden = true;
    void operate({ action: "close", reason: $as(HTMLInputElement, "#close-reason").value.trim() }, "Closing the sale…");
  });

  const fieldError = (f: Field, text: string) => {
    const p = $(`[data-error-for="${f}"]`);
    p.textContent = text;
    p.hidden = text === "";
    input(f).setAttribute("aria-invalid", String(text !== ""));
    if (text) input(f).setAttribute("aria-describedby", `error-${f}`);
    p.id = `error-${f}`;
  };

  // A flagged field's error goes as soon as its value is right (on input, not on the next save).
  for (const f of FIELDS) {
    input(f).addEventListener("input", () => {
      dirty.add(f);
      if (input(f).getAttribute("aria-invalid") === "true" && fieldProblem(f, input(f).value, startsAtMs) === "") fieldError(f, "");
    });
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    // Every field the function would refuse, flagged at once (it names only the first).
    const values = Object.fromEntries(FIELDS.map((f) => [f, input(f).value])) as Record<Field, string>;
    const problems = formProblems(values, startsAtMs);
    for (const f of FIELDS) fieldError(f, problems[f] ?? "");
    const wrong = FIELDS.filter((f) => problems[f]);
    if (wrong.length > 0) {
      status.error("invalid_sale", `Nothing saved: ${wrong.length === 1 ? "one field needs" : `${String(wrong.length)} fields need`} fixing (${wrong.join(", ")}).`);
      input(wrong[0] ?? "opensAt").focus();
      return;
    }
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
    // CONTRACT §12: false is the default, so a sale without the field is false.
    if (verifiedBox.checked !== (sale?.requireVerifiedEmail === true)) fields.requireVerifiedEmail = verifiedBox.checked;
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
    const cents = minorUnits(currency);
    drawChart($(".plot", chart), {
      ...story(),
      label: "Takings per minute, after refunds",
      kind: "bars",
      series: [{ name: currency.toUpperCase(), cls: "s-money", values: minutes.map((m) => ((m.revenue ?? 0) - (m.refunds ?? 0)) / cents) }],
    });
  }

  // The log as the charts read it: paused stretches, limits over time, changes marked.
  let logged: StoryEntry[] = [];
  const limitNow = (f: "admitPerMinute" | "maxActive") => (typeof sale?.[f] === "number" ? sale[f] : undefined);
  function story() {
    return {
      starts: minutes.map((m) => m.start),
      paused: pausedSpans(logged, Date.now()),
      changes: changeMarks(logged, changeWords),
    };
  }

  function paintCharts(): void {
    const plot = (name: string) => $(`[data-chart="${name}"] .plot`);
    const one = (name: string, cls: string, f: (m: MinuteDoc) => number): Series[] => [{ name, cls, values: minutes.map(f) }];
    const s = story();
    $("[data-chart-zone]").textContent = zoneOf(new Date(minutes.at(-1)?.start ?? Date.now()));
    drawChart(plot("waiting"), { ...s, label: "People waiting, by minute", kind: "line", series: one("waiting", "s-waiting", (m) => m.waiting) });
    drawChart(plot("joins"), { ...s, label: "Joins per minute", kind: "bars", series: one("joined", "s-joins", (m) => m.joins ?? 0) });
    drawChart(plot("admissions"), {
      ...s,
      label: "Admissions per minute, against admitPerMinute",
      kind: "bars",
      series: one("admitted", "s-admissions", (m) => m.admissions),
      limit: { name: "admitPerMinute", steps: limitSteps(logged, "admitPerMinute", limitNow("admitPerMinute")) },
    });
    drawChart(plot("active"), {
      ...s,
      label: "Active passes, by minute, against maxActive",
      kind: "line",
      series: one("active", "s-active", (m) => m.active),
      limit: { name: "maxActive", steps: limitSteps(logged, "maxActive", limitNow("maxActive")) },
    });
    drawChart(plot("seats-left"), {
      ...s,
      label: "Seats sold, held and left, by minute",
      kind: "stacked",
      series: [
        { name: "sold", cls: "s-sold", values: minutes.map((m) => m.seatsSold ?? 0) },
        { name: "held", cls: "s-held", values: minutes.map((m) => m.seatsHeld ?? 0) },
        { name: "left", cls: "s-left", values: minutes.map((m) => m.seatsLeft) },
      ],
    });
    paintMoney();
  }

  // The wait of someone joining now, as the queue screen would estimate it (src/app/queue.ts).
  let published: { state: string; waiting: number } | undefined;
  function paintWait(): void {
    const out = $("[data-op-wait]");
    const note = $("[data-op-wait-note]");
    const rate = { admitPerMinute: limitNow("admitPerMinute") ?? 0, maxActive: limitNow("maxActive") ?? 0, passSeconds: typeof sale?.passSeconds === "number" ? sale.passSeconds : DEFAULT_PASS_SECONDS };
    if (!published || !sale) {
      out.textContent = "–";
      out.dataset.waitMs = "";
      note.textContent = "";
      return;
    }
    const ms = waitMs(published.waiting, rate);
    out.dataset.waitMs = Number.isFinite(ms) ? String(Math.round(ms)) : "";
    const perMin = admitRatePerMinute(rate);
    const pace = `${String(published.waiting)} ahead at ${perMin.toLocaleString(undefined, { maximumFractionDigits: 1 })} a minute${perMin < rate.admitPerMinute ? " (maxActive binds)" : ""}`;
    switch (published.state) {
      case "closed":
      case "soldout":
        out.textContent = "no joins";
        note.textContent = published.state === "closed" ? "the sale is closed" : "sold out";
        break;
      case "paused":
        out.textContent = `${waitWords(ms)} once resumed`;
        note.textContent = `paused: nobody is let in until you resume; ${pace}`;
        break;
      case "scheduled":
        out.textContent = `${waitWords(ms)} after the opening`;
        note.textContent = pace;
        break;
      default:
        out.textContent = waitWords(ms);
        note.textContent = pace;
    }
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
          const d = snap.data() as { title?: string; startsAt?: Timestamp; timeZone?: string; sale?: Record<string, unknown> | null; saleControl?: { paused?: boolean; closed?: boolean }; price?: { currency?: string } };
          currency = d.price?.currency;
          startsAtMs = d.startsAt?.toMillis();
          $("#title").textContent = `${d.title ?? screeningId}: sale console`;
          timeZone = d.timeZone;
          $("#when").textContent = d.startsAt ? `Screening ${whenWords(d.startsAt.toMillis(), d.timeZone)}` : "";
          sale = d.sale ? Object.fromEntries(Object.entries(d.sale).map(([k, v]) => [k, isTimestamp(v) ? v.toDate().toISOString().replace(".000Z", "Z") : v])) : undefined;
          control = d.saleControl ?? {};
          fillForm();
          paintControls();
          paintCharts();
          paintWait();
        },
        (err) => status.error("unavailable", `The screening could not be read (${err.code}).`),
      ),
      onSnapshot(
        doc(db, "sales", screeningId),
        (snap) => {
          const p = snap.data() as
            | { state: string; waiting: number; admitted: number; active: number; seatsLeft: number; updatedAt: Timestamp; marks?: Mark[]; admittedThrough?: string }
            | undefined;
          finder.salePublished(p ? { marks: p.marks ?? [], admittedThrough: p.admittedThrough ?? "" } : undefined);
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
          published = p ? { state: p.state, waiting: p.waiting } : undefined;
          paintWait();
          $("#updated").textContent = p ? `as of ${clockWords(p.updatedAt.toMillis(), timeZone)}` : "the admitter publishes it on its next run";
          paintControls();
        },
        (err) => status.error("unavailable", `The sale's numbers could not be read (${err.code}).`),
      ),
      onSnapshot(
        // The last day's minutes: newest first from the store, oldest first on the charts.
        query(collection(db, "saleStats", screeningId, "minutes"), orderBy("at", "desc"), limit(1440)),
        (snap) => {
          minutes = snap.docs
            .map((d) => {
              const m = d.data() as Omit<MinuteDoc, "start">;
              return { ...m, start: minuteStart(d.id) ?? m.at.toMillis() - 60_000 };
            })
            .reverse();
          paintCharts();
        },
        (err) => status.error("unavailable", `The sale's minutes could not be read (${err.code}).`),
      ),
      onSnapshot(
        query(collection(db, "saleLog", screeningId, "entries"), orderBy("at", "desc"), limit(100)),
        (snap) => {
          logged = snap.docs.flatMap((d) => {
            const e = d.data({ serverTimestamps: "estimate" }) as LogEntry;
            return e.at ? [{ at: e.at.toMillis(), action: e.action, before: e.before, after: e.after }] : [];
          });
          paintCharts();
          const rows = snap.docs.map((d) => {
            const e = d.data({ serverTimestamps: "estimate" }) as LogEntry;
            const when = e.at ? whenExact(e.at.toMillis(), timeZone) : "";
            return h(
              "li",
              { "data-op-log": d.id, "data-action-logged": e.action },
              h("span", { class: "when" }, when),
              h("span", { class: "what" }, e.action),
              whoCell(e),
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

  // Joins by App Check result: counted (not listened to: a count query
  // costs a read per 1,000 places) now and every minute.
  async function paintJoinChecks(): Promise<void> {
    try {
      const c = await countJoinChecks(db, screeningId);
      const w = joinCheckWords(c);
      const box = $("[data-op-appcheck]");
      box.hidden = w === undefined;
      box.dataset.valid = String(c.valid);
      box.dataset.missing = String(c.missing);
      box.dataset.invalid = String(c.invalid);
      $("[data-op-appcheck-valid]").textContent = w?.value ?? "–";
      $("[data-op-appcheck-note]").textContent = w?.note ?? "";
    } catch {
      // a figure only: the next minute tries again
    }
  }

  gate(auth, status, () => {
    $("#console").hidden = false;
    listen();
    const closeDoor = mountDoorPanel(db, api, screeningId, status);
    void paintJoinChecks();
    const counting = setInterval(() => void paintJoinChecks(), 60_000);
    return () => {
      closeDoor();
      clearInterval(counting);
      for (const stop of stops) stop();
      stops = [];
      finder.stop();
      $("#console").hidden = true;
    };
  });
  paintControls();
}

/**
 * Who acted, for the log: the email's local part always shows (on a phone
 * too), its domain may be cut short; a uid when the token had no email.
 */
function whoCell(e: Pick<LogEntry, "email" | "uid">): HTMLElement {
  const email = e.email ?? "";
  const at = email.lastIndexOf("@");
  if (at <= 0) return h("span", { class: "who", title: email || `uid ${e.uid}` }, h("span", { class: "local" }, email || e.uid));
  return h("span", { class: "who", title: email }, h("span", { class: "local" }, email.slice(0, at)), h("span", { class: "domain" }, email.slice(at)));
}

function isTimestamp(v: unknown): v is Timestamp {
  return typeof v === "object" && v !== null && "toDate" in v && typeof v.toDate === "function";
}

main().catch((err: unknown) => {
  const status = document.querySelector<HTMLElement>("[data-status]");
  if (status) new Status(status).error("unavailable", `The console could not start: ${err instanceof Error ? err.message : String(err)}`);
  console.error(err);
});
