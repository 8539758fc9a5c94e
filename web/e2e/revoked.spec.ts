// A buyer whose pass an operator revokes (CONTRACT §8 `revoke`: the pass
// ends now, their live holds are released, their place turns expired),
// seen from the buyer's own page: the revocation is said as such, the
// released hold goes live, and nothing is offered that cannot succeed.
import { type Page } from "@playwright/test";
import { createScreening, createUser, env, expect, getDoc, revokePass, runAdmitter, signIn, test } from "./bundle";

const seat = (page: Page, id: string) => page.locator(`[data-seat="${id}"]`);
const action = (page: Page, name: string) => page.locator(`[data-action="${name}"]`);
const status = (page: Page) => page.locator("[data-status]");
const queue = (page: Page) => page.locator("#queue");

/** Screenshots at 1280 and 360 px, for a person to look at. */
async function shoot(page: Page, name: string): Promise<void> {
  await page.setViewportSize({ width: 1280, height: 860 });
  await page.screenshot({ path: `test-results/screenshots/${name}-1280.png`, fullPage: true });
  await page.setViewportSize({ width: 360, height: 780 });
  await page.screenshot({ path: `test-results/screenshots/${name}-360.png`, fullPage: true });
  await page.setViewportSize({ width: 1280, height: 860 });
}

test("a buyer whose pass is revoked sees it said as such, the released hold goes, and no Pay is left", async ({ open }) => {
  const screening = await createScreening({
    rows: ["A", "B"],
    seatsPerRow: 8,
    title: "Nosferatu",
    sale: { opensAt: new Date(Date.now() - 30_000), admitPerMinute: 60, maxActive: 1, passSeconds: 600 },
    price: { amount: 1250, currency: "eur" },
  });
  const admitter = runAdmitter();
  try {
    const buyer = await createUser("buyer");
    const page = await open();
    await page.goto(`/?screening=${screening}`);
    await signIn(page, buyer);
    await action(page, "join").click();
    await expect(queue(page)).toHaveAttribute("data-queue-state", "admitted");

    // The hold's answer reaches the page after the page's listener has
    // seen the hold (as often happens): the hold must still go when the
    // listener later drops it.
    await page.route(`${env.functions}/HoldSeats`, async (route) => {
      const answer = await route.fetch();
      await expect(page.locator("[data-hold]")).toHaveCount(1);
      await route.fulfill({ response: answer });
    });
    await seat(page, "A7").click();
    await action(page, "hold").click();
    await expect(status(page)).toHaveAttribute("data-code", "ok");
    const hold = page.locator("[data-hold]");
    const holdId = (await hold.getAttribute("data-hold")) ?? "";
    await expect(hold.locator('[data-action="pay"]')).toBeVisible();

    await revokePass(screening, buyer.uid);

    // The released hold goes live, and with it every action on it.
    await expect(hold).toHaveCount(0);
    await expect(page.locator("#holds-card")).toBeHidden();
    await expect(page.locator('[data-action="pay"]:visible, [data-action="extend"]:visible, [data-action="confirm"]:visible')).toHaveCount(0);
    // Said as a revocation, not as time running out (the pass had ~10 minutes left).
    await expect(queue(page)).toHaveAttribute("data-queue-state", "expired");
    await expect(queue(page)).not.toContainText("Time ran out");
    await expect(queue(page)).toHaveAttribute("data-queue-ended", "revoked");
    await expect(page.locator("#queue-h")).toHaveText("The box office ended your pass");
    await expect(status(page)).toContainText("The box office ended your pass");
    await expect(page.locator("#hall")).toBeHidden();
    expect((await getDoc(`holds/${holdId}`))?.fields.status?.stringValue).toBe("released");
    await shoot(page, "revoked");
  } finally {
    await admitter.stop();
  }
});
