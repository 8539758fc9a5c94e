import { describe, expect, it } from "vitest";
import { minorUnits, money, paymentState, paymentWords, priceCategories, priceRange, rowsWords, seatPrice, totalOf, type Price } from "../src/app/pay";

const price: Price = { amount: 1250, currency: "eur", rows: { A: 1500, B: 1500 } };

describe("prices", () => {
  it("charges a row's own amount, else the screening's", () => {
    expect(seatPrice(price, "A3")).toBe(1500);
    expect(seatPrice(price, "B12")).toBe(1500);
    expect(seatPrice(price, "C1")).toBe(1250);
    expect(seatPrice({ amount: 900, currency: "eur" }, "A1")).toBe(900);
  });
  it("adds up seats", () => {
    expect(totalOf(price, ["A1", "C1", "C2"])).toBe(4000);
    expect(totalOf(price, [])).toBe(0);
  });
  it("knows each currency's smallest unit", () => {
    expect(minorUnits("eur")).toBe(100);
    expect(minorUnits("JPY")).toBe(1);
  });
  it("writes amounts in the currency's own units", () => {
    expect(money(1250, "eur", "en")).toBe("€12.50");
    expect(money(500, "jpy", "en")).toBe("¥500");
    expect(money(1250, "eur", "de")).toMatch(/^12,50\s€$/);
  });
});

describe("payment states", () => {
  it("shows an open payment as paying", () => {
    expect(paymentState({ status: "open" })).toBe("paying");
    expect(paymentState({ status: "paid" })).toBe("paid");
    expect(paymentState({ status: "refunded" })).toBe("refunded");
    expect(paymentState({ status: "expired" })).toBe("expired");
  });
  it("says why a payment was refunded", () => {
    const p = { holdId: "h", amount: 2500, currency: "eur", status: "refunded" as const };
    expect(paymentWords({ ...p, refundReason: "seats_lost" }, "en")).toContain("had gone to someone else");
    expect(paymentWords({ ...p, refundReason: "released" }, "en")).toContain("after you let the seats go");
    // CONTRACT §10a: a revoked pass, a closed sale, the seat cap.
    expect(paymentWords({ ...p, refundReason: "revoked" }, "en")).toBe("Your payment of €25.00 came after the box office ended your pass, so it was refunded in full.");
    expect(paymentWords({ ...p, refundReason: "sale_closed" }, "en")).toBe("Your payment of €25.00 came after the sale closed, so it was refunded in full.");
    expect(paymentWords({ ...p, refundReason: "seat_limit" }, "en")).toBe(
      "Your payment of €25.00 came after your hold ran out, and booking it would have taken you past the sale's seat limit, so it was refunded in full.",
    );
    expect(paymentWords({ ...p, status: "paid", lateAccepted: true }, "en")).toContain("still free");
    expect(paymentWords({ ...p, status: "paid" }, "en")).toBe("Paid €25.00. Your seats are booked.");
  });
});

describe("price categories (issue #50.3)", () => {
  const hall = ["A", "B", "C", "D", "E"];
  it("each amount with its rows, dearest first", () => {
    expect(priceCategories({ amount: 900, currency: "eur", rows: { A: 1500, B: 1500, Z: 2000 } }, hall)).toEqual([
      { amount: 1500, rows: ["A", "B"], cat: 0 },
      { amount: 900, rows: ["C", "D", "E"], cat: 1 },
    ]);
    expect(priceCategories({ amount: 1250, currency: "eur" }, hall)).toEqual([{ amount: 1250, rows: hall, cat: 0 }]);
  });
  it("the range of a hall's prices", () => {
    expect(priceRange({ amount: 900, currency: "eur", rows: { A: 1500 } }, hall)).toEqual([900, 1500]);
    expect(priceRange({ amount: 900, currency: "eur", rows: { A: 1500 } }, ["B"])).toEqual([900, 900]);
  });
  it("rows in words, spans of the hall's order", () => {
    expect(rowsWords(["A", "B"], hall)).toBe("rows A–B");
    expect(rowsWords(["C"], hall)).toBe("row C");
    expect(rowsWords(["A", "B", "E"], hall)).toBe("rows A–B and E");
    expect(rowsWords(["A", "C", "E"], hall)).toBe("rows A, C and E");
  });
});
