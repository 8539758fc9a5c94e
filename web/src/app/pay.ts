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

/** How many smallest units a currency's major unit has: 100 for EUR, 1 for JPY. */
export function minorUnits(currency: string): number {
  const f = new Intl.NumberFormat(undefined, { style: "currency", currency: currency.toUpperCase() });
  return 10 ** (f.resolvedOptions().maximumFractionDigits ?? 2);
}

/** An amount in the currency's smallest unit, as the buyer reads it: "€12.50". */
export function money(amount: number, currency: string, locale?: string): string {
  return new Intl.NumberFormat(locale, { style: "currency", currency: currency.toUpperCase() }).format(amount / minorUnits(currency));
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
