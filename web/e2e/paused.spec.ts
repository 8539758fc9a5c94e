// An admitted page that stopped listening to the seat map while nothing is
// free (issue #51), during an operator's pause (CONTRACT §7a: live passes
// go on holding and releasing), and one let in while nothing is free. Both
// were found by the adversarial review of 11-30 (red before their fixes).
import { type Page } from "@playwright/test";
import { callAs, createOperator, createUser, expect, holdAs, holdTheHouse, runAdmitter, signIn, test, twoSeatSale } from "./bundle";

const seat = (p: Page, id: string) => p.locator(`[data-seat="${id}"]`);

// docs/waiting-room.md promises a seat freed by someone else shows on a
// paused map "within about 3 s" (publication within a second, SaleState's
// cache ≤ 1 s, the page's poll 1 s). During an operator's pause SaleState
// answered refreshSeconds 5 (RefreshHeld: its instance cache and the page's
// poll both 5 s, and the CDN's s-maxage 5 s deployed), so a seat another
// buyer let go stayed drawn as taken for 3.8-4.8 s locally, up to ~16 s
// deployed, while it could be held; now a paused sale with live passes
// refreshes every second. (Within a minute of the opening SaleState
// refreshes every second whatever the state, so this sale opened two
// minutes before.)
test("during an operator's pause, a seat another buyer frees shows on a paused map within about 3 s", async ({ open }) => {
  test.slow();
  // Opened two minutes ago: past SaleState's minute around the opening (refreshSeconds 1 then, whatever the state).
  const screening = await twoSeatSale("Paused Latency", { opensAt: new Date(Date.now() - 120_000), passSeconds: 600 });
  const user = await createUser("shopper");
  const operator = await createOperator();
  const admitter = runAdmitter();
  try {
    const house = await holdTheHouse(screening);
    const holder = house.holder;
    const holdAll = () => holdAs(holder, screening, ["A1", "A2"]);
    let holdId = house.holdId;

    const page = await open();
    await page.goto(`/?screening=${screening}`);
    await signIn(page, user);
    await page.locator('[data-action="join"]').click();
    const queue = page.locator("#queue");
    await expect(queue).toHaveAttribute("data-queue-state", "admitted", { timeout: 30_000 });
    await expect(queue).toHaveAttribute("data-seat-map", "paused", { timeout: 30_000 });

    const paused = await callAs(operator, "OperateSale", { screeningId: screening, action: "pause", reason: "a pause during the test" });
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    await expect(queue).toHaveAttribute("data-sale-state", "paused", { timeout: 15_000 });

    const took: number[] = [];
    for (let trial = 0; trial < 3; trial++) {
      await expect(queue).toHaveAttribute("data-seat-map", "paused", { timeout: 30_000 });
      // The page paused on a poll (every 5 s now): release just after the next one.
      await page.waitForTimeout(5_300 + 300 * trial);
      const released = await callAs(holder, "ReleaseHold", { holdId });
      expect(released.status, JSON.stringify(released.body)).toBe(200);
      const at = Date.now();
      await expect(seat(page, "A1")).toHaveAttribute("data-state", "free", { timeout: 30_000 });
      took.push(Date.now() - at);
      holdId = await holdAll();
    }
    // The open sale's promise (docs/waiting-room.md 'While nothing is free'); a generous margin.
    expect(Math.max(...took), `ms from another buyer's release to the seat drawn free, during a pause: ${took.join(", ")}`).toBeLessThan(3_500);
  } finally {
    await admitter.stop();
  }
});

// Nothing invites choosing while the map drawn shows no seat free (#51's
// promise): the status line either. A page let in while every seat is held
// by others said "It is your turn: choose your seats before your pass
// ends." above a box saying no seat is free, for the rest of the pass.
test("a page let in while every seat is held does not tell the buyer to choose seats", async ({ open }) => {
  test.slow();
  const screening = await twoSeatSale("Full House");
  const user = await createUser("shopper");
  const admitter = runAdmitter();
  try {
    await holdTheHouse(screening);

    const page = await open();
    await page.goto(`/?screening=${screening}`);
    await signIn(page, user);
    await page.locator('[data-action="join"]').click();
    const queue = page.locator("#queue");
    await expect(queue).toHaveAttribute("data-queue-state", "admitted", { timeout: 30_000 });
    await expect(queue).toHaveAttribute("data-seat-map", "paused", { timeout: 30_000 });
    await expect(page.locator("#selection")).toHaveText("No seat is free to choose right now.");
    await expect(page.locator("[data-status]")).not.toContainText(/choose your seats/i);
  } finally {
    await admitter.stop();
  }
});
