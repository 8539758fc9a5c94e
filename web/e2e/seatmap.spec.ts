import { type Page } from "@playwright/test";
import { randomUUID } from "node:crypto";
import { callAs, confirmedBookings, createScreening, createUser, expect, getDoc, signIn, test, twoUsers } from "./bundle";

const seat = (page: Page, id: string) => page.locator(`[data-seat="${id}"]`);
const action = (page: Page, name: string) => page.locator(`[data-action="${name}"]`);
const status = (page: Page) => page.locator("[data-status]");

test("two users side by side: a booking shows on the other map live, and only the booker can cancel it", async ({ open }) => {
  const screening = await createScreening();
  const { a, b, alice } = await twoUsers(open, `/?screening=${screening}`);

  await seat(a, "C5").click();
  await seat(a, "C6").click();
  await expect(seat(a, "C5")).toHaveAttribute("data-state", "selected");
  await expect(seat(b, "C5"), "a selection is private").toHaveAttribute("data-state", "free");
  await action(a, "book").click();

  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(seat(a, "C5")).toHaveAttribute("data-state", "mine-booked");
  await expect(seat(a, "C6")).toHaveAttribute("data-state", "mine-booked");
  await expect(seat(b, "C5")).toHaveAttribute("data-state", "booked");
  await expect(seat(b, "C6")).toHaveAttribute("data-state", "booked");
  await expect(b.locator("[data-booking]")).toHaveCount(0);

  const stored = await confirmedBookings(screening);
  expect([...stored.values()]).toEqual([{ uid: alice.uid, seats: ["C5", "C6"] }]);
  const [bookingId] = [...stored.keys()];
  await expect(a.locator(`[data-booking="${bookingId ?? ""}"]`)).toBeVisible();

  await a.locator(`[data-booking="${bookingId ?? ""}"] [data-action="cancel"]`).click();
  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(a.locator("[data-booking]")).toHaveCount(0);
  await expect(seat(b, "C5")).toHaveAttribute("data-state", "free");
  await expect(seat(a, "C6")).toHaveAttribute("data-state", "free");
  expect(await getDoc(`screenings/${screening}/seats/C5`)).toBeUndefined();
});

test("a race on one seat from two browsers: one winner, and the loser is told why", async ({ open }) => {
  const screening = await createScreening();
  const { a, b, alice, bob } = await twoUsers(open, `/?screening=${screening}`);
  await Promise.all([seat(a, "D7").click(), seat(b, "D7").click()]);
  await Promise.all([expect(seat(a, "D7")).toHaveAttribute("data-state", "selected"), expect(seat(b, "D7")).toHaveAttribute("data-state", "selected")]);

  // Both press Book, and both requests reach the functions together: each
  // page's BookSeats is held at the network until the other's is sent too.
  // (Pressing at the same moment is not enough: on a loaded machine one
  // page's booking landed, greyed the seat out on the other page and
  // disabled its button before that page's press, so no race happened, and
  // the test read the status line's earlier "ok".)
  let sent = 0;
  let bothSent: () => void = () => undefined;
  const together = new Promise<void>((resolve) => (bothSent = resolve));
  for (const page of [a, b]) {
    await page.route("**/BookSeats", async (route) => {
      if (++sent === 2) bothSent();
      await together;
      await route.continue();
    });
  }
  await Promise.all([action(a, "book").click(), action(b, "book").click()]);
  await together;
  // Both requests are out, so both status lines are pending (no code): the
  // code that appears now is each one's answer.
  for (const page of [a, b]) await expect(status(page)).toHaveAttribute("data-code", /.+/);

  const codes = [await status(a).getAttribute("data-code"), await status(b).getAttribute("data-code")];
  expect(codes.filter((c) => c === "ok"), `codes ${codes.join(", ")}`).toHaveLength(1);
  const [winner, loser, winnerUser] = codes[0] === "ok" ? [a, b, alice] : [b, a, bob];
  // The loser's request either found the seat booked or met the winner's
  // request in flight (after the client's own retries).
  await expect(status(loser)).toHaveAttribute("data-code", /^(seat_taken|seat_busy)$/);
  await expect(status(loser)).toContainText("D7");
  await expect(status(loser)).toContainText(/booked by someone else|at this very moment/);
  await expect(seat(winner, "D7")).toHaveAttribute("data-state", "mine-booked");
  await expect(seat(loser, "D7")).toHaveAttribute("data-state", "booked");

  const stored = [...(await confirmedBookings(screening)).values()];
  expect(stored).toEqual([{ uid: winnerUser.uid, seats: ["D7"] }]);
});

test("hold, countdown, confirm", async ({ open }) => {
  const screening = await createScreening();
  const { a, b, alice } = await twoUsers(open, `/?screening=${screening}`);

  await seat(a, "B3").click();
  await seat(a, "B4").click();
  await action(a, "hold").click();
  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(seat(a, "B3")).toHaveAttribute("data-state", "mine-held");
  await expect(seat(b, "B3")).toHaveAttribute("data-state", "held");

  // The default hold is 7 minutes; the countdown shows m:ss and runs down.
  const countdown = a.locator("[data-countdown]");
  await expect(countdown).toHaveText(/^[67]:[0-5]\d$/);
  const first = await countdown.textContent();
  await expect(countdown).not.toHaveText(first ?? "");

  // More time: the hold runs for its full length again, from now.
  await expect(countdown).toHaveText(/^6:5[0-7]$/, { timeout: 15_000 });
  await action(a, "extend").click();
  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(countdown).toHaveText(/^(7:00|6:59|6:58)$/);

  // Bob cannot take a held seat: the page says so.
  await seat(b, "B4").click();
  await expect(seat(b, "B4"), "a held seat cannot be selected").toHaveAttribute("data-state", "held");

  await action(a, "confirm").click();
  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(seat(a, "B3")).toHaveAttribute("data-state", "mine-booked");
  await expect(seat(a, "B4")).toHaveAttribute("data-state", "mine-booked");
  await expect(seat(b, "B4")).toHaveAttribute("data-state", "booked");
  await expect(a.locator("[data-countdown]")).toHaveCount(0);
  await expect(a.locator("[data-booking]")).toHaveCount(1);
  expect([...(await confirmedBookings(screening)).values()]).toEqual([{ uid: alice.uid, seats: ["B3", "B4"] }]);
});

test("hold, release: the seats are free for everyone at once", async ({ open }) => {
  const screening = await createScreening();
  const { a, b } = await twoUsers(open, `/?screening=${screening}`);

  await seat(a, "E9").click();
  await action(a, "hold").click();
  await expect(seat(b, "E9")).toHaveAttribute("data-state", "held");
  await action(a, "release").click();
  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(seat(a, "E9")).toHaveAttribute("data-state", "free");
  await expect(seat(b, "E9")).toHaveAttribute("data-state", "free");
  await expect(a.locator("[data-countdown]")).toHaveCount(0);
  expect(await getDoc(`screenings/${screening}/seats/E9`)).toBeUndefined();

  // ...and Bob can book it now.
  await seat(b, "E9").click();
  await action(b, "book").click();
  await expect(status(b)).toHaveAttribute("data-code", "ok");
  await expect(seat(a, "E9")).toHaveAttribute("data-state", "booked");
});

test("a hold that lapses: at 0:00 it says so, its buttons go, and the seat frees up for choosing again", async ({ open }) => {
  const screening = await createScreening();
  const alice = await createUser("alice");
  const a = await open();
  await a.goto(`/?screening=${screening}&holdSeconds=5`);
  await signIn(a, alice);
  await seat(a, "A1").click();
  await action(a, "hold").click();
  await expect(seat(a, "A1")).toHaveAttribute("data-state", "mine-held");
  const hold = a.locator("[data-hold]");
  await expect(hold.locator('[data-action="confirm"]')).toBeVisible();
  await expect(a.locator("[data-countdown]")).toHaveText("0:00", { timeout: 15_000 });
  // Nothing is offered that the server would refuse: Confirm, More time and Release go.
  await expect(hold.locator("button:visible")).toHaveCount(0);
  await expect(hold).toHaveAttribute("data-hold-state", "lapsed");
  await expect(hold).toContainText("Your hold ran out: A1 is free for anyone again.");
  await expect(status(a)).toHaveAttribute("data-code", "hold_expired");
  await expect(status(a)).toContainText("ran out");
  await expect(seat(a, "A1")).toHaveAttribute("data-state", "free");
  // Chosen again and booked: the server agrees the hold has ended.
  await seat(a, "A1").click();
  await action(a, "book").click();
  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(seat(a, "A1")).toHaveAttribute("data-state", "mine-booked");
  expect([...(await confirmedBookings(screening)).values()]).toEqual([{ uid: alice.uid, seats: ["A1"] }]);
});

test("a visitor sees the live map read-only", async ({ open }) => {
  const screening = await createScreening();
  const alice = await createUser("alice");
  const visitor = await open();
  const a = await open();
  await Promise.all([visitor.goto(`/?screening=${screening}`), a.goto(`/?screening=${screening}`)]);
  await expect(seat(visitor, "A1")).toHaveAttribute("data-state", "free");
  await expect(visitor.locator('[data-action="sign-in"]')).toBeVisible();

  await seat(visitor, "A1").click();
  await expect(status(visitor)).toHaveAttribute("data-code", "unauthenticated");
  await expect(seat(visitor, "A1")).toHaveAttribute("data-state", "free");
  await expect(action(visitor, "book")).toBeDisabled();
  await expect(action(visitor, "hold")).toBeDisabled();

  await signIn(a, alice);
  await seat(a, "F1").click();
  await action(a, "book").click();
  await expect(seat(visitor, "F1")).toHaveAttribute("data-state", "booked");
  await visitor.screenshot({ path: "test-results/screenshots/seatmap-visitor.png" });
});

test("keyboard: arrow keys move between seats, Enter chooses one", async ({ open }) => {
  const screening = await createScreening();
  const alice = await createUser("alice");
  const a = await open();
  await a.goto(`/?screening=${screening}`);
  await signIn(a, alice);
  await seat(a, "A1").focus();
  await a.keyboard.press("ArrowRight");
  await a.keyboard.press("ArrowDown");
  await expect(seat(a, "B2")).toBeFocused();
  await a.keyboard.press("Enter");
  await expect(seat(a, "B2")).toHaveAttribute("data-state", "selected");
  await expect(seat(a, "B2")).toHaveAttribute("aria-pressed", "true");
  await a.keyboard.press("Space");
  await expect(seat(a, "B2")).toHaveAttribute("data-state", "free");
  // The map is one tab stop: Tab leaves it.
  await expect(a.locator('[data-seat][tabindex="0"]')).toHaveCount(1);
});

test("own seats: a booking cancelled in the user's other tab leaves this page, even when its answer came after the query had it", async ({ open }) => {
  const screening = await createScreening();
  const [alice, bob] = await Promise.all([createUser("alice"), createUser("bob")]);
  const a = await open();
  await a.goto(`/?screening=${screening}`);
  await signIn(a, alice);
  // A slow network: BookSeats answers after the user's bookings query has the booking.
  await a.route("**/BookSeats", async (route) => {
    if (route.request().method() !== "POST") return route.continue();
    const res = await route.fetch();
    await expect(a.locator("[data-booking]")).toHaveCount(1);
    await route.fulfill({ response: res });
  });
  await seat(a, "C5").click();
  await action(a, "book").click();
  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(seat(a, "C5")).toHaveAttribute("data-state", "mine-booked");
  const [bookingId] = [...(await confirmedBookings(screening)).keys()];

  // The same user cancels it in another tab.
  const a2 = await open();
  await a2.goto(`/?screening=${screening}`);
  await signIn(a2, alice);
  await a2.locator(`[data-booking="${bookingId ?? ""}"] [data-action="cancel"]`).click();
  await expect(status(a2)).toHaveAttribute("data-code", "ok");

  await expect(a.locator("[data-booking]"), "the cancelled booking leaves My bookings").toHaveCount(0);
  await expect(seat(a, "C5"), "the cancelled booking's seat is free").toHaveAttribute("data-state", "free");
  await expect(a.locator("#left")).toHaveText(/^\d+ of \d+ seats free$/);
  const free = await a.locator("#left").textContent();
  // Someone else books it: theirs, not the user's.
  expect((await callAs(bob, "BookSeats", { screeningId: screening, seats: ["C5"], requestId: randomUUID() })).status).toBe(201);
  await expect(seat(a, "C5")).toHaveAttribute("data-state", "booked");
  await expect(a.locator("#left")).not.toHaveText(free ?? "");
});

test("own seats: signing out while a booking is on its way, the next user on the page never gets it as theirs", async ({ open }) => {
  const screening = await createScreening();
  const [alice, bob] = await Promise.all([createUser("alice"), createUser("bob")]);
  const a = await open();
  await a.goto(`/?screening=${screening}`);
  await signIn(a, alice);
  // BookSeats answers only once Alice has signed out and Bob in.
  let answer: () => void = () => undefined;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  await a.route("**/BookSeats", async (route) => {
    if (route.request().method() !== "POST") return route.continue();
    const res = await route.fetch();
    await answered;
    await route.fulfill({ response: res });
  });
  await seat(a, "C5").click();
  await action(a, "book").click();
  await expect.poll(async () => (await confirmedBookings(screening)).size).toBe(1);
  await a.locator('[data-action="sign-out"]').click();
  await expect(a.locator('[data-field="email"]')).toBeVisible();
  await signIn(a, bob);
  await expect(seat(a, "C5"), "Alice's booking, as Bob sees it").toHaveAttribute("data-state", "booked");

  const landed = a.waitForResponse((r) => r.url().endsWith("/BookSeats") && r.request().method() === "POST");
  answer();
  await landed;
  // The answer is handled within a paint; a second is ample.
  await a.waitForTimeout(1_500);
  await expect(a.locator("[data-booking]"), "Alice's booking in Bob's list").toHaveCount(0);
  await expect(seat(a, "C5"), "Alice's seat drawn as Bob's").toHaveAttribute("data-state", "booked");
  await expect(status(a), "Alice's answer told to Bob").not.toContainText("Booked C5");
});

test("own seats: a cancel or release answered draws the seats free, never someone else's on the way", async ({ open }) => {
  const screening = await createScreening();
  const alice = await createUser("alice");
  const a = await open();
  await a.goto(`/?screening=${screening}`);
  await signIn(a, alice);
  // Every state each seat takes, in order, once its action has answered.
  await a.evaluate(() => {
    const w = window as unknown as { drawn: string[] };
    w.drawn = [];
    const obs = new MutationObserver((ms) => {
      for (const m of ms) if (m.target instanceof HTMLElement) w.drawn.push(`${m.target.dataset.seat ?? ""} ${m.target.dataset.state ?? ""}`);
    });
    for (const el of document.querySelectorAll("[data-seat]")) obs.observe(el, { attributes: true, attributeFilter: ["data-state"] });
  });
  const drawn = () => a.evaluate(() => (window as unknown as { drawn: string[] }).drawn.splice(0));

  await seat(a, "C5").click();
  await action(a, "book").click();
  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(seat(a, "C5")).toHaveAttribute("data-state", "mine-booked");
  await drawn();
  await a.locator('[data-booking] [data-action="cancel"]').click();
  await expect(status(a)).toContainText("Cancelled");
  await expect(seat(a, "C5")).toHaveAttribute("data-state", "free");
  expect(await drawn(), "the cancelled seat on its way to free").toEqual(["C5 free"]);

  await seat(a, "C7").click();
  await action(a, "hold").click();
  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(seat(a, "C7")).toHaveAttribute("data-state", "mine-held");
  await drawn();
  await action(a, "release").click();
  await expect(status(a)).toContainText("Released");
  await expect(seat(a, "C7")).toHaveAttribute("data-state", "free");
  expect(await drawn(), "the released seat on its way to free").toEqual(["C7 free"]);
});
