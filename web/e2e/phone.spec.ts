import { createScreening, createUser, expect, signIn, test } from "./bundle";

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
