// Paying for seats in the browser (CONTRACT §10): on a priced screening the
// hold shows its price and a Pay button (`data-action="pay"`) that opens the
// checkout page (locally, the stand-in for Stripe's hosted page, whose Pay
// and Cancel send Stripe's signed events to StripeWebhook); back in the app,
// `data-payment-state` follows `payments/{holdId}` live. Judged on the
// data-* hooks and on what Firestore holds afterwards.
import { type Page } from "@playwright/test";
import { type Price, confirmedBookings, createScreening, createUser, env, expect, getDoc, patchDoc, signIn, test } from "./bundle";

const seat = (page: Page, id: string) => page.locator(`[data-seat="${id}"]`);
const action = (page: Page, name: string) => page.locator(`[data-action="${name}"]`);
const status = (page: Page) => page.locator("[data-status]");
const price: Price = { amount: 1250, currency: "eur", rows: { A: 1500 } };

/** A signed-in user on a new priced screening who has held seats: the page, the screening and the hold. */
async function held(open: () => Promise<Page>, seats: string[], width = 1280): Promise<{ page: Page; screening: string; holdId: string; uid: string }> {
  const screening = await createScreening({ price });
  const user = await createUser("payer");
  const page = await open();
  await page.setViewportSize({ width, height: 860 });
  await page.goto(`/?screening=${screening}`);
  await signIn(page, user);
  for (const s of seats) await seat(page, s).click();
  await expect(action(page, "book"), "a priced screening is held, then paid").toBeHidden();
  await action(page, "hold").click();
  await expect(status(page)).toHaveAttribute("data-code", "ok");
  await expect(status(page)).toContainText("Pay to book");
  const hold = page.locator("[data-hold]");
  await expect(hold).toHaveCount(1);
  const holdId = (await hold.getAttribute("data-hold")) ?? "";
  return { page, screening, holdId, uid: user.uid };
}

/** Presses Pay in the app, and lands on the checkout page. */
async function toCheckout(page: Page, total: string): Promise<void> {
  const pay = page.locator('[data-hold] [data-action="pay"]');
  await expect(pay).toHaveText(`Pay ${total}`);
  await expect(page.locator('[data-hold] [data-action="confirm"]')).toBeHidden();
  await pay.click();
  await page.waitForURL((u) => u.pathname === "/checkout" && u.searchParams.get("hold") !== null);
  await expect(page.locator("[data-checkout-total]")).toBeVisible();
}

test("hold, pay on the checkout page, and come back to the seats booked", async ({ open }) => {
  const { page, screening, holdId, uid } = await held(open, ["A1", "C3"]);
  await expect(page.locator("[data-hold] [data-price]")).toHaveText("€27.50"); // 15.00 in row A, 12.50 elsewhere
  await toCheckout(page, "€27.50");
  await expect(page.locator("[data-checkout-line]")).toHaveCount(2);
  await expect(page.locator("[data-checkout-total]")).toHaveText("27.50 EUR");
  await page.locator('[data-checkout="pay"]').click();

  await page.waitForURL((u) => u.href.startsWith(env.web) && !u.search.includes("checkout="));
  const paid = page.locator(`[data-payment="${holdId}"]`);
  await expect(paid).toHaveAttribute("data-payment-state", "paid");
  await expect(paid).toContainText("Paid €27.50");
  await expect(seat(page, "A1")).toHaveAttribute("data-state", "mine-booked");
  await expect(seat(page, "C3")).toHaveAttribute("data-state", "mine-booked");
  await expect(page.locator("[data-hold]")).toHaveCount(0);
  await expect(page.locator("[data-booking]")).toHaveCount(1);

  const stored = await confirmedBookings(screening);
  expect([...stored.values()]).toEqual([{ uid, seats: ["A1", "C3"] }]);
  const payment = await getDoc(`payments/${holdId}`);
  expect(payment?.fields.status?.stringValue).toBe("paid");
  expect(payment?.fields.amount?.integerValue).toBe("2750");
  expect(payment?.fields.bookingId?.stringValue).toBe([...stored.keys()][0]);
});

test("cancel on the checkout page lets the seats go and charges nothing", async ({ open }) => {
  const { page, screening, holdId } = await held(open, ["D4", "D5"]);
  await toCheckout(page, "€25.00");
  await page.locator('[data-checkout="cancel"]').click();

  await page.waitForURL((u) => u.href.startsWith(env.web));
  await expect(page.locator(`[data-payment="${holdId}"]`)).toHaveAttribute("data-payment-state", "expired");
  await expect(status(page)).toContainText("nothing was charged");
  await expect(seat(page, "D4")).toHaveAttribute("data-state", "free");
  await expect(page.locator("[data-hold]")).toHaveCount(0);
  expect((await getDoc(`holds/${holdId}`))?.fields.status?.stringValue).toBe("released");
  expect(await confirmedBookings(screening)).toEqual(new Map());
});

/** Moves a paying hold's end to `at` (default: it ended 5 s ago), as its payHoldSeconds would: on the hold and its seats. */
async function lapse(screening: string, holdId: string, seats: string[], at = new Date(Date.now() - 5_000)): Promise<void> {
  const end = { timestampValue: at.toISOString() };
  await patchDoc(`holds/${holdId}`, { heldUntil: end });
  for (const s of seats) await patchDoc(`screenings/${screening}/seats/${s}`, { heldUntil: end });
}

/**
 * Presses Pay on the checkout page, and ends the hold while the payment is
 * on its way (the page offers no Pay once the hold has ended, but a buyer
 * who paid in its last second is paid for after it).
 */
async function payAsItLapses(page: Page, lapsing: () => Promise<void>): Promise<void> {
  await page.route("**/checkout/pay", async (route) => {
    await lapsing();
    await route.continue();
  });
  await page.locator('[data-checkout="pay"]').click();
}

test("a payment that completes after the hold lapsed books the seats late while they are free", async ({ open }) => {
  const { page, screening, holdId, uid } = await held(open, ["E7", "E8"]);
  await toCheckout(page, "€25.00");
  await payAsItLapses(page, () => lapse(screening, holdId, ["E7", "E8"]));

  await page.waitForURL((u) => u.href.startsWith(env.web));
  const p = page.locator(`[data-payment="${holdId}"]`);
  await expect(p).toHaveAttribute("data-payment-state", "paid");
  await expect(p).toContainText("still free");
  await expect(seat(page, "E7")).toHaveAttribute("data-state", "mine-booked");
  expect([...(await confirmedBookings(screening)).values()]).toEqual([{ uid, seats: ["E7", "E8"] }]);
  expect((await getDoc(`payments/${holdId}`))?.fields.lateAccepted).toEqual({ booleanValue: true });
});

test("a payment that completes after the hold lapsed and a seat was taken is refunded in full", async ({ open }) => {
  const { page, screening, holdId } = await held(open, ["F1", "F2"]);
  await toCheckout(page, "€25.00");
  await payAsItLapses(page, async () => {
    await lapse(screening, holdId, ["F1", "F2"]);
    // Someone else holds F2 meanwhile.
    const other = await createUser("other");
    const res = await fetch(`${env.functions}/HoldSeats`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${other.idToken}` },
      body: JSON.stringify({ screeningId: screening, seats: ["F2"], requestId: "other-f2" }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
  });

  await page.waitForURL((u) => u.href.startsWith(env.web));
  const p = page.locator(`[data-payment="${holdId}"]`);
  await expect(p).toHaveAttribute("data-payment-state", "refunded");
  await expect(p).toContainText("refunded in full");
  await expect(seat(page, "F1")).toHaveAttribute("data-state", "free");
  await expect(seat(page, "F2")).toHaveAttribute("data-state", "held");
  expect(await confirmedBookings(screening)).toEqual(new Map());
  const payment = await getDoc(`payments/${holdId}`);
  expect(payment?.fields.refundReason?.stringValue).toBe("seats_lost");
});

test("a hold that lapses: at 0:00 it shows as ran out, Pay and More time go, and its seats can be chosen again", async ({ open }) => {
  const screening = await createScreening({ price });
  const user = await createUser("payer");
  const page = await open();
  await page.goto(`/?screening=${screening}&holdSeconds=5`);
  await signIn(page, user);
  await seat(page, "C4").click();
  await action(page, "hold").click();
  await expect(status(page)).toHaveAttribute("data-code", "ok");
  const hold = page.locator("[data-hold]");
  await expect(hold.locator('[data-action="pay"]')).toBeVisible();
  await expect(hold.locator('[data-action="extend"]')).toBeVisible();

  await expect(hold.locator("[data-countdown]")).toHaveText("0:00", { timeout: 15_000 });
  await expect(hold.locator("button:visible"), "nothing is offered on a hold that has ended").toHaveCount(0);
  await expect(hold).toHaveAttribute("data-hold-state", "lapsed");
  await expect(hold).toContainText("Your hold ran out: C4 is free for anyone again.");
  await expect(status(page), "the status line no longer says the seat is yours").toHaveAttribute("data-code", "hold_expired");
  await expect(seat(page, "C4")).toHaveAttribute("data-state", "free");
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: 860 });
    await page.screenshot({ path: `test-results/screenshots/hold-lapsed-${String(width)}.png`, fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 860 });

  // Offered again: the seat is chosen and held anew.
  await seat(page, "C4").click();
  await action(page, "hold").click();
  await expect(status(page)).toHaveAttribute("data-code", "ok");
  await expect(seat(page, "C4")).toHaveAttribute("data-state", "mine-held");
  await expect(page.locator('[data-hold][data-hold-state="held"] [data-action="pay"]')).toBeVisible();
});

// The local checkout page, as a buyer sees it (it stands in for Stripe's hosted page).
const checkout = {
  message: (page: Page) => page.locator("[data-checkout-message]"),
  back: (page: Page) => page.locator("[data-checkout-back]"),
  pay: (page: Page) => page.locator('[data-checkout="pay"]'),
  countdown: (page: Page) => page.locator("[data-checkout-countdown]"),
  state: (page: Page) => page.locator("[data-checkout-state]"),
};

/** Screenshots of the checkout page at 1280 and 360 px, for a person to look at. */
async function shootCheckout(page: Page, name: string): Promise<void> {
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: 800 });
    await page.screenshot({ path: `test-results/screenshots/checkout-${name}-${String(width)}.png`, fullPage: true });
    expect(await page.evaluate(() => document.documentElement.scrollWidth), `no sideways scrolling at ${String(width)} px`).toBeLessThanOrEqual(width);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

test("the checkout page lists the seats in order, not the hold's id, and counts down to the hold's end", async ({ open }) => {
  const { page, holdId } = await held(open, ["E10", "E9"]);
  await toCheckout(page, "€25.00");
  await expect(page.locator("[data-checkout-line] td:first-child")).toHaveText(["Seat E9", "Seat E10"]);
  await expect(page.locator("body")).not.toContainText(holdId);
  // payHoldSeconds defaults to 600: the hold ends in 10 minutes.
  await expect(checkout.countdown(page)).toHaveText(/^(10:00|9:[0-5]\d)$/);
  const first = await checkout.countdown(page).textContent();
  await expect(checkout.countdown(page), "it runs").not.toHaveText(first ?? "");
  await expect(checkout.pay(page)).toBeEnabled();
  await expect(checkout.state(page)).toHaveAttribute("data-checkout-state", "open");
  await shootCheckout(page, "open");
});

test("at the hold's end the checkout page takes Pay away, says so once and leads back to the shop", async ({ open }) => {
  const { page, screening, holdId } = await held(open, ["D4", "D5"]);
  await toCheckout(page, "€25.00");
  // The hold ends in a few seconds (as a short payHoldSeconds would have it); the page follows it.
  await lapse(screening, holdId, ["D4", "D5"], new Date(Date.now() + 6_000));
  await expect(checkout.countdown(page)).toHaveText(/^0:0\d$/, { timeout: 15_000 });
  await expect(checkout.state(page)).toHaveAttribute("data-checkout-state", "lapsed", { timeout: 15_000 });
  await expect(checkout.pay(page)).toBeHidden();
  await expect(checkout.message(page)).toHaveCount(1);
  await expect(checkout.message(page)).toHaveText("Your hold on these seats ran out, so this checkout can no longer be paid. Nothing was charged.");
  await shootCheckout(page, "lapsed");
  await checkout.back(page).click();
  await page.waitForURL((u) => u.href.startsWith(env.web) && u.searchParams.get("screening") === screening);
  await expect(seat(page, "D4")).toHaveAttribute("data-state", "free");
});

test("a checkout session that firelock expired shows as expired on the open page, and a late Pay says it once, with a way back", async ({ open }) => {
  const { page, screening, holdId } = await held(open, ["B7"]);
  await toCheckout(page, "€12.50");
  const url = page.url();
  // A stale page presses Pay after the session expired (firelock's sweep
  // marks the payment expired as it expires the session at Stripe): the
  // page's own look-ups are held back, so only the press finds out.
  await page.route("**/checkout/state*", (route) => route.abort());
  await patchDoc(`payments/${holdId}`, { status: { stringValue: "expired" } });
  await checkout.pay(page).click();
  await expect(checkout.state(page)).toHaveAttribute("data-checkout-state", "expired");
  await expect(page.locator('[role="status"], [role="alert"]'), "one message, not two").toHaveCount(1);
  await expect(checkout.message(page)).toHaveText("This checkout has expired, so it can no longer be paid. Nothing was charged.");
  await expect(checkout.pay(page)).toHaveCount(0);
  const back = new URL((await checkout.back(page).getAttribute("href")) ?? "", "http://invalid");
  expect([back.origin, back.search], "back to the shop, with no outcome to claim").toEqual([new URL(env.web).origin, `?screening=${screening}`]);
  await shootCheckout(page, "expired");

  // An open page notices by itself.
  await page.unroute("**/checkout/state*");
  await page.goto(url);
  await expect(checkout.state(page)).toHaveAttribute("data-checkout-state", "expired");
  const other = await held(open, ["B8"]);
  await toCheckout(other.page, "€12.50");
  await patchDoc(`payments/${other.holdId}`, { status: { stringValue: "expired" } });
  await expect(checkout.state(other.page)).toHaveAttribute("data-checkout-state", "expired");
  await expect(checkout.pay(other.page)).toHaveCount(0);
  await expect(checkout.message(other.page)).toHaveCount(1);
});

test("a paid checkout page says so once and leads back to the shop", async ({ open }) => {
  const { page, screening, holdId } = await held(open, ["C9", "C10"]);
  await toCheckout(page, "€25.00");
  const url = page.url();
  await checkout.pay(page).click();
  await page.waitForURL((u) => u.href.startsWith(env.web));
  await expect(page.locator(`[data-payment="${holdId}"]`)).toHaveAttribute("data-payment-state", "paid");
  await page.goto(url);
  await expect(checkout.state(page)).toHaveAttribute("data-checkout-state", "paid");
  await expect(checkout.message(page)).toHaveText("This checkout is paid: your seats are booked.");
  await expect(checkout.pay(page)).toHaveCount(0);
  await expect(checkout.countdown(page)).toHaveCount(0);
  await shootCheckout(page, "paid");
  await checkout.back(page).click();
  await page.waitForURL((u) => u.href.startsWith(env.web) && u.searchParams.get("screening") === screening);
  await expect(seat(page, "C9")).toHaveAttribute("data-state", "mine-booked");
});

test("paying on a phone: the hold's price, Pay and the payment's state fit 360 px", async ({ open }) => {
  const { page, holdId } = await held(open, ["B2"], 360);
  const pay = page.locator('[data-hold] [data-action="pay"]');
  await pay.scrollIntoViewIfNeeded();
  const box = await pay.boundingBox();
  expect(box && box.x >= 0 && box.x + box.width <= 360, `Pay at ${JSON.stringify(box)}`).toBe(true);
  await page.screenshot({ path: "test-results/screenshots/pay-hold-360.png", fullPage: true });
  await toCheckout(page, "€12.50");
  await page.screenshot({ path: "test-results/screenshots/pay-checkout-360.png", fullPage: true });
  await page.locator('[data-checkout="pay"]').click();
  await page.waitForURL((u) => u.href.startsWith(env.web));
  const p = page.locator(`[data-payment="${holdId}"]`);
  await expect(p).toHaveAttribute("data-payment-state", "paid");
  await p.scrollIntoViewIfNeeded();
  const pbox = await p.boundingBox();
  expect(pbox && pbox.x >= 0 && pbox.x + pbox.width <= 360, `the payment at ${JSON.stringify(pbox)}`).toBe(true);
  expect(await page.evaluate(() => document.documentElement.scrollWidth), "no sideways scrolling").toBeLessThanOrEqual(360);
  await page.screenshot({ path: "test-results/screenshots/pay-paid-360.png", fullPage: true });
});
