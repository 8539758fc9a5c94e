// Best available seats in the browser (CONTRACT §11): a count picker
// (`data-field="count"`) and a button (`data-action="best"`); the server
// chooses, and the chosen seats show as the user's hold (`mine-held`).
// Judged on the data-* hooks and on what Firestore holds afterwards.
import { type Page } from "@playwright/test";
import { type Sale, confirmedBookings, createScreening, createUser, expect, listDocs, runAdmitter, signIn, test, twoUsers } from "./bundle";

const seat = (page: Page, id: string) => page.locator(`[data-seat="${id}"]`);
const action = (page: Page, name: string) => page.locator(`[data-action="${name}"]`);
const status = (page: Page) => page.locator("[data-status]");
const count = (page: Page) => page.locator('[data-field="count"]');

/** The seats a page shows as the user's hold. */
async function mineHeld(page: Page): Promise<string[]> {
  return page.locator('[data-seat][data-state="mine-held"]').evaluateAll((els) => els.map((e) => e.getAttribute("data-seat") ?? ""));
}

/** Seats side by side in one row: "D6", "D7". */
function together(seats: string[]): boolean {
  const rows = new Set(seats.map((s) => s.replace(/\d+$/, "")));
  const nums = seats.map((s) => Number(s.replace(/^\D+/, ""))).sort((x, y) => x - y);
  return rows.size === 1 && nums.every((n, i) => i === 0 || n === (nums[i - 1] ?? 0) + 1);
}

/** Live holds of a screening in Firestore, by hold: their uid and seats. */
async function heldSeats(screeningId: string): Promise<Map<string, { uid: string; seats: string[] }>> {
  const out = new Map<string, { uid: string; seats: string[] }>();
  for (const d of await listDocs("holds")) {
    if (d.fields.screeningId?.stringValue !== screeningId || d.fields.status?.stringValue !== "held") continue;
    out.set(d.id, { uid: d.fields.uid?.stringValue ?? "", seats: (d.fields.seats?.arrayValue?.values ?? []).map((v) => v.stringValue ?? "") });
  }
  return out;
}

test("two browsers asking for the best seats at the same moment get different blocks", async ({ open }) => {
  const screening = await createScreening(); // rows A-F of 12
  const { a, b, alice, bob } = await twoUsers(open, `/?screening=${screening}`);
  for (const p of [a, b]) {
    await expect(p.locator("#best-card")).toBeVisible();
    await expect(count(p)).toHaveValue("2"); // two seats to begin with
    await expect(count(p).locator("option")).toHaveCount(10);
  }
  // Both press at the same moment (the click event itself, as in the race
  // of seatmap.spec.ts: Playwright's click waits could serialize them).
  await Promise.all([action(a, "best"), action(b, "best")].map((button) => button.evaluate((el: HTMLElement) => el.click())));
  await Promise.all([expect(status(a)).toHaveAttribute("data-code", "ok"), expect(status(b)).toHaveAttribute("data-code", "ok")]);

  const [mineA, mineB] = [await mineHeld(a), await mineHeld(b)];
  expect(mineA, "alice's seats").toHaveLength(2);
  expect(mineB, "bob's seats").toHaveLength(2);
  expect(together(mineA) && together(mineB), `${mineA.join(" ")} / ${mineB.join(" ")} side by side`).toBe(true);
  expect(mineA.filter((s) => mineB.includes(s)), "a seat chosen for both").toEqual([]);
  await expect(status(a)).toContainText(/We found [A-F]\d+ and [A-F]\d+ for you/);
  // Each sees the other's block held, live.
  for (const s of mineB) await expect(seat(a, s)).toHaveAttribute("data-state", "held");
  for (const s of mineA) await expect(seat(b, s)).toHaveAttribute("data-state", "held");
  // One of them has the middle of the row two thirds back.
  expect([...mineA, ...mineB]).toEqual(expect.arrayContaining(["D6", "D7"]));

  const stored = [...(await heldSeats(screening)).values()].map((h) => ({ uid: h.uid, seats: [...h.seats].sort() }));
  expect(stored).toHaveLength(2);
  expect(stored).toEqual(
    expect.arrayContaining([
      { uid: alice.uid, seats: [...mineA].sort() },
      { uid: bob.uid, seats: [...mineB].sort() },
    ]),
  );
  await a.screenshot({ path: "test-results/screenshots/best-desktop.png", fullPage: true });
});

test("during a sale best available comes first, above the map, on a 360-px phone; too many seats together is said in words", async ({ open }) => {
  test.slow(); // a sale: join, wait for the admitter's pass, then shop
  const sale: Sale = { opensAt: new Date(Date.now() - 1000), admitPerMinute: 60, maxActive: 5, passSeconds: 300, maxSeatsPerUser: 6 };
  const screening = await createScreening({ rows: ["A", "B", "C"], seatsPerRow: 4, title: "Nosferatu", sale });
  const user = await createUser("phone");
  const admitter = runAdmitter();
  try {
    const p = await open();
    await p.setViewportSize({ width: 360, height: 780 });
    await p.goto(`/?screening=${screening}`);
    await signIn(p, user);
    await action(p, "join").click();
    await expect(p.locator("#queue")).toHaveAttribute("data-queue-state", "admitted", { timeout: 30_000 });
    await expect(p.locator("#best-card")).toBeVisible();
    await expect(p.locator("#hall")).toBeVisible();
    const card = await p.locator("#best-card").boundingBox();
    const hall = await p.locator("#hall").boundingBox();
    expect(card && hall && card.y + card.height <= hall.y, "the card is above the map").toBe(true);
    await expect(count(p).locator("option"), "1 to the sale's cap of 6").toHaveCount(6);

    // Five side by side do not fit a row of four.
    await count(p).selectOption("5");
    await action(p, "best").click();
    await expect(status(p)).toHaveAttribute("data-code", "no_seats_together");
    await expect(status(p)).toContainText("no 5 free seats side by side any more (12 seats are left)");
    expect(await mineHeld(p)).toEqual([]);

    await count(p).selectOption("3");
    await action(p, "best").click();
    await expect(status(p)).toHaveAttribute("data-code", "ok");
    const mine = await mineHeld(p);
    expect(mine, "three seats").toHaveLength(3);
    expect(together(mine), mine.join(" ")).toBe(true);
    expect(mine[0]?.startsWith("B"), `${mine.join(" ")}: row B, two thirds back of three`).toBe(true);
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, "the page scrolls sideways").toBe(0);
    await p.screenshot({ path: "test-results/screenshots/best-sale-phone-360.png", fullPage: true });

    await action(p, "confirm").click();
    await expect(status(p)).toHaveAttribute("data-code", "ok");
    await expect(p.locator("[data-booking] .seats")).toHaveText(mine.join(", ").replace(/, (\S+)$/, " and $1"));
    expect([...(await confirmedBookings(screening)).values()]).toEqual([{ uid: user.uid, seats: mine }]);
  } finally {
    await admitter.stop();
  }
});
