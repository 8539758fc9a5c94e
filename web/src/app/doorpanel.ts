/**
 * The console's door panel (CONTRACT §13), in `operate.html?screening=ID`:
 * live, how many are in, how many tickets are expected, the no-shows so
 * far, conflicts by gate, and arrivals per minute as a chart (chart.ts);
 * and the door's form (opens at, gates, re-entry), saved through
 * OperateSale's `configure-door`.
 *
 * It reads `checkins` and `screenings/{id}/scans` of the screening with
 * listeners (a read per entry and per scan, once, then only changes), and
 * counts the valid tickets with a count query (a read per 1,000 tickets)
 * when it opens and every 30 s: tickets change only when someone books,
 * cancels or transfers.
 */
import { type Firestore, type Timestamp, type Unsubscribe, collection, doc, getCountFromServer, onSnapshot, query, where } from "firebase/firestore";
import type { Api, DoorFields } from "./api";
import { ApiError } from "./api";
import { drawChart, zoneOf } from "./chart";
import { whenWords } from "./when";
import { $, $as, type Status, h, runAction } from "./ui";

interface ScanDoc {
  gate: string;
  result: string;
  direction?: string;
  at?: Timestamp | null;
  scannedAt?: Timestamp;
}

/** What the panel shows, from the entries and the scans. */
export interface DoorFigures {
  inNow: number;
  /** Tickets that went in at least once. */
  arrived: number;
  byGate: Map<string, { admitted: number; conflicts: number; refused: number }>;
  conflicts: number;
  /** Admissions per minute: each minute's start (ms) and count, oldest first, without gaps. */
  perMinute: { starts: number[]; counts: number[] };
}

/** Sums the scans and entries of a screening into the panel's figures. */
export function doorFigures(entries: Iterable<{ state: string }>, scans: Iterable<ScanDoc>, gates: readonly string[] = []): DoorFigures {
  let inNow = 0;
  let arrived = 0;
  for (const e of entries) {
    arrived++;
    if (e.state === "in") inNow++;
  }
  const byGate = new Map<string, { admitted: number; conflicts: number; refused: number }>();
  for (const g of gates) byGate.set(g, { admitted: 0, conflicts: 0, refused: 0 });
  const minutes = new Map<number, number>();
  let conflicts = 0;
  for (const s of scans) {
    const g = byGate.get(s.gate) ?? { admitted: 0, conflicts: 0, refused: 0 };
    byGate.set(s.gate, g);
    if (s.result === "admitted") {
      g.admitted++;
      const t = (s.at ?? s.scannedAt)?.toMillis();
      if (t !== undefined) {
        const m = Math.floor(t / 60_000) * 60_000;
        minutes.set(m, (minutes.get(m) ?? 0) + 1);
      }
    } else if (s.result === "conflict") {
      g.conflicts++;
      conflicts++;
    } else if (s.result !== "exited") {
      g.refused++;
    }
  }
  const keys = [...minutes.keys()].sort((a, b) => a - b);
  const starts: number[] = [];
  const counts: number[] = [];
  const first = keys[0];
  const last = keys[keys.length - 1];
  if (first !== undefined && last !== undefined) {
    for (let m = first; m <= last; m += 60_000) {
      starts.push(m);
      counts.push(minutes.get(m) ?? 0);
    }
  }
  return { inNow, arrived, byGate, conflicts, perMinute: { starts, counts } };
}

const GATE = /^[A-Za-z0-9_-]{1,32}$/;

/** The form's problems, by field, as OperateSale would refuse them; empty when it may be sent. */
export function doorProblems(v: { opensAt: string; gates: string }): Partial<Record<"opensAt" | "gates", string>> {
  const out: Partial<Record<"opensAt" | "gates", string>> = {};
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(v.opensAt.trim()) || Number.isNaN(Date.parse(v.opensAt.trim()))) {
    out.opensAt = `door.opensAt must be an RFC 3339 time such as 2026-11-28T18:30:00Z, not "${v.opensAt.trim()}"`;
  }
  const gates = gateList(v.gates);
  if (gates.length === 0) out.gates = "door.gates must name at least one gate";
  else if (gates.some((g) => !GATE.test(g))) out.gates = `door.gates: "${gates.find((g) => !GATE.test(g)) ?? ""}" is not a gate name (letters, digits, - and _, up to 32)`;
  else if (new Set(gates).size !== gates.length) out.gates = "door.gates names a gate twice";
  return out;
}

/** "A, B ,C" as ["A", "B", "C"]. */
export function gateList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((g) => g.trim())
    .filter((g) => g !== "");
}

/** Mounts the panel on `#door-panel`; what it returns closes its listeners. */
export function mountDoorPanel(db: Firestore, api: Api, screeningId: string, status: Status): Unsubscribe {
  const panel = $("#door-panel");
  panel.hidden = false;
  const form = $as(HTMLFormElement, "#door-form", panel);
  const field = (name: string) => $as(HTMLInputElement, `[data-door-field="${name}"]`, form);
  const save = $as(HTMLButtonElement, '[data-action="save-door"]', form);

  let door: { opensAt: Timestamp; gates: string[]; reentry?: boolean } | undefined;
  let startsAtMs: number | undefined;
  let expected: number | undefined;
  const entries = new Map<string, { state: string }>();
  const scans = new Map<string, ScanDoc>();
  const dirty = new Set<string>();

  function fillForm(): void {
    if (!dirty.has("opensAt")) field("opensAt").value = door ? door.opensAt.toDate().toISOString().replace(".000Z", "Z") : "";
    if (!dirty.has("gates")) field("gates").value = door ? door.gates.join(", ") : "";
    if (!dirty.has("reentry")) field("reentry").checked = door?.reentry === true;
  }
  for (const name of ["opensAt", "gates", "reentry"]) field(name).addEventListener("input", () => dirty.add(name));

  function paint(): void {
    const f = doorFigures(entries.values(), scans.values(), door?.gates ?? []);
    const set = (sel: string, v: number | undefined) => {
      const el = $(sel, panel);
      el.textContent = v === undefined ? "–" : v.toLocaleString();
      el.dataset.value = v === undefined ? "" : String(v);
    };
    set("[data-door-in]", f.inNow);
    set("[data-door-expected]", expected);
    set("[data-door-noshows]", expected === undefined ? undefined : Math.max(0, expected - f.arrived));
    set("[data-door-conflicts]", f.conflicts);
    const started = startsAtMs !== undefined && Date.now() >= startsAtMs;
    $("[data-door-noshows-note]", panel).textContent = started ? "the screening has started" : "not in yet; the screening has not started";
    $("#door-state", panel).textContent = !door
      ? "No door yet: every scan is refused (door closed). Set one below."
      : `Gates ${door.gates.join(", ")}; ${Date.now() < door.opensAt.toMillis() ? `opens ${whenWords(door.opensAt.toMillis())}` : "open"}; ${door.reentry ? "re-entry allowed" : "no re-entry"}.`;
    const rows = [...f.byGate.entries()].sort(([a], [b]) => a.localeCompare(b));
    $("#door-gates", panel).replaceChildren(
      ...rows.map(([g, c]) =>
        h(
          "tr",
          { "data-door-gate": g, "data-door-gate-in": String(c.admitted), "data-door-gate-conflicts": String(c.conflicts) },
          h("th", { scope: "row" }, g),
          h("td", {}, c.admitted.toLocaleString()),
          h("td", { class: c.conflicts > 0 ? "warn" : "" }, c.conflicts.toLocaleString()),
          h("td", {}, c.refused.toLocaleString()),
        ),
      ),
    );
    $("#door-no-gates", panel).hidden = rows.length > 0;
    $("[data-door-zone]", panel).textContent = zoneOf(new Date(f.perMinute.starts.at(-1) ?? Date.now()));
    drawChart($('[data-chart="arrivals"] .plot', panel), {
      label: "Arrivals per minute, all gates",
      kind: "bars",
      starts: f.perMinute.starts,
      series: [{ name: "admitted", cls: "s-admissions", values: f.perMinute.counts }],
    });
  }

  async function count(): Promise<void> {
    try {
      const c = await getCountFromServer(query(collection(db, "tickets"), where("screeningId", "==", screeningId), where("status", "==", "valid")));
      expected = c.data().count;
      paint();
    } catch {
      // a figure only: the next count tries again
    }
  }

  // Said in the panel, not the status line: the sale's console works on without its door.
  const fail = (what: string) => (err: { code: string }) => {
    $("#door-read-error", panel).textContent = `${what} could not be read (${err.code}).`;
  };
  const stops: Unsubscribe[] = [
    onSnapshot(
      doc(db, "screenings", screeningId),
      (snap) => {
        const d = snap.data() as { door?: typeof door; startsAt?: Timestamp } | undefined;
        door = d?.door ?? undefined;
        startsAtMs = d?.startsAt?.toMillis();
        fillForm();
        paint();
      },
      fail("The door"),
    ),
    onSnapshot(
      query(collection(db, "checkins"), where("screeningId", "==", screeningId)),
      (snap) => {
        for (const c of snap.docChanges()) {
          if (c.type === "removed") entries.delete(c.doc.id);
          else entries.set(c.doc.id, { state: String(c.doc.get("state")) });
        }
        paint();
      },
      fail("The entries"),
    ),
    onSnapshot(
      collection(db, "screenings", screeningId, "scans"),
      (snap) => {
        for (const c of snap.docChanges()) {
          if (c.type === "removed") scans.delete(c.doc.id);
          else scans.set(c.doc.id, c.doc.data({ serverTimestamps: "estimate" }) as ScanDoc);
        }
        paint();
      },
      fail("The scans"),
    ),
  ];
  void count();
  const counting = setInterval(() => void count(), 30_000);

  const flag = (name: "opensAt" | "gates", text: string) => {
    const p = $(`[data-door-error="${name}"]`, form);
    p.textContent = text;
    p.hidden = text === "";
    field(name).setAttribute("aria-invalid", String(text !== ""));
  };
  const onSubmit = (ev: SubmitEvent) => {
    ev.preventDefault();
    const values = { opensAt: field("opensAt").value, gates: field("gates").value };
    const problems = doorProblems(values);
    flag("opensAt", problems.opensAt ?? "");
    flag("gates", problems.gates ?? "");
    if (problems.opensAt || problems.gates) {
      status.error("invalid_argument", "Nothing saved: the door's form needs fixing.");
      return;
    }
    const fields: DoorFields = { opensAt: values.opensAt.trim(), gates: gateList(values.gates), reentry: field("reentry").checked };
    void runAction(
      status,
      (on) => (save.disabled = on),
      "Saving the door…",
      async () => {
        try {
          await api.configureDoor(screeningId, fields, field("reason").value.trim());
        } catch (err) {
          if (err instanceof ApiError && err.status === 400) {
            const f = /opensAt/.test(err.message) ? "opensAt" : /gate/.test(err.message) ? "gates" : undefined;
            if (f) flag(f, err.message);
          }
          throw err;
        }
        dirty.clear();
        field("reason").value = "";
        return `Saved: the door opens ${whenWords(Date.parse(fields.opensAt ?? ""))} at gates ${(fields.gates ?? []).join(", ")}.`;
      },
      (err) => (err instanceof ApiError ? { code: err.code, message: err.message } : { code: "unavailable", message: String(err) }),
    );
  };
  form.addEventListener("submit", onSubmit);

  return () => {
    for (const stop of stops) stop();
    clearInterval(counting);
    form.removeEventListener("submit", onSubmit);
    panel.hidden = true;
  };
}
