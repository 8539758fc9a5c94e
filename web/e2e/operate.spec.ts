import { type TestUser, createScreening, createUser, env, expect, getDoc, makeOperator, patchDoc, putDoc, queueIdOf, runAdmitter, signIn, test } from "./bundle";

// The sale console (CONTRACT §8), as an operator uses it, with the queue
// screen of a user in line in a second browser.

async function operatorPage(open: () => Promise<import("@playwright/test").Page>, screening?: string) {
  const op = await createUser("operator");
  await makeOperator(op);
  const page = await open();
  await page.goto(screening === undefined ? "/operate.html" : `/operate.html?screening=${screening}`);
  await signIn(page, op);
  await expect(page.locator(screening === undefined ? "[data-sales-list]" : "#console")).toBeVisible();
  return page;
}

/** Calls a function as a user would through the app (JoinQueue, HoldSeats): its answer's body. */
async function call(fn: string, user: TestUser, body: object): Promise<Record<string, unknown>> {
  const res = await fetch(`${env.functions}/${fn}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${user.idToken}` },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.ok, `${fn}: ${String(res.status)} ${text}`).toBe(true);
  return JSON.parse(text) as Record<string, unknown>;
}

/** A stored place's status (queue/{id}), as Firestore holds it. */
const placeStatus = async (screening: string, uid: string) => (await getDoc(`queue/${queueIdOf(screening, uid)}`))?.fields.status?.stringValue;

/** How far an element's content spills past its own box or its row's (0 when it shows whole). */
const spill = (el: import("@playwright/test").Locator) =>
  el.evaluate((e) => {
    const row = e.closest("li") ?? e.parentElement ?? e;
    return Math.max(e.scrollWidth - e.clientWidth, e.getBoundingClientRect().right - row.getBoundingClientRect().right);
  });

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
    // Pause asks why first: without a reason nothing is sent.
    await op.locator('[data-action="pause"]').click();
    await expect(op.locator("#confirm-pause")).toBeVisible();
    await op.locator('[data-action="confirm-pause"]').click();
    await expect(op.locator("#pause-reason-error")).toBeVisible();
    await expect(op.locator('[data-field="pause-reason"]')).toHaveAttribute("aria-invalid", "true");
    await expect(op.locator("[data-op-log]")).toHaveCount(0);
    await op.locator('[data-field="pause-reason"]').fill("the card terminal is down");
    await expect(op.locator("#pause-reason-error")).toBeHidden();
    await op.locator('[data-action="confirm-pause"]').click();
    await expect(op.locator("[data-status]")).toHaveAttribute("data-code", "ok");
    await expect(op.locator("[data-op-state]")).toHaveAttribute("data-op-state", "paused");
    await expect(op.locator("#confirm-pause")).toBeHidden();

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
    await expect(op.locator("[data-op-log]").nth(1)).toContainText("the card terminal is down");
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
    // Who closed it shows on a phone: the email's local part whole, not "o…".
    const who = op.locator("[data-op-log] .who").first();
    const local = (await op.locator('[data-action="sign-out"]').evaluate((b) => b.parentElement?.querySelector(".who")?.textContent ?? "")).split("@")[0] ?? "";
    expect(local).toMatch(/^operator-/);
    await expect(who.locator(".local")).toHaveText(local);
    expect(await spill(who.locator(".local")), "the log's who is cut on a phone").toBeLessThanOrEqual(0.5);
    await op.locator("#log").scrollIntoViewIfNeeded();
    await op.screenshot({ path: "test-results/screenshots/console-phone-log.png", fullPage: true });
  } finally {
    await admitter.stop();
  }
});

test("the charts draw the sale's minutes, and follow them live", async ({ open }) => {
  // A screening that began two hours ago: no admitter looks after it (sale.discoverWindow), so the
  // minutes are the test's alone. (Of one still selling, an admitter run by a test beside this
  // one would write the minute it counts, a sixth bar before the test's sixth.)
  const screening = await createScreening({
    startsAt: new Date(Date.now() - 2 * 3_600_000),
    sale: { opensAt: new Date(Date.now() - 3 * 3_600_000), admitPerMinute: 60, maxActive: 5 },
  });
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
  await expect(op.locator('[data-chart="seats-left"] svg rect.bar.s-left')).toHaveCount(6);
  await op.screenshot({ path: "test-results/screenshots/console-charts.png", fullPage: true });
  // On a phone the charts redraw to its width: the axis text keeps its size.
  const axisHeight = () => op.locator('[data-chart="admissions"] svg text.axis').first().evaluate((t) => t.getBoundingClientRect().height);
  expect(await axisHeight()).toBeGreaterThanOrEqual(12);
  await op.setViewportSize({ width: 360, height: 800 });
  await expect.poll(axisHeight, { message: "axis text at 360 px" }).toBeGreaterThanOrEqual(12);
  await expect(bars).toHaveCount(6);
  expect(await op.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
  await op.locator('[data-chart="waiting"]').scrollIntoViewIfNeeded();
  await op.screenshot({ path: "test-results/screenshots/console-charts-phone.png" });
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

test("the console counts a sale's joins by what App Check made of them, and says nothing when it was off", async ({ open }) => {
  const screening = await createScreening({ rows: ["A"], seatsPerRow: 8, sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 } });
  const off = await createScreening({ rows: ["A"], seatsPerRow: 8, sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 } });
  // Places as JoinQueue writes them (CONTRACT §7, §12): appCheck is the
  // result of the join's token, absent when App Check was off.
  const place = (screeningId: string, uid: string, appCheck?: string) =>
    putDoc(`queue/${queueIdOf(screeningId, uid)}`, {
      uid: { stringValue: uid }, screeningId: { stringValue: screeningId }, status: { stringValue: "waiting" },
      joinedAt: { timestampValue: new Date().toISOString() }, shard: { integerValue: "0" },
      ...(appCheck === undefined ? {} : { appCheck: { stringValue: appCheck } }),
    });
  await Promise.all([place(screening, "person1", "valid"), place(screening, "person2", "valid"), place(screening, "script1", "missing"), place(screening, "early1"), place(off, "person3")]);
  const op = await operatorPage(open, screening);
  const box = op.locator("[data-op-appcheck]");
  await expect(box).toBeVisible();
  await expect(op.locator("[data-op-appcheck-valid]")).toHaveText("2 of 3 valid");
  await expect(op.locator("[data-op-appcheck-note]")).toContainText("1 without a token, 0 with an invalid one");
  await expect(box).toHaveAttribute("data-missing", "1");
  await op.locator("dl.numbers").screenshot({ path: "test-results/console-app-check.png" });
  await op.goto(`/operate.html?screening=${off}`);
  await expect(op.locator("[data-op-state]")).toBeVisible();
  await expect(op.locator("[data-op-appcheck]")).toHaveAttribute("data-valid", "0");
  await expect(op.locator("[data-op-appcheck]")).toBeHidden();
});

/** "Thu 26 Nov, 14:05 CET": a time as a browser in timeZone shows it (issue #50.4: one format, the zone's short name). */
function inZone(d: Date, timeZone: string): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone, weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZoneName: "short" }).format(d);
}

test.describe("every sale at a glance", () => {
  test.use({ timezoneId: "Europe/Berlin" });

  test("without ?screening= the console lists every sale live, with its opening in the operator's zone, and opens one", async ({ open }) => {
    const opensAt = new Date(Math.floor(Date.now() / 1000) * 1000 - 30_000);
    const priced = await createScreening({
      title: "Metropolis",
      rows: ["A", "B"],
      seatsPerRow: 8,
      sale: { opensAt, admitPerMinute: 60, maxActive: 1, passSeconds: 300 },
      price: { amount: 1250, currency: "eur" },
    });
    const later = new Date(Date.now() + 7_200_000);
    const free = await createScreening({ title: "Vertigo", rows: ["A"], seatsPerRow: 8, sale: { opensAt: later, admitPerMinute: 60, maxActive: 5 } });
    const plain = await createScreening({ title: "No sale here" });
    // Two finished minutes of the priced sale, as the admitter writes them: 37.50 in, 12.50 refunded.
    for (const [ago, revenue, refunds] of [[3, 2500, 0], [2, 1250, 1250]] as const) {
      const at = new Date(Math.floor(Date.now() / 60_000) * 60_000 - ago * 60_000);
      const n = (v: number) => ({ integerValue: String(v) });
      await putDoc(`saleStats/${priced}/minutes/${at.toISOString().slice(0, 16).replace(/[-T:]/g, "")}`, {
        at: { timestampValue: at.toISOString() }, waiting: n(0), admitted: n(0), active: n(0), seatsLeft: n(16), admissions: n(0), revenue: n(revenue), refunds: n(refunds),
      });
    }
    const admitter = runAdmitter();
    try {
      const op = await operatorPage(open);
      await expect(op.locator("#console")).toBeHidden();
      const row = op.locator(`[data-sale-row="${priced}"]`);
      await expect(row.locator('[data-cell="state"] [data-op-state]')).toHaveAttribute("data-op-state", "open");
      await expect(row).toContainText("Metropolis");
      await expect(row.locator('[data-cell="opens"]')).toHaveText(inZone(opensAt, "Europe/Berlin"));
      await expect(row.locator('[data-cell="opens"]')).toContainText(/ CES?T$/);
      await expect(row.locator('[data-cell="takings"]')).toHaveText("€25.00");
      await expect(row.locator('[data-cell="seats-left"]')).toHaveText("16");
      await expect(op.locator(`[data-sale-row="${plain}"]`)).toHaveCount(0);
      const freeRow = op.locator(`[data-sale-row="${free}"]`);
      await expect(freeRow.locator("[data-op-state]")).toHaveAttribute("data-op-state", "scheduled");
      await expect(freeRow.locator('[data-cell="takings"]')).toHaveText("free");
      await expect(freeRow.locator('[data-cell="opens"]')).toHaveText(inZone(later, "Europe/Berlin"));

      // Two people join: one is let in (one pass at a time), one waits; the row follows live.
      const [ann, bob] = await Promise.all([createUser("ann"), createUser("bob")]);
      await call("JoinQueue", ann, { screeningId: priced });
      await expect.poll(() => placeStatus(priced, ann.uid)).toBe("admitted");
      await call("JoinQueue", bob, { screeningId: priced });
      await expect(row.locator('[data-cell="active"]')).toHaveText("1");
      await expect(row.locator('[data-cell="waiting"]')).toHaveText("1");
      await op.screenshot({ path: "test-results/screenshots/console-sales-laptop.png", fullPage: true });

      await op.setViewportSize({ width: 360, height: 800 });
      expect(await op.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), "the list scrolls sideways on a phone").toBe(0);
      await row.scrollIntoViewIfNeeded();
      await op.screenshot({ path: "test-results/screenshots/console-sales-phone.png" });

      await row.getByRole("link", { name: "Metropolis" }).click();
      await expect(op).toHaveURL(new RegExp(`operate\\.html\\?screening=${priced}$`));
      await expect(op.locator("#console")).toBeVisible();
      await expect(op.locator("[data-sales-list]")).toBeHidden();
      await expect(op.locator("[data-op-waiting]")).toHaveText("1");
    } finally {
      await admitter.stop();
    }
  });
});

test("someone who is not an operator does not see the list of sales", async ({ open }) => {
  await createScreening({ sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 } });
  const user = await createUser("visitor");
  const p = await open();
  await p.goto("/operate.html");
  await signIn(p, user);
  await expect(p.locator("[data-op-denied]")).toBeVisible();
  await expect(p.locator("[data-sales-list]")).toBeHidden();
  await expect(p.locator("[data-sale-row]")).toHaveCount(0);
});

test("an operator finds a person by email, queue id or uid, sees their place and holds, and revokes their pass with a reason", async ({ open }) => {
  const screening = await createScreening({
    rows: ["A", "B"],
    seatsPerRow: 8,
    sale: { opensAt: new Date(Date.now() - 30_000), admitPerMinute: 60, maxActive: 1, passSeconds: 300 },
  });
  const admitter = runAdmitter();
  try {
    const [ann, bob, cat] = await Promise.all([createUser("ann"), createUser("bob"), createUser("cat")]);
    await call("JoinQueue", ann, { screeningId: screening });
    await expect.poll(() => placeStatus(screening, ann.uid)).toBe("admitted");
    await call("JoinQueue", bob, { screeningId: screening });
    await call("JoinQueue", cat, { screeningId: screening });
    const hold = await call("HoldSeats", ann, { screeningId: screening, seats: ["A3", "A4"], requestId: `ann-${ann.uid}` });
    const holdId = String(hold.holdId);

    const op = await operatorPage(open, screening);
    const find = async (what: string) => {
      await op.locator('[data-field="find"]').fill(what);
      await op.locator('[data-action="find"]').click();
    };
    const person = op.locator("[data-person]");

    // Nobody: said so.
    await find("nobody-here@example.com");
    await expect(op.locator("[data-person-none]")).toContainText("Nobody in this sale matches");
    await expect(person).toHaveCount(0);

    // By queue id, someone waiting: about how many are ahead.
    await find(queueIdOf(screening, cat.uid));
    await expect(person).toHaveAttribute("data-person-status", "waiting");
    await expect(person).toContainText(cat.email);
    await expect(person.locator("[data-person-place]")).toHaveText(/^about \d+ ahead$/);
    await expect(person.locator("[data-person-hold]")).toHaveCount(0);

    // By email (as typed, in capitals): admitted, the pass's end, the hold.
    await find(ann.email.toUpperCase());
    await expect(person).toHaveAttribute("data-person-status", "admitted");
    await expect(person).toHaveAttribute("data-person", ann.uid);
    await expect(person.locator("[data-person-pass]")).toContainText(/\(in \d+:\d\d\)/);
    await expect(person.locator(`[data-person-hold="${holdId}"]`)).toHaveAttribute("data-hold-status", "held");
    await expect(person.locator(`[data-person-hold="${holdId}"]`)).toContainText("A3, A4");
    await op.screenshot({ path: "test-results/screenshots/console-person.png", fullPage: true });

    // Revoke: it asks first, and wants a reason.
    await person.locator('[data-action="revoke"]').click();
    const confirm = op.locator("#confirm-revoke");
    await expect(confirm).toBeVisible();
    await expect(confirm).toContainText(`Revoke ${ann.email}'s pass? Their holds are released`);
    await confirm.locator('[data-action="confirm-revoke"]').click();
    await expect(op.locator("#revoke-reason-error")).toBeVisible();
    await expect(person).toHaveAttribute("data-person-status", "admitted");
    expect(await placeStatus(screening, ann.uid)).toBe("admitted");
    await confirm.locator('[data-field="revoke-reason"]').fill("forty joins from one card");
    await confirm.locator('[data-action="confirm-revoke"]').click();
    await expect(op.locator("[data-status]")).toHaveAttribute("data-code", "ok");

    // The place turns expired live, the hold is released, the log names them, the slot goes to the next.
    await expect(person).toHaveAttribute("data-person-status", "expired");
    await expect(person.locator(`[data-person-hold="${holdId}"]`)).toHaveAttribute("data-hold-status", "released");
    await expect(person.locator('[data-action="revoke"]')).toBeDisabled();
    expect(await placeStatus(screening, ann.uid)).toBe("expired");
    expect((await getDoc(`holds/${holdId}`))?.fields.status?.stringValue).toBe("released");
    const entry = op.locator("[data-op-log]").first();
    await expect(entry).toHaveAttribute("data-action-logged", "revoke");
    await expect(entry).toContainText(ann.email);
    await expect(entry).toContainText("forty joins from one card");
    await expect.poll(() => placeStatus(screening, bob.uid)).toBe("admitted");

    // By uid: the next in line, let in.
    await find(bob.uid);
    await expect(person).toHaveAttribute("data-person-status", "admitted");
    await expect(person).toContainText(bob.email);
    await op.screenshot({ path: "test-results/screenshots/console-person-revoked.png", fullPage: true });
  } finally {
    await admitter.stop();
  }
});

test("the form flags every invalid field at once, before sending, and each error goes as soon as it is right", async ({ open }) => {
  const screening = await createScreening({ startsAt: new Date(Date.now() + 86_400_000), sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 } });
  const op = await operatorPage(open, screening);
  const before = await getDoc(`screenings/${screening}`);
  const sent: string[] = [];
  op.on("request", (r) => {
    if (r.url().includes("/OperateSale")) sent.push(r.url());
  });
  const field = (f: string) => op.locator(`[name="${f}"]`);
  const error = (f: string) => op.locator(`[data-error-for="${f}"]`);
  await expect(field("admitPerMinute")).toHaveValue("60");
  await field("opensAt").fill("tomorrow at six");
  await field("admitPerMinute").fill("0");
  await field("maxActive").fill("2.5");
  await field("passSeconds").fill("10");
  await field("maxSeatsPerUser").fill("11");
  await op.locator('[data-action="save-sale"]').click();
  await expect(op.locator("[data-status]")).toHaveAttribute("data-code", "invalid_sale");
  await expect(op.locator("[data-status]")).toContainText("5 fields need fixing");
  await expect(error("opensAt")).toHaveText(/sale\.opensAt must be an RFC 3339 time.*not the string "tomorrow at six"/);
  await expect(error("admitPerMinute")).toHaveText("sale.admitPerMinute must be a whole number from 1 to 10000, not the number 0");
  await expect(error("maxActive")).toHaveText("sale.maxActive must be a whole number from 1 to 100000, not the number 2.5");
  await expect(error("passSeconds")).toHaveText("sale.passSeconds must be a whole number from 30 to 3600, not the number 10");
  await expect(error("maxSeatsPerUser")).toHaveText("sale.maxSeatsPerUser must be a whole number from 1 to 10, not the number 11");
  for (const f of ["opensAt", "admitPerMinute", "maxActive", "passSeconds", "maxSeatsPerUser"]) await expect(field(f)).toHaveAttribute("aria-invalid", "true");
  await op.screenshot({ path: "test-results/screenshots/console-form-errors.png", fullPage: true });

  // Each error goes as its field is corrected, while the others stay.
  await field("admitPerMinute").fill("30");
  await expect(error("admitPerMinute")).toBeHidden();
  await expect(field("admitPerMinute")).toHaveAttribute("aria-invalid", "false");
  await expect(error("maxActive")).toBeVisible();
  await field("maxActive").fill("8");
  await field("passSeconds").fill("");
  await field("maxSeatsPerUser").fill("4");
  await expect(error("maxActive")).toBeHidden();
  await expect(error("passSeconds")).toBeHidden();
  await expect(error("maxSeatsPerUser")).toBeHidden();
  await expect(error("opensAt")).toBeVisible();
  // An opening after the screening's start is refused too.
  const opensAt = new Date(Date.now() + 2 * 86_400_000).toISOString().replace(/\.\d+Z$/, "Z");
  await field("opensAt").fill(opensAt);
  await expect(error("opensAt")).toBeVisible();
  await op.locator('[data-action="save-sale"]').click();
  await expect(error("opensAt")).toHaveText(/must be before the screening's startsAt/);
  await expect(error("maxActive")).toBeHidden();
  expect(sent, "nothing was sent while a field was wrong").toEqual([]);
  expect(await getDoc(`screenings/${screening}`)).toEqual(before);

  const good = new Date(Date.now() + 7_200_000).toISOString().replace(/\.\d+Z$/, "Z");
  await field("opensAt").fill(good);
  await expect(error("opensAt")).toBeHidden();
  await op.locator('[data-action="save-sale"]').click();
  await expect(op.locator("[data-status]")).toHaveAttribute("data-code", "ok");
  const sale = (await getDoc(`screenings/${screening}`))?.fields.sale?.mapValue?.fields;
  expect(sale?.admitPerMinute?.integerValue).toBe("30");
  expect(sale?.maxActive?.integerValue).toBe("8");
  expect(sale?.maxSeatsPerUser?.integerValue).toBe("4");
  expect(sale?.opensAt?.timestampValue).toBe(good);
  await expect(op.locator("[data-op-log]").first()).toHaveAttribute("data-action-logged", "configure");
});

test("the console sets a sale for verified email addresses only", async ({ open }) => {
  const screening = await createScreening({ rows: ["A"], seatsPerRow: 8, sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 } });
  const op = await operatorPage(open, screening);
  const box = op.locator('[data-field="requireVerifiedEmail"]');
  // The form shows the stored sale first (a save before that would send empty fields).
  await expect(op.locator('[name="admitPerMinute"]')).toHaveValue("60");
  await expect(box).not.toBeChecked();
  await box.check();
  await op.locator('[data-action="save-sale"]').click();
  await expect(op.locator("[data-status]")).toHaveAttribute("data-code", "ok");
  const stored = await getDoc(`screenings/${screening}`);
  expect(stored?.fields.sale?.mapValue?.fields?.requireVerifiedEmail).toEqual({ booleanValue: true });
  await op.reload();
  await expect(op.locator("#console")).toBeVisible();
  await expect(box).toBeChecked();
});

test.describe("the charts in the operator's zone", () => {
  test.use({ timezoneId: "Europe/Berlin" });

  test("the charts show the limits, the paused stretch and the changes from the log, joins beside admissions, seats sold, held and left, each minute by its start with its zone; the console gives the wait of a join now", async ({ open }) => {
    const base = Math.floor(Date.now() / 60_000) * 60_000 - 10 * 60_000; // the first minute's start
    // A screening that began two hours ago: no admitter (another test's, beside this one) looks after
    // it and publishes its own sales/{id} over the one written below (sale.discoverWindow).
    const screening = await createScreening({
      startsAt: new Date(Date.now() - 2 * 3_600_000),
      sale: { opensAt: new Date(base - 5 * 60_000), admitPerMinute: 6, maxActive: 4, passSeconds: 120 },
    });
    const n = (v: number) => ({ integerValue: String(v) });
    const ts = (ms: number) => ({ timestampValue: new Date(ms).toISOString() });
    const key = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace(/[-T:]/g, "");
    // Ten finished minutes, as the admitter writes them: `at` is just after each minute's end.
    for (let i = 0; i < 10; i++) {
      const start = base + i * 60_000;
      await putDoc(`saleStats/${screening}/minutes/${key(start)}`, {
        at: ts(start + 60_500), waiting: n(40 - i), admitted: n(6 * i), active: n(Math.min(4, i)), seatsLeft: n(60 - 2 * i), seatsHeld: n(i % 3), seatsSold: n(2 * i - (i % 3)),
        joins: n(5 + (i % 4)), admissions: n(i >= 5 && i < 7 ? 0 : Math.min(6, i + 1)), holds: n(1), bookings: n(1), expired: n(0), revenue: n(0), refunds: n(0), latePayments: n(0),
      });
    }
    // The log, as OperateSale writes it: the sale's creation, a rate change, a pause and a resume.
    const sale = (rate: number) => ({ mapValue: { fields: { opensAt: { stringValue: new Date(base - 5 * 60_000).toISOString() }, admitPerMinute: n(rate), maxActive: n(4), passSeconds: n(120) } } });
    const paused = (v: Value) => ({ mapValue: { fields: { ...v.mapValue.fields, paused: { booleanValue: true } } } });
    type Value = ReturnType<typeof sale>;
    const log = async (id: string, at: number, action: string, fields: Record<string, unknown>) =>
      putDoc(`saleLog/${screening}/entries/${id}`, { at: ts(at), uid: { stringValue: "op" }, email: { stringValue: "olive@example.com" }, action: { stringValue: action }, reason: { stringValue: `${action} for the test` }, ...fields });
    const [changedAt, pausedAt, resumedAt] = [base + 3 * 60_000 + 30_000, base + 5 * 60_000, base + 7 * 60_000];
    await log("a-create", base - 6 * 60_000, "configure", { after: sale(10) });
    await log("b-rate", changedAt, "configure", { before: sale(10), after: sale(6) });
    await log("c-pause", pausedAt, "pause", { before: sale(6), after: paused(sale(6)) });
    await log("d-resume", resumedAt, "resume", { before: paused(sale(6)), after: sale(6) });
    // The public sale document, as the admitter publishes it: 30 waiting.
    await putDoc(`sales/${screening}`, {
      state: { stringValue: "open" }, opensAt: ts(base - 5 * 60_000), waiting: n(30), admitted: n(54), active: n(4), seatsLeft: n(42),
      admittedThrough: { stringValue: "" }, marks: { arrayValue: { values: [] } }, updatedAt: ts(Date.now()),
    });

    const op = await operatorPage(open, screening);
    const chart = (name: string) => op.locator(`[data-chart="${name}"] svg`);
    // Inflow beside outflow.
    await expect(chart("joins").locator("rect.bar")).toHaveCount(10);
    await expect(chart("admissions").locator("rect.bar")).toHaveCount(10);
    // The limits, as they stood: admitPerMinute 10 then 6 (a step), maxActive 4 throughout.
    const rate = chart("admissions").locator('[data-limit="admitPerMinute"]');
    await expect(rate).toHaveAttribute("data-limit-now", "6");
    expect((await rate.getAttribute("points"))?.trim().split(" ")).toHaveLength(4);
    await expect(rate.locator("title")).toHaveText("admitPerMinute: 10 → 6");
    await expect(chart("active").locator('[data-limit="maxActive"]')).toHaveAttribute("data-limit-now", "4");
    expect((await chart("active").locator('[data-limit="maxActive"]').getAttribute("points"))?.trim().split(" ")).toHaveLength(2);
    // The pause, shaded on every chart, from the pause to the resume; the changes marked.
    const span = `${new Date(pausedAt).toISOString()}/${new Date(resumedAt).toISOString()}`;
    for (const name of ["joins", "admissions", "waiting", "active", "seats-left"]) {
      await expect(chart(name).locator("[data-paused-span]")).toHaveAttribute("data-paused-span", span);
      await expect(chart(name).locator("[data-change-mark]")).toHaveCount(3);
    }
    const marks = chart("admissions").locator("[data-change-mark]");
    expect(await marks.evaluateAll((ms) => ms.map((m) => m.getAttribute("data-change-mark")))).toEqual(["configure", "pause", "resume"]);
    await expect(marks.first().locator("title")).toContainText("admitPerMinute 10 → 6");
    // Seats stacked: sold, held, left, each minute.
    for (const cls of ["s-sold", "s-held", "s-left"]) await expect(chart("seats-left").locator(`rect.bar.${cls}`)).toHaveCount(10);
    // Each minute by its start, in the operator's zone, written out.
    const hhmm = (ms: number) => new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Berlin", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(new Date(ms));
    const zone = inZone(new Date(base), "Europe/Berlin").split(" ").at(-1) ?? "";
    expect(zone).toMatch(/^CES?T$/);
    await expect(op.locator("[data-chart-zone]")).toHaveText(zone);
    await expect(chart("admissions").locator("text.axis", { hasText: ":" }).first()).toHaveText(hhmm(base));
    const third = base + 2 * 60_000;
    await expect(chart("seats-left").locator("rect.bar.s-sold").nth(2).locator("title")).toHaveText(`${hhmm(third)}–${hhmm(third + 60_000)} ${zone}: 2 sold, 2 held, 56 left`);
    await expect(chart("joins").locator("rect.bar").first().locator("title")).toHaveText(`${hhmm(base)}–${hhmm(base + 60_000)} ${zone}: 5 joined`);
    // The wait of someone joining now: 30 ahead at 2 a minute (4 passes of 120 s bind, not 6 a minute).
    await expect(op.locator("[data-op-wait]")).toHaveText("about 15 minutes");
    await expect(op.locator("[data-op-wait]")).toHaveAttribute("data-wait-ms", "900000");
    await expect(op.locator("[data-op-wait-note]")).toHaveText("30 ahead at 2 a minute (maxActive binds)");
    await op.screenshot({ path: "test-results/screenshots/console-charts-limits.png", fullPage: true });
    await patchDoc(`sales/${screening}`, { state: { stringValue: "paused" } });
    await expect(op.locator("[data-op-wait]")).toHaveText("about 15 minutes once resumed");

    await op.setViewportSize({ width: 360, height: 800 });
    await expect(rate).toHaveAttribute("data-limit-now", "6");
    expect(await op.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), "the charts scroll sideways on a phone").toBe(0);
    await op.locator(".numbers .wait").evaluate((e) => {
      e.scrollIntoView({ block: "center" });
    });
    await op.screenshot({ path: "test-results/screenshots/console-wait-phone.png" });
    await op.locator(".chart-key").evaluate((e) => {
      e.scrollIntoView({ block: "start" });
    });
    await op.screenshot({ path: "test-results/screenshots/console-charts-limits-phone.png" });
  });
});
