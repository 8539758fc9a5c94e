import { type Page } from "@playwright/test";
import { createScreening, createUser, env, expect, signIn, test } from "./bundle";

// On a phone the demo screening's map fits the screen, with no sideways
// scrolling and seats a finger can tap: at 360 and 390 px the 20-seat rows
// were 621 px wide, and seats 13-20 and half the legend were cut off
// (issue #29.15). The map stands in two blocks, split at the aisle, one
// above the other.
for (const width of [360, 390]) {
  test(`the 20-seat map fits a ${String(width)}-px phone`, async ({ open }) => {
    const screening = await createScreening({ rows: ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"], seatsPerRow: 20, title: "Metropolis" });
    const user = await createUser("phone");
    const p = await open();
    await p.setViewportSize({ width, height: 780 });
    await p.goto(`/?screening=${screening}`);
    await signIn(p, user);
    await expect(p.locator("[data-seat]")).toHaveCount(200);
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, "the page scrolls sideways").toBe(0);
    for (const seat of ["A1", "A10", "A11", "A20", "J20"]) {
      const box = await p.locator(`[data-seat="${seat}"]`).boundingBox();
      expect(box, seat).not.toBeNull();
      if (!box) continue;
      expect(box.x, `${seat} starts off the screen`).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width, `${seat} ends off the screen`).toBeLessThanOrEqual(width);
      expect(Math.min(box.width, box.height), `${seat} is too small to tap`).toBeGreaterThanOrEqual(24);
    }
    for (const item of await p.locator(".legend li").all()) {
      const box = await item.boundingBox();
      expect(box && box.x >= 0 && box.x + box.width <= width, `legend item ${await item.innerText()} is cut off`).toBe(true);
    }
    // A person taps seats of both blocks, and books them.
    await p.locator('[data-seat="C9"]').click();
    await p.locator('[data-seat="C10"]').click();
    await p.locator('[data-seat="C11"]').click();
    await p.locator('[data-action="book"]').click();
    await expect(p.locator("[data-status]")).toHaveAttribute("data-code", "ok");
    await expect(p.locator("[data-booking] .seats")).toHaveText("C9, C10 and C11");
    await p.screenshot({ path: `test-results/screenshots/seatmap-phone-${String(width)}.png`, fullPage: true });
  });
}

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
    await barInView(p, { total: "€18.00", button: "Continue to payment" });
    await p.screenshot({ path: `test-results/screenshots/phone-${String(viewport.width)}-paying.png` });
    await p.locator("[data-bar-action]").click();
    await p.waitForURL((u) => u.pathname === "/checkout");
    await p.locator('[data-checkout="pay"]').click();
    await p.waitForURL((u) => u.href.startsWith(env.web) && u.pathname === "/");
    await expect(p.locator('[data-seat="E10"]')).toHaveAttribute("data-state", "mine-booked");
    await barInView(p, { total: "", button: "Find 2 seats" });
    await p.screenshot({ path: `test-results/screenshots/phone-${String(viewport.width)}-paid.png` });
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
