import { type Page } from "@playwright/test";
import { createScreening, createUser, env, expect, patchDoc, runAdmitter, signIn, test } from "./bundle";

// On a phone the hall is drawn as it is (issue #50.2): a row is one row, its
// seats a finger's size (24 px or more) at the first zoom, and the hall pans
// in its own box (the page never scrolls sideways) and zooms with + and −.
// Until #50 the 20-seat rows were folded in two blocks, one above the other.
for (const width of [360, 390]) {
  test(`the 20-seat hall is drawn row by row on a ${String(width)}-px phone, and pans and zooms`, async ({ open }) => {
    const screening = await createScreening({ rows: ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"], seatsPerRow: 20, title: "Metropolis" });
    const user = await createUser("phone");
    const p = await open();
    await p.setViewportSize({ width, height: 780 });
    await p.goto(`/?screening=${screening}`);
    await signIn(p, user);
    await expect(p.locator("[data-seat]")).toHaveCount(200);
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, "the page scrolls sideways").toBe(0);
    const a1 = await p.locator('[data-seat="A1"]').boundingBox();
    for (const seat of ["A1", "A10", "A11", "A20", "J20"]) {
      const el = p.locator(`[data-seat="${seat}"]`);
      await el.scrollIntoViewIfNeeded();
      const box = await el.boundingBox();
      expect(box, seat).not.toBeNull();
      if (!box || !a1) continue;
      if (seat.startsWith("A")) expect(Math.abs(box.y - a1.y), `${seat} is not on row A's line`).toBeLessThan(2);
      expect(box.x, `${seat} panned into view starts off the screen`).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width, `${seat} panned into view ends off the screen`).toBeLessThanOrEqual(width);
      expect(Math.min(box.width, box.height), `${seat} is too small to tap`).toBeGreaterThanOrEqual(24);
    }
    await expect(p.locator('[data-seat="C5"]')).toHaveAttribute("aria-label", "Row C, seat 5, free");
    for (const item of await p.locator(".legend li").all()) {
      const box = await item.boundingBox();
      expect(box && box.x >= 0 && box.x + box.width <= width, `legend item ${await item.innerText()} is cut off`).toBe(true);
    }
    // A person taps seats on both sides of the aisle, and books them.
    await p.locator('[data-seat="C9"]').click();
    await p.locator('[data-seat="C10"]').click();
    await p.locator('[data-seat="C11"]').click();
    await p.locator('[data-action="book"]').click();
    await expect(p.locator("[data-status]")).toHaveAttribute("data-code", "ok");
    await expect(p.locator("[data-booking] .seats")).toHaveText("C9, C10 and C11");
    await p.locator("#hall").scrollIntoViewIfNeeded();
    await p.screenshot({ path: `test-results/screenshots/seatmap-phone-${String(width)}.png` });
  });
}

/** Taps the middle of a seat as drawn now (a finger, not a locator's click), and returns that seat's state after. */
async function tapSeat(p: Page, seat: string): Promise<void> {
  const el = p.locator(`[data-seat="${seat}"]`);
  await el.scrollIntoViewIfNeeded();
  const box = await el.boundingBox();
  if (!box) throw new Error(`${seat} is not drawn`);
  await p.touchscreen.tap(box.x + box.width / 2, box.y + box.height / 2);
}

const seatWidth = async (p: Page, seat: string) => (await p.locator(`[data-seat="${seat}"]`).boundingBox())?.width ?? 0;

test("zoomed in with +, by a pinch, or out to the whole hall, a tap takes the seat under the finger, never a neighbour", async ({ browser }) => {
  const screening = await createScreening({ rows: ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"], seatsPerRow: 20, title: "Metropolis" });
  const user = await createUser("pinch");
  const context = await browser.newContext({ viewport: { width: 360, height: 740 }, hasTouch: true, isMobile: true });
  const p = await context.newPage();
  await p.goto(`/?screening=${screening}`);
  await signIn(p, user);
  await expect(p.locator("[data-seat]")).toHaveCount(200);
  const first = await seatWidth(p, "E5");
  expect(first).toBeGreaterThanOrEqual(24);

  await p.locator('[data-action="zoom-in"]').click();
  await expect.poll(() => seatWidth(p, "E5")).toBeGreaterThan(first * 1.2);
  await tapSeat(p, "E14");
  await expect(p.locator('[data-seat="E14"]')).toHaveAttribute("data-state", "selected");
  for (const n of ["E13", "E15", "D14", "F14"]) await expect(p.locator(`[data-seat="${n}"]`)).toHaveAttribute("data-state", "free");

  // A pinch (Chromium's own synthetic touch gesture) zooms in around the fingers.
  const cdp = await context.newCDPSession(p);
  await p.locator('[data-seat="G8"]').scrollIntoViewIfNeeded();
  const mid = await p.locator('[data-seat="G8"]').boundingBox();
  if (!mid) throw new Error("G8 is not drawn");
  const before = await seatWidth(p, "G8");
  await cdp.send("Input.synthesizePinchGesture", { x: mid.x + mid.width / 2, y: mid.y + mid.height / 2, scaleFactor: 1.6, gestureSourceType: "touch" });
  await expect.poll(() => seatWidth(p, "G8")).toBeGreaterThan(before * 1.2);
  await tapSeat(p, "G8");
  await expect(p.locator('[data-seat="G8"]')).toHaveAttribute("data-state", "selected");
  for (const n of ["G7", "G9"]) await expect(p.locator(`[data-seat="${n}"]`)).toHaveAttribute("data-state", "free");

  // Out to the whole hall: seats too small to choose from; a tap zooms in on its spot and chooses nothing.
  for (let i = 0; i < 12 && (await p.locator('[data-action="zoom-out"]').isEnabled()); i++) await p.locator('[data-action="zoom-out"]').click();
  const small = await seatWidth(p, "B3");
  expect(small).toBeLessThan(24);
  const overflow = await p.evaluate(() => document.getElementById("mapview")?.scrollWidth ?? 0);
  expect(overflow, "zoomed out, the whole hall fits").toBeLessThanOrEqual(360);
  await p.screenshot({ path: "test-results/screenshots/seatmap-phone-360-whole-hall.png" });
  await tapSeat(p, "B3");
  await expect.poll(() => seatWidth(p, "B3")).toBeGreaterThanOrEqual(24);
  await expect(p.locator('[data-seat="B3"]')).toHaveAttribute("data-state", "free");
  await tapSeat(p, "B3");
  await expect(p.locator('[data-seat="B3"]')).toHaveAttribute("data-state", "selected");
  await expect(p.locator("[data-bar-text]")).toHaveText("B3, E14 and G8");
  await context.close();
});

test("the keyboard alone moves along the map, chooses, holds and confirms", async ({ open }) => {
  const screening = await createScreening({ rows: ["A", "B", "C"], seatsPerRow: 20, title: "Metropolis" });
  const user = await createUser("keys");
  const p = await open();
  await p.setViewportSize({ width: 360, height: 740 });
  await p.goto(`/?screening=${screening}`);
  await signIn(p, user);
  await p.locator('[data-seat="A1"]').focus();
  for (const key of ["ArrowDown", "ArrowRight", "ArrowRight", "ArrowRight", "ArrowRight"]) await p.keyboard.press(key);
  await expect(p.locator('[data-seat="B5"]')).toBeFocused();
  await expect(p.locator('[data-seat="B5"]')).toHaveAttribute("aria-label", "Row B, seat 5, free");
  await p.keyboard.press("Enter");
  await p.keyboard.press("End");
  await expect(p.locator('[data-seat="B20"]')).toBeFocused();
  await p.keyboard.press(" ");
  await expect(p.locator('[data-seat="B5"]')).toHaveAttribute("data-state", "selected");
  await expect(p.locator('[data-seat="B20"]')).toHaveAttribute("data-state", "selected");
  const box = await p.locator('[data-seat="B20"]').boundingBox();
  expect(box && box.x + box.width <= 360, "the focused seat is panned into view").toBe(true);
  // Tab to the bar's button, which holds; then confirm there.
  await expect(p.locator("[data-bar-action]")).toBeEnabled();
  await p.locator("[data-bar-action]").focus();
  await p.keyboard.press("Enter");
  await expect(p.locator('[data-seat="B20"]')).toHaveAttribute("data-state", "mine-held");
  await expect(p.locator("[data-bar-action]")).toHaveText("Confirm");
  // The listener can show the hold before HoldSeats' answer is in; the bar's
  // button stays disabled until then, and a disabled button takes no Enter.
  await expect(p.locator("[data-bar-action]")).toBeEnabled();
  await p.locator("[data-bar-action]").focus();
  await p.keyboard.press("Enter");
  await expect(p.locator('[data-seat="B20"]')).toHaveAttribute("data-state", "mine-booked");
});

// A wrong screening id says so once, with no map and no buttons under it
// (issue #29.16: "not found" twice, above an empty map with Book and Hold).
test("a screening that does not exist is said once, with nothing to book", async ({ open }) => {
  const p = await open();
  await p.goto("/?screening=no-such-screening");
  await expect(p.locator("h1")).toHaveText("Screening not found");
  await expect(p.getByText(/could not find this screening/i)).toHaveCount(1);
  await expect(p.getByText(/not found/i)).toHaveCount(1);
  for (const sel of ["[data-seat]", '[data-action="book"]', '[data-action="hold"]', ".legend"]) {
    await expect(p.locator(sel).first()).toBeHidden();
  }
  await p.screenshot({ path: "test-results/screenshots/screening-not-found.png" });
});

// The action bar (issue #50.1): at 360×740 and 390×844 the selection, the
// hold and the paying hold, each with its total and the one next step,
// stay inside the viewport after every tap, from the first seat to the
// payment; at 1280 px the side panel has them and the bar is not shown.
const halls = { rows: ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"], seatsPerRow: 20, title: "Metropolis", price: { amount: 900, currency: "eur", rows: { A: 1500, B: 1500 } } };

/** The bar's total and button, both inside the viewport, with these words. */
async function barInView(p: Page, want: { total: string; button: string }): Promise<void> {
  const vp = p.viewportSize();
  if (!vp) throw new Error("no viewport");
  const bar = p.locator("[data-actionbar]");
  await expect(bar.locator("[data-bar-total]")).toHaveText(want.total);
  await expect(bar.locator("[data-bar-action]")).toHaveText(want.button);
  const els = want.total === "" ? [] : [bar.locator("[data-bar-total]")];
  for (const el of [...els, bar.locator("[data-bar-action]")]) {
    const box = await el.boundingBox();
    expect(box, `${want.button}: bar element shown`).not.toBeNull();
    if (!box) return;
    expect(box.y, `${want.button}: above the top`).toBeGreaterThanOrEqual(0);
    expect(box.y + box.height, `${want.button}: below the bottom of ${String(vp.height)} px`).toBeLessThanOrEqual(vp.height);
    expect(box.x + box.width, `${want.button}: past the right edge`).toBeLessThanOrEqual(vp.width);
  }
}

for (const viewport of [
  { width: 360, height: 740 },
  { width: 390, height: 844 },
]) {
  test(`the action bar keeps the total and the next step in view at ${String(viewport.width)}×${String(viewport.height)}`, async ({ open }) => {
    const screening = await createScreening(halls);
    const user = await createUser("phone");
    const p = await open();
    await p.setViewportSize(viewport);
    await p.goto(`/?screening=${screening}`);
    await barInView(p, { total: "", button: "Sign in" });
    await signIn(p, user);
    await barInView(p, { total: "", button: "Find 2 seats" });
    await p.locator('[data-seat="E9"]').click();
    await barInView(p, { total: "€9.00", button: "Hold 1 seat" });
    await p.locator('[data-seat="E10"]').click();
    await barInView(p, { total: "€18.00", button: "Hold 2 seats" });
    await p.locator('[data-seat="A1"]').click();
    await barInView(p, { total: "€33.00", button: "Hold 3 seats" });
    await p.locator('[data-seat="A1"]').click();
    await barInView(p, { total: "€18.00", button: "Hold 2 seats" });
    await p.screenshot({ path: `test-results/screenshots/phone-${String(viewport.width)}-choosing.png` });
    await p.locator("[data-bar-action]").click();
    await expect(p.locator('[data-seat="E10"]')).toHaveAttribute("data-state", "mine-held");
    await barInView(p, { total: "€18.00", button: "Pay" });
    await expect(p.locator("[data-bar-text]")).toContainText("E9 and E10 held for you");
    await p.screenshot({ path: `test-results/screenshots/phone-${String(viewport.width)}-held.png` });
    await p.locator("[data-bar-action]").click();
    await p.waitForURL((u) => u.pathname === "/checkout");
    await p.screenshot({ path: `test-results/screenshots/phone-${String(viewport.width)}-checkout.png` });
    await p.goBack();
    await expect(p.locator("[data-hold]")).toHaveAttribute("data-payment-state", "paying");
    await barInView(p, { total: "€18.00", button: "Continue paying" });
    await p.screenshot({ path: `test-results/screenshots/phone-${String(viewport.width)}-paying.png` });
    await p.locator("[data-bar-action]").click();
    await p.waitForURL((u) => u.pathname === "/checkout");
    await p.locator('[data-checkout="pay"]').click();
    await p.waitForURL((u) => u.href.startsWith(env.web) && u.pathname === "/");
    await expect(p.locator('[data-seat="E10"]')).toHaveAttribute("data-state", "mine-booked");
    await barInView(p, { total: "", button: "Find 2 seats" });
    // The order to keep (issue #50.6): its reference, the film, the seats, what was paid and when, its tickets.
    const order = p.locator("[data-order]");
    await expect(order).toBeVisible();
    await expect(order).toBeInViewport();
    const ref = (await order.locator("[data-order-ref]").innerText()).trim();
    expect(ref).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    await expect(order.locator("[data-order-seats]")).toHaveText("E9 and E10");
    await expect(order.locator("[data-order-paid]")).toHaveText(/^€18\.00, \w{3} \d{1,2} \w{3}, \d\d:\d\d \S+$/);
    await expect(order.locator("[data-order-film]")).toHaveText(/^Metropolis, \w{3} \d{1,2} \w{3}, \d\d:\d\d \S+$/);
    await expect(order.locator("[data-order-tickets]")).toHaveAttribute("href", /tickets\.html\?booking=/);
    await expect(p.locator('[data-booking] [data-action="tickets"]')).toContainText(ref);
    await p.screenshot({ path: `test-results/screenshots/phone-${String(viewport.width)}-paid.png` });

    // Cancelling a paid booking asks first, naming the refund (issue #50.5), and "Keep it" keeps it.
    const booking = p.locator("[data-booking]");
    await booking.locator('[data-action="cancel"]').click();
    await expect(booking.locator("[data-cancel-question]")).toHaveText("Cancel E9 and E10 and refund €18.00?");
    await expect(booking.locator('[data-action="cancel-refund"]')).toBeFocused();
    await p.screenshot({ path: `test-results/screenshots/phone-${String(viewport.width)}-cancel-asks.png` });
    await booking.locator('[data-action="cancel-keep"]').click();
    await expect(booking.locator("[data-cancel-question]")).toBeHidden();
    await expect(p.locator('[data-seat="E10"]')).toHaveAttribute("data-state", "mine-booked");
    await booking.locator('[data-action="cancel"]').click();
    await booking.locator('[data-action="cancel-refund"]').click();
    await expect(p.locator("[data-status]")).toHaveText("Cancelled E9 and E10 and refunded €18.00 in full.");
    await expect(p.locator("[data-status]")).toHaveAttribute("data-code", "ok");
    await expect(p.locator('[data-seat="E10"]')).toHaveAttribute("data-state", "free");
    await expect(order).toBeHidden();
    await p.locator("[data-status]").scrollIntoViewIfNeeded();
    await p.screenshot({ path: `test-results/screenshots/phone-${String(viewport.width)}-cancelled.png` });
  });
}

test("at 1280 px the side panel has the selection and the bar is not shown", async ({ open }) => {
  const screening = await createScreening(halls);
  const user = await createUser("desk");
  const p = await open();
  await p.goto(`/?screening=${screening}`);
  await signIn(p, user);
  await p.locator('[data-seat="E9"]').click();
  await expect(p.locator("#selection")).toContainText("E9");
  await expect(p.locator("[data-actionbar]")).toBeHidden();
  await expect(p.locator('[data-action="hold"]')).toBeVisible();
});

// Prices before choosing (issue #50.3): the categories of price.rows as the
// free seats' colours with a legend, a tapped seat's price above it, and the
// price range on the sale's waiting and admitted screens.
test("prices before choosing: colours and a legend by row, a tapped seat's price, and the range on the sale's screens", async ({ open }) => {
  const screening = await createScreening(halls);
  const user = await createUser("prices");
  const p = await open();
  await p.setViewportSize({ width: 360, height: 740 });
  await p.goto(`/?screening=${screening}`);
  const legend = p.locator("#price-legend li");
  await expect(legend).toHaveText(["€15.00 rows A–B", "€9.00 rows C–J"]);
  await expect(p.locator('[data-seat="A1"]')).toHaveAttribute("data-cat", "0");
  await expect(p.locator('[data-seat="C1"]')).toHaveAttribute("data-cat", "");
  await expect(p.locator('[data-seat="B10"]')).toHaveAttribute("aria-label", "Row B, seat 10, €15.00, free");
  await signIn(p, user);
  await p.locator('[data-seat="B10"]').click();
  await expect(p.locator("#seat-tip")).toHaveText("B10 · €15.00");
  await expect(p.locator("#seat-tip")).toBeInViewport();
  await p.locator("#hall").scrollIntoViewIfNeeded();
  await p.screenshot({ path: "test-results/screenshots/prices-360.png" });

  const sale = { opensAt: new Date(Date.now() + 3_000), admitPerMinute: 60, maxActive: 5, passSeconds: 300 };
  const onSale = await createScreening({ ...halls, sale });
  const q = await open();
  await q.setViewportSize({ width: 360, height: 740 });
  await q.goto(`/?screening=${onSale}`);
  await signIn(q, await createUser("waiting"));
  await expect(q.locator("[data-price-range]")).toHaveText("Tickets €9.00 to €15.00, by row.");
  await q.locator('[data-action="join"]').click();
  await expect(q.locator("#queue")).toHaveAttribute("data-queue-state", "waiting");
  await expect(q.locator("[data-price-range]")).toBeVisible();
  await q.screenshot({ path: "test-results/screenshots/prices-waiting-360.png" });
  const admitter = runAdmitter();
  try {
    await expect(q.locator("#queue")).toHaveAttribute("data-queue-state", "admitted", { timeout: 60_000 });
  } finally {
    await admitter.stop();
  }
  await expect(q.locator("[data-price-range]")).toHaveText("Tickets €9.00 to €15.00, by row.");
  await q.screenshot({ path: "test-results/screenshots/prices-admitted-360.png" });
});

// Best available explains itself (issue #50.7): the answer says why those
// seats, by the server's order of rows (the screening's preference first).
test("best available says why those seats: row D is the preferred row", async ({ open }) => {
  const screening = await createScreening({ rows: ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"], seatsPerRow: 20, title: "Metropolis" });
  await patchDoc(`screenings/${screening}`, { preference: { arrayValue: { values: [{ stringValue: "D" }] } } });
  const p = await open();
  await p.setViewportSize({ width: 360, height: 740 });
  await p.goto(`/?screening=${screening}`);
  await signIn(p, await createUser("best"));
  await p.locator('[data-field="count"]').selectOption("3");
  await expect(p.locator("[data-bar-action]")).toHaveText("Find 3 seats");
  await p.locator("[data-bar-action]").click();
  await expect(p.locator("[data-status]")).toHaveAttribute("data-code", "ok");
  await expect(p.locator("[data-status]")).toHaveText(/^We found D9, D10 and D11 for you\. The best block of 3 left: row D is this screening's preferred row\. They are yours for \d:\d\d\. Confirm to book\.$/);
  await p.locator("[data-status]").scrollIntoViewIfNeeded();
  await p.screenshot({ path: "test-results/screenshots/best-why-360.png" });
});
