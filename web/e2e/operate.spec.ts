import { createScreening, createUser, expect, getDoc, makeOperator, putDoc, runAdmitter, signIn, test } from "./bundle";

// The sale console (CONTRACT §8), as an operator uses it, with the queue
// screen of a user in line in a second browser.

async function operatorPage(open: () => Promise<import("@playwright/test").Page>, screening: string) {
  const op = await createUser("operator");
  await makeOperator(op);
  const page = await open();
  await page.goto(`/operate.html?screening=${screening}`);
  await signIn(page, op);
  await expect(page.locator("#console")).toBeVisible();
  return page;
}

test("an operator pauses and resumes a running sale while a user in line sees it, and is then admitted", async ({ open }) => {
  const screening = await createScreening({
    rows: ["A", "B"],
    seatsPerRow: 8,
    title: "Nosferatu",
    sale: { opensAt: new Date(Date.now() - 30_000), admitPerMinute: 60, maxActive: 5, passSeconds: 120 },
  });
  const admitter = runAdmitter();
  try {
    const op = await operatorPage(open, screening);
    await expect(op.locator("[data-op-state]")).toHaveAttribute("data-op-state", "open");
    await op.locator('[data-action="pause"]').click();
    await expect(op.locator("[data-status]")).toHaveAttribute("data-code", "ok");
    await expect(op.locator("[data-op-state]")).toHaveAttribute("data-op-state", "paused");

    // A user joins the paused sale: they wait, told their place is kept.
    const fan = await createUser("fan");
    const u = await open();
    await u.goto(`/?screening=${screening}`);
    await signIn(u, fan);
    await u.locator('[data-action="join"]').click();
    const queue = u.locator("#queue");
    await expect(queue).toHaveAttribute("data-queue-state", "waiting");
    await expect(queue).toHaveAttribute("data-sale-state", "paused");
    await expect(queue).toContainText("Your place in the queue is kept");
    await expect(u.locator("[data-seat]").first()).toBeHidden();
    await u.screenshot({ path: "test-results/screenshots/queue-paused.png", fullPage: true });

    // Resumed: the user is let in and the map appears.
    await op.locator('[data-action="resume"]').click();
    await expect(op.locator("[data-op-state]")).toHaveAttribute("data-op-state", "open");
    await expect(queue).toHaveAttribute("data-queue-state", "admitted");
    await expect(u.locator('[data-seat="A1"]')).toBeVisible();
    await expect(op.locator("[data-op-admitted]")).toHaveText("1");

    // The log, newest first.
    await expect(op.locator("[data-op-log]")).toHaveCount(2);
    await expect(op.locator("[data-op-log]").first()).toHaveAttribute("data-action-logged", "resume");
    await expect(op.locator("[data-op-log]").nth(1)).toHaveAttribute("data-action-logged", "pause");
    await op.screenshot({ path: "test-results/screenshots/console-laptop.png", fullPage: true });
  } finally {
    await admitter.stop();
  }
});

test("an operator changes the rate from the form; the sale and the log show it", async ({ open }) => {
  const screening = await createScreening({ sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 } });
  const op = await operatorPage(open, screening);
  const rate = op.locator('[name="admitPerMinute"]');
  await expect(rate).toHaveValue("60");
  await rate.fill("42");
  await op.locator('[name="reason"]').fill("fewer staff at the door");
  await op.locator('[data-action="save-sale"]').click();
  await expect(op.locator("[data-status]")).toHaveAttribute("data-code", "ok");
  await expect.poll(async () => (await getDoc(`screenings/${screening}`))?.fields.sale?.mapValue?.fields?.admitPerMinute?.integerValue).toBe("42");
  const entry = op.locator("[data-op-log]").first();
  await expect(entry).toHaveAttribute("data-action-logged", "configure");
  await expect(entry).toContainText("admitPerMinute 60 → 42");
  await expect(entry).toContainText("fewer staff at the door");
  await expect(rate).toHaveValue("42");
});

test("an invalid value is refused beside its field, and nothing changes", async ({ open }) => {
  const screening = await createScreening({ sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 } });
  const op = await operatorPage(open, screening);
  const before = await getDoc(`screenings/${screening}`);
  await op.locator('[name="maxActive"]').fill("0");
  await op.locator('[data-action="save-sale"]').click();
  await expect(op.locator("[data-status]")).toHaveAttribute("data-code", "invalid_sale");
  const err = op.locator('[data-error-for="maxActive"]');
  await expect(err).toBeVisible();
  await expect(err).toHaveText(/sale\.maxActive must be a whole number from 1 to 100000, not the number 0/);
  await expect(op.locator('[name="maxActive"]')).toHaveAttribute("aria-invalid", "true");
  await op.locator('[name="maxActive"]').fill("five");
  await op.locator('[data-action="save-sale"]').click();
  await expect(err).toHaveText(/not the string "five"/);
  expect(await getDoc(`screenings/${screening}`)).toEqual(before);
  await expect(op.locator("[data-op-log]")).toHaveCount(0);
  await op.screenshot({ path: "test-results/screenshots/console-invalid.png" });
});

test("someone who is not an operator is denied", async ({ open }) => {
  const screening = await createScreening({ sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 } });
  const user = await createUser("visitor");
  const p = await open();
  await p.goto(`/operate.html?screening=${screening}`);
  await signIn(p, user);
  await expect(p.locator("[data-op-denied]")).toBeVisible();
  await expect(p.locator("#console")).toBeHidden();
  await expect(p.locator('[data-action="pause"]')).toBeHidden();
});

test("an operator closes a sale only after saying so; the console is readable on a phone", async ({ open }) => {
  const screening = await createScreening({ sale: { opensAt: new Date(Date.now() - 30_000), admitPerMinute: 60, maxActive: 5 } });
  const admitter = runAdmitter();
  try {
    const op = await operatorPage(open, screening);
    await op.setViewportSize({ width: 360, height: 800 });
    await expect(op.locator("[data-op-state]")).toHaveAttribute("data-op-state", "open");
    const overflow = await op.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, "the console scrolls sideways on a phone").toBe(0);
    await op.screenshot({ path: "test-results/screenshots/console-phone.png", fullPage: true });
    await op.locator('[data-action="close"]').click();
    await expect(op.locator("#confirm-close")).toBeVisible();
    await op.locator('[data-action="cancel-close"]').click();
    await expect(op.locator("#confirm-close")).toBeHidden();
    await expect(op.locator("[data-op-state]")).toHaveAttribute("data-op-state", "open");
    await op.locator('[data-action="close"]').click();
    await op.locator("#close-reason").fill("the projector broke");
    await op.locator('[data-action="confirm-close"]').click();
    await expect(op.locator("[data-op-state]")).toHaveAttribute("data-op-state", "closed");
    await expect(op.locator('[data-action="pause"]')).toBeDisabled();
    await expect(op.locator("[data-op-log]").first()).toContainText("the projector broke");
  } finally {
    await admitter.stop();
  }
});

test("the charts draw the sale's minutes, and follow them live", async ({ open }) => {
  const screening = await createScreening({ sale: { opensAt: new Date(Date.now() - 600_000), admitPerMinute: 60, maxActive: 5 } });
  const minute = (i: number, admissions: number, waiting: number) => {
    const at = new Date(Date.now() - (10 - i) * 60_000);
    const key = at.toISOString().slice(0, 16).replace(/[-T:]/g, "");
    return putDoc(`saleStats/${screening}/minutes/${key}`, {
      at: { timestampValue: at.toISOString() },
      waiting: { integerValue: String(waiting) },
      admitted: { integerValue: String(admissions * i) },
      active: { integerValue: "3" },
      seatsLeft: { integerValue: String(72 - i) },
      admissions: { integerValue: String(admissions) },
    });
  };
  for (let i = 0; i < 5; i++) await minute(i, 4 + i, 100 - 10 * i);
  const op = await operatorPage(open, screening);
  const bars = op.locator('[data-chart="admissions"] svg rect.bar');
  await expect(bars).toHaveCount(5);
  await expect(op.locator('[data-chart="waiting"] svg polyline')).toHaveCount(1);
  await expect(op.locator('[data-chart="waiting"] svg circle')).toHaveCount(5);
  await minute(5, 9, 50); // the admitter writes the next minute: the charts follow
  await expect(bars).toHaveCount(6);
  await expect(op.locator('[data-chart="seats-left"] svg circle')).toHaveCount(6);
  await op.screenshot({ path: "test-results/screenshots/console-charts.png", fullPage: true });
});

test("the console shows a priced sale's takings from its minutes", async ({ open }) => {
  const screening = await createScreening({
    rows: ["A", "B"],
    seatsPerRow: 8,
    sale: { opensAt: new Date(Date.now() - 120_000), admitPerMinute: 60, maxActive: 5 },
    price: { amount: 1250, currency: "eur" },
  });
  // Two finished minutes, as the admitter writes them (saleStats, CONTRACT §8 and §10).
  const minute = (ago: number, revenue: number, refunds: number, late: number) => {
    const at = new Date(Math.floor(Date.now() / 60_000) * 60_000 - ago * 60_000);
    const key = at.toISOString().slice(0, 16).replace(/[-T:]/g, "");
    const n = (v: number) => ({ integerValue: String(v) });
    return putDoc(`saleStats/${screening}/minutes/${key}`, {
      at: { timestampValue: at.toISOString() }, waiting: n(0), admitted: n(2), active: n(1), seatsLeft: n(12), seatsHeld: n(1), seatsSold: n(3),
      joins: n(0), admissions: n(1), holds: n(1), bookings: n(1), expired: n(0), revenue: n(revenue), refunds: n(refunds), latePayments: n(late),
    });
  };
  await minute(2, 3750, 0, 0);
  await minute(1, 2500, 1250, 1);
  const op = await operatorPage(open, screening);
  await expect(op.locator("[data-op-money]")).toBeVisible();
  await expect(op.locator("[data-op-takings]")).toHaveText("€50.00");
  await expect(op.locator("[data-op-refunds]")).toHaveText("€62.50 in, €12.50 refunded; 1 paid late");
  await expect(op.locator('[data-chart="revenue"] svg rect')).not.toHaveCount(0);
});

test("a free sale's console shows no takings", async ({ open }) => {
  const screening = await createScreening({ rows: ["A"], seatsPerRow: 8, sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 } });
  const op = await operatorPage(open, screening);
  await expect(op.locator("[data-op-state]")).toBeVisible();
  await expect(op.locator("[data-op-money]")).toBeHidden();
  await expect(op.locator('[data-chart="revenue"]')).toBeHidden();
});
