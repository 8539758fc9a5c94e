/**
 * Every sale at a glance (`operate.html` without `?screening=`, operators
 * only): one row per screening that has a `sale`, live. The screenings come
 * from one query (`sale != null`), the states and numbers from the public
 * `sales` documents (one listener each), and a priced sale's takings from
 * a sum over its `saleStats` minutes (revenue − refunds, CONTRACT §10),
 * asked again when its sale document changes, at most every 20 s.
 */
import {
  type Firestore,
  type Timestamp,
  type Unsubscribe,
  collection,
  doc,
  getAggregateFromServer,
  onSnapshot,
  query,
  sum,
  where,
} from "firebase/firestore";
import { money } from "./pay";
import { $, h } from "./ui";
import { whenWords } from "./when";

export const STATE_WORDS: Record<string, string> = {
  scheduled: "Scheduled",
  open: "Open",
  paused: "Paused",
  soldout: "Sold out",
  closed: "Closed",
};

interface Screening {
  title?: string;
  startsAt?: Timestamp;
  sale?: { opensAt?: Timestamp } | null;
  price?: { currency?: string };
  timeZone?: string;
}

interface PublicSale {
  state: string;
  waiting: number;
  active: number;
  seatsLeft: number;
}

interface Row {
  screening: Screening;
  sale?: PublicSale | undefined;
  stop: Unsubscribe;
  tr: HTMLTableRowElement;
  takings?: number; // in the currency's smallest unit
  takingsAskedAt?: number;
  takingsTimer?: ReturnType<typeof setTimeout> | undefined;
}

/** Lists every sale into `[data-sales-list]` until the returned function is called. */
export function listSales(db: Firestore, onError: (what: string, code: string) => void): Unsubscribe {
  const rows = new Map<string, Row>();
  const body = $("#sales-rows");

  const cell = (name: string, label: string, ...children: (Node | string)[]) => h("td", { "data-cell": name, "data-label": label }, ...children);

  function paint(id: string, r: Row): void {
    const s = r.screening;
    const p = r.sale;
    const num = (v: number | undefined) => (v === undefined ? "–" : v.toLocaleString());
    const opensAt = s.sale?.opensAt?.toDate();
    const state = p?.state ?? "none";
    const currency = s.price?.currency;
    r.tr.dataset.state = state;
    r.tr.replaceChildren(
      h("th", { scope: "row", "data-cell": "screening" }, h("a", { href: `operate.html?screening=${encodeURIComponent(id)}` }, s.title ?? id), h("span", { class: "id muted" }, id)),
      cell("state", "State", h("span", { class: "badge state", "data-op-state": state }, p ? (STATE_WORDS[state] ?? state) : "Not published yet")),
      cell("opens", "Opens", opensAt ? h("time", { datetime: opensAt.toISOString() }, whenWords(opensAt.getTime(), s.timeZone)) : "–"),
      cell("waiting", "Waiting", num(p?.waiting)),
      cell("active", "Active passes", num(p?.active)),
      cell("seats-left", "Seats left", num(p?.seatsLeft)),
      cell("takings", "Takings", currency === undefined ? h("span", { class: "muted" }, "free") : r.takings === undefined ? "…" : money(r.takings, currency)),
    );
  }

  function order(): void {
    const opens = (r: Row) => r.screening.sale?.opensAt?.toMillis() ?? 0;
    const sorted = [...rows.values()].sort((a, b) => opens(b) - opens(a));
    body.replaceChildren(...sorted.map((r) => r.tr));
    $("#no-sales").hidden = rows.size > 0;
  }

  // Paid less refunded over the sale's minutes, summed by the server (a read per 1,000 minutes).
  function askTakings(id: string, r: Row): void {
    if (r.screening.price?.currency === undefined || r.takingsTimer !== undefined) return;
    const wait = r.takingsAskedAt === undefined ? 0 : Math.max(0, r.takingsAskedAt + 20_000 - Date.now());
    r.takingsTimer = setTimeout(() => {
      r.takingsAskedAt = Date.now();
      getAggregateFromServer(collection(db, "saleStats", id, "minutes"), { revenue: sum("revenue"), refunds: sum("refunds") })
        .then((agg) => {
          const { revenue, refunds } = agg.data();
          r.takings = revenue - refunds;
          if (rows.get(id) === r) paint(id, r);
        })
        .catch((err: unknown) => {
          onError(`the takings of ${id}`, typeof err === "object" && err !== null && "code" in err ? String(err.code) : String(err));
        })
        .finally(() => {
          r.takingsTimer = undefined;
        });
    }, wait);
  }

  const stopScreenings = onSnapshot(
    query(collection(db, "screenings"), where("sale", "!=", null)),
    (snap) => {
      const seen = new Set<string>();
      for (const d of snap.docs) {
        seen.add(d.id);
        const screening = d.data() as Screening;
        let r = rows.get(d.id);
        if (!r) {
          const id = d.id;
          const row: Row = { screening, tr: h("tr", { "data-sale-row": id }), stop: () => undefined };
          row.stop = onSnapshot(
            doc(db, "sales", id),
            (s) => {
              row.sale = s.data() as PublicSale | undefined;
              paint(id, row);
              askTakings(id, row);
            },
            (err) => {
              onError(`the sale of ${id}`, err.code);
            },
          );
          rows.set(id, row);
          r = row;
        }
        r.screening = screening;
        paint(d.id, r);
        askTakings(d.id, r);
      }
      for (const [id, r] of rows) {
        if (seen.has(id)) continue;
        r.stop();
        clearTimeout(r.takingsTimer);
        rows.delete(id);
      }
      order();
    },
    (err) => {
      onError("the screenings", err.code);
    },
  );

  return () => {
    stopScreenings();
    for (const r of rows.values()) {
      r.stop();
      clearTimeout(r.takingsTimer);
    }
    rows.clear();
  };
}
