// The waiting room in the browser (CONTRACT §7): users join a sale's queue,
// wait without the seat map, are admitted in fair order, hold and confirm
// under their pass, and see the sale sell out; judged on the data-* hooks,
// on the listeners the pages open, and on what Firestore holds afterwards.
import { type Page } from "@playwright/test";
import {
  type Sale,
  type TestUser,
  confirmedBookings,
  createScreening,
  createUser,
  expect,
  getDoc,
  listDocs,
  queueIdOf,
  runAdmitter,
  setSale,
  signIn,
  test,
  watchSeatListeners,
} from "./bundle";

const seat = (page: Page, id: string) => page.locator(`[data-seat="${id}"]`);
const action = (page: Page, name: string) => page.locator(`[data-action="${name}"]`);
const status = (page: Page) => page.locator("[data-status]");
const queue = (page: Page) => page.locator("#queue");

/** Screenshots at desktop and phone size, for a person to look at. */
async function shoot(page: Page, name: string): Promise<void> {
  const desktop = page.viewportSize() ?? { width: 1280, height: 860 };
  await page.screenshot({ path: `test-results/screenshots/queue-${name}-desktop.png`, fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: `test-results/screenshots/queue-${name}-phone.png`, fullPage: true });
  await page.setViewportSize(desktop);
}

/** Holds the seats on an admitted user's map and confirms the hold. */
async function holdAndConfirm(page: Page, seats: string[]): Promise<void> {
  for (const s of seats) await seat(page, s).click();
  await action(page, "hold").click();
  await expect(status(page)).toHaveAttribute("data-code", "ok");
  for (const s of seats) await expect(seat(page, s)).toHaveAttribute("data-state", "mine-held");
  await action(page, "confirm").click();
  await expect(status(page)).toHaveAttribute("data-code", "ok");
}

test("three users wait, are admitted in fair order (the early joiner first), hold and confirm; a waiting user never opens the seat map; sold out shows at once", async ({
  open,
}) => {
  // Four browsers through a whole sale, with screenshots: about 90 s on two
  // shared cores, the default timeout's whole budget. Three times that.
  test.slow();
  // A hall of 6 seats, 2 a user, one pass at a time: admission order shows
  // as who is let in while the others wait, and three bookings sell it out.
  const sale: Sale = { opensAt: new Date(Date.now() + 300_000), admitPerMinute: 60, maxActive: 1, passSeconds: 120, maxSeatsPerUser: 2 };
  const screening = await createScreening({ rows: ["A", "B"], seatsPerRow: 3, title: "Nosferatu", sale });
  const users = await Promise.all(["early", "bob", "carol", "dave"].map((n) => createUser(n)));
  const [early, bob, carol] = users as [TestUser, TestUser, TestUser, TestUser];
  const admitter = runAdmitter();
  try {
    const pages = await Promise.all(users.map(() => open()));
    const [a, b, c, d] = pages as [Page, Page, Page, Page];
    const listeners = pages.map((p) => watchSeatListeners(p, screening));
    await Promise.all(pages.map((p) => p.goto(`/?screening=${screening}`)));
    await Promise.all(pages.map((p, i) => signIn(p, users[i] as TestUser)));

    // Before the opening: a countdown, and joining is open. The early user joins.
    for (const p of pages) {
      await expect(queue(p)).toHaveAttribute("data-queue-state", "none");
      await expect(p.locator("[data-opens-countdown]"), "m:ss, under the 5 minutes set").toHaveText(/^[0-4]:[0-5]\d$/);
      await expect(p.locator("[data-queue-ahead]")).toBeHidden();
      await expect(p.locator("#hall")).toBeHidden();
    }
    await action(a, "join").click();
    await expect(status(a)).toHaveAttribute("data-code", "ok");
    await expect(queue(a)).toHaveAttribute("data-queue-state", "waiting");
    await expect(a.locator("[data-opens-countdown]")).toBeVisible();
    await expect(action(a, "join")).toBeHidden();
    await expect(queue(a)).toHaveAttribute("data-seats-left", "6"); // the admitter has published the sale
    await expect(queue(a)).toHaveAttribute("data-sale-state", "scheduled");
    await shoot(a, "countdown");

    // The admin brings the opening forward; the pages follow live.
    await setSale(screening, { ...sale, opensAt: new Date(Date.now() + 2_000) });
    await expect(queue(b)).toHaveAttribute("data-sale-state", "open");
    // Joined after the opening, in this order: bob, carol, dave.
    for (const p of [b, c, d]) {
      await action(p, "join").click();
      await expect(queue(p)).toHaveAttribute("data-queue-state", /^(waiting|admitted)$/);
    }

    // The early joiner is let in first: the map, and the pass's countdown.
    await expect(queue(a)).toHaveAttribute("data-queue-state", "admitted");
    await expect(a.locator("#hall")).toBeVisible();
    await expect(a.locator("[data-pass-countdown]")).toHaveText(/^(2:00|1:[0-5]\d)$/);
    await expect(status(a)).toContainText("your turn");
    for (const p of [b, c, d]) {
      await expect(queue(p)).toHaveAttribute("data-queue-state", "waiting");
      await expect(p.locator("[data-queue-ahead]")).toHaveAttribute("data-queue-ahead", /^\d+$/);
      await expect(p.locator("#hall")).toBeHidden();
    }
    await expect(seat(a, "A1")).toHaveAttribute("data-state", "free");
    await shoot(a, "admitted");
    await shoot(d, "waiting");

    // Over the cap: three seats of a 2-seat sale are refused in words, and nothing is held.
    for (const s of ["A1", "A2", "A3"]) await seat(a, s).click();
    await action(a, "hold").click();
    await expect(status(a)).toHaveAttribute("data-code", "seat_limit");
    await expect(status(a)).toContainText("2 seats at most");
    await expect(seat(a, "A3")).toHaveAttribute("data-state", "selected");
    await expect(seat(b, "A3"), "nothing was held").toHaveAttribute("data-state", "free");
    await seat(a, "A3").click();
    await action(a, "hold").click();
    await expect(status(a)).toHaveAttribute("data-code", "ok");
    await expect(seat(a, "A1")).toHaveAttribute("data-state", "mine-held");
    await action(a, "confirm").click();
    await expect(status(a)).toHaveAttribute("data-code", "ok");
    // A booking with nothing held ends the pass: the map closes, and the page says why.
    await expect(queue(a)).toHaveAttribute("data-queue-state", "done");
    await expect(a.locator("#hall")).toBeHidden();
    await expect(a.locator("#queue-text")).toContainText("booking is confirmed");
    await expect(a.locator("[data-booking]")).toHaveCount(1);

    // Then bob, while carol and dave wait.
    await expect(queue(b)).toHaveAttribute("data-queue-state", "admitted");
    await expect(queue(c)).toHaveAttribute("data-queue-state", "waiting");
    await expect(seat(b, "A1")).toHaveAttribute("data-state", "booked");
    await holdAndConfirm(b, ["B1", "B2"]);
    await expect(queue(b)).toHaveAttribute("data-queue-state", "done");

    // Then carol, who takes the last two seats: sold out, on every page at once.
    await expect(queue(c)).toHaveAttribute("data-queue-state", "admitted");
    await expect(queue(d)).toHaveAttribute("data-queue-state", "waiting");
    await holdAndConfirm(c, ["A3", "B3"]);
    for (const p of pages) await expect(queue(p)).toHaveAttribute("data-sale-state", "soldout");
    await expect(queue(d)).toHaveAttribute("data-seats-left", "0");
    await expect(d.locator("#queue-h")).toHaveText("Sold out");
    await expect(status(d), "the status line no longer says dave is in the queue").toHaveAttribute("data-code", "sold_out");
    await shoot(d, "soldout");
    // A visitor who comes now sees it at once, with nothing to join.
    const visitor = await open();
    const visitorListeners = watchSeatListeners(visitor, screening);
    await visitor.goto(`/?screening=${screening}`);
    await expect(queue(visitor)).toHaveAttribute("data-sale-state", "soldout");
    await expect(action(visitor, "join")).toBeHidden();

    // The pages that waited never opened the seat map's listener; the
    // admitted ones did (the detector sees a listener when there is one).
    expect(listeners[3]?.opened, "dave waited throughout").toEqual([]);
    expect(visitorListeners.opened, "a visitor of a sold-out sale").toEqual([]);
    // Each admitted page opened it once, and not again once its pass had
    // ended; the end of the listener (the page's, or the rules') is no error.
    for (const [i, l] of listeners.slice(0, 3).entries()) expect(l.opened, `user ${String(i)} was admitted once`).toHaveLength(1);
    // During a sale the map is one document (CONTRACT §7a): nobody opened the per-seat listener.
    for (const [i, l] of listeners.entries()) expect(l.perSeat, `user ${String(i)} opened the per-seat map during the sale`).toEqual([]);
    for (const p of [a, b]) await expect(status(p), "no error once the pass ended, seconds ago").toHaveAttribute("data-code", "ok");

    // What Firestore holds: one booking of two seats each, in admission
    // order, the early joiner first; dave still waits, never admitted.
    const places = await Promise.all(users.map((u) => getDoc(`queue/${queueIdOf(screening, u.uid)}`)));
    const [pa, pb, pc, pd] = places.map((p) => p?.fields ?? {});
    expect([pa, pb, pc, pd].map((p) => p?.status?.stringValue)).toEqual(["done", "done", "done", "waiting"]);
    expect(pa?.order?.stringValue, "the early joiner was ranked by the draw").toMatch(/^0[0-9a-f]{32}$/);
    const admitted = [pa, pb, pc].map((p) => Date.parse(p?.admittedAt?.timestampValue ?? ""));
    expect(admitted[0]).toBeLessThan(admitted[1] ?? 0);
    expect(admitted[1]).toBeLessThan(admitted[2] ?? 0);
    const bookings = [...(await confirmedBookings(screening)).values()].map((x) => ({ ...x, seats: [...x.seats].sort() }));
    expect(bookings.sort((x, y) => x.seats.join().localeCompare(y.seats.join()))).toEqual([
      { uid: early.uid, seats: ["A1", "A2"] },
      { uid: carol.uid, seats: ["A3", "B3"] },
      { uid: bob.uid, seats: ["B1", "B2"] },
    ]);
    const holds = (await listDocs("holds")).filter((h) => h.fields.screeningId?.stringValue === screening);
    expect(holds.map((h) => h.fields.seats?.arrayValue?.values?.length), "no hold ever passed the cap").toEqual([2, 2, 2]);
  } finally {
    await admitter.stop();
  }
});
