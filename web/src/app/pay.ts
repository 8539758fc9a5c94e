/**
 * Paying for seats (CONTRACT §10), the app's pure part: a screening's price,
 * what seats cost, amounts in the buyer's words, and the payment's state as
 * the page shows it (`data-payment-state`) from `payments/{holdId}`.
 */

/** `screenings/{id}.price`: amounts in the currency's smallest unit (1250 is 12.50 EUR). */
export interface Price {
  amount: number;
  currency: string;
  /** A row's own amount, by row label. */
  rows?: Record<string, number>;
  payHoldSeconds?: number;
}

/** A payment record as its user reads it (`payments/{holdId}`). */
export interface PaymentDoc {
  holdId: string;
  seats?: string[];
  amount: number;
  currency: string;
  status: "open" | "paid" | "expired" | "refunded";
  bookingId?: string;
  refundReason?: string;
  lateAccepted?: boolean;
}

/** `data-payment-state`: the payment as the buyer follows it. */
export type PaymentState = "paying" | "paid" | "refunded" | "expired";

export function paymentState(p: Pick<PaymentDoc, "status">): PaymentState {
  return p.status === "open" ? "paying" : p.status;
}

/** The price of one seat: its row's amount, or the screening's. */
export function seatPrice(price: Price, seat: string): number {
  const row = seat.replace(/\d.*$/, "");
  return price.rows?.[row] ?? price.amount;
}

/** The price of seats. */
export function totalOf(price: Price, seats: readonly string[]): number {
  return seats.reduce((sum, s) => sum + seatPrice(price, s), 0);
}

/**
 * A currency's formatter, made once per locale and currency: making one
 * costs about a thousand times what formatting does, and the map names the
 * price of every seat each time it paints (Lighthouse's blocking time,
 * issue #50).
 */
const formats = new Map<string, Intl.NumberFormat>();
function currencyFormat(currency: string, locale?: string): Intl.NumberFormat {
  const key = `${locale ?? ""}|${currency.toUpperCase()}`;
  let f = formats.get(key);
  if (!f) {
    f = new Intl.NumberFormat(locale, { style: "currency", currency: currency.toUpperCase() });
    formats.set(key, f);
  }
  return f;
}

const units = new Map<string, number>();

/** How many smallest units a currency's major unit has: 100 for EUR, 1 for JPY. */
export function minorUnits(currency: string): number {
  let n = units.get(currency);
  if (n === undefined) {
    n = 10 ** (currencyFormat(currency).resolvedOptions().maximumFractionDigits ?? 2);
    units.set(currency, n);
  }
  return n;
}

/** An amount in the currency's smallest unit, as the buyer reads it: "€12.50". */
export function money(amount: number, currency: string, locale?: string): string {
  return currencyFormat(currency, locale).format(amount / minorUnits(currency));
}

/** What the buyer reads about a payment. */
export function paymentWords(p: PaymentDoc, locale?: string): string {
  const amount = money(p.amount, p.currency, locale);
  switch (paymentState(p)) {
    case "paying":
      return `Waiting for your payment of ${amount}.`;
    case "paid":
      return p.lateAccepted
        ? `Paid ${amount}. Your hold had run out, but the seats were still free, so they are booked for you.`
        : `Paid ${amount}. Your seats are booked.`;
    case "refunded":
      switch (p.refundReason) {
        case "seats_lost":
          return `Your payment of ${amount} came after your hold ran out, and the seats had gone to someone else, so it was refunded in full.`;
        case "released":
          return `Your payment of ${amount} came after you let the seats go, so it was refunded in full.`;
        // CONTRACT §10a: booking it would have broken a sale rule.
        case "revoked":
          return `Your payment of ${amount} came after the box office ended your pass, so it was refunded in full.`;
        case "sale_closed":
          return `Your payment of ${amount} came after the sale closed, so it was refunded in full.`;
        case "seat_limit":
          return `Your payment of ${amount} came after your hold ran out, and booking it would have taken you past the sale's seat limit, so it was refunded in full.`;
        default:
          return `Your payment of ${amount} was refunded in full.`;
      }
    case "expired":
      return "The checkout ended without a payment, so nothing was charged and the seats were let go.";
  }
}

/** A price category of the hall: one amount, the rows at it (in hall order), and its colour's index (`data-cat`). */
export interface PriceCategory {
  amount: number;
  rows: string[];
  cat: number;
}

/**
 * The screening's price categories (issue #50.3): each amount the hall's
 * rows cost, dearest first, with its rows in hall order. A row of
 * `price.rows` that is not in the hall is left out.
 */
export function priceCategories(price: Price, hallRows: readonly string[]): PriceCategory[] {
  const byAmount = new Map<number, string[]>();
  for (const row of hallRows) {
    const amount = price.rows?.[row] ?? price.amount;
    const list = byAmount.get(amount) ?? [];
    list.push(row);
    byAmount.set(amount, list);
  }
  return [...byAmount.entries()].sort((a, b) => b[0] - a[0]).map(([amount, rows], cat) => ({ amount, rows, cat }));
}

/** The lowest and highest price of a seat in the hall. */
export function priceRange(price: Price, hallRows: readonly string[]): [number, number] {
  const amounts = priceCategories(price, hallRows).map((c) => c.amount);
  return amounts.length === 0 ? [price.amount, price.amount] : [Math.min(...amounts), Math.max(...amounts)];
}

/** Rows in words, consecutive ones of the hall as a span: "rows A–B", "row C", "rows A–B and E". */
export function rowsWords(rows: readonly string[], hallRows: readonly string[]): string {
  const at = new Set(rows);
  const spans: string[] = [];
  let start: string | undefined;
  let last: string | undefined;
  const close = () => {
    if (start !== undefined) spans.push(start === last ? start : `${start}–${last ?? ""}`);
    start = undefined;
  };
  for (const row of hallRows) {
    if (at.has(row)) {
      start ??= row;
      last = row;
    } else {
      close();
    }
  }
  close();
  const list = spans.length <= 1 ? spans.join("") : `${spans.slice(0, -1).join(", ")} and ${spans[spans.length - 1] ?? ""}`;
  return `${rows.length === 1 ? "row" : "rows"} ${list}`;
}
