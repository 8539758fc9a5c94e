// Screenshots at 360×740 of every state a buyer meets (issue #50): signed
// out, choosing, held, paying, paid, cancelled, lapsed, revoked, waiting,
// admitted, sold out and the tickets, kept under
// test-results/screenshots/buyer-360-*.png for a person to look at, and
// each the same at 1280×800 (buyer-1280-*.png: the side panel's layout).
// Each state is reached as a buyer reaches it, through the real functions,
// and checked by its hook before it is taken.
import { type Page } from "@playwright/test";
import { createScreening, createUser, env, expect, revokePass, runAdmitter, signIn, test } from "./bundle";

const phone = { width: 360, height: 740 };
const desk = { width: 1280, height: 800 };
const seat = (page: Page, id: string) => page.locator(`[data-seat="${id}"]`);
const queue = (page: Page) => page.locator("#queue");
const status = (page: Page) => page.locator("[data-status]");

/** The page as the buyer sees it, and the whole page below it. */
async function shoot(page: Page, state: string): Promise<void> {
  await page.screenshot({ path: `test-results/screenshots/buyer-360-${state}.png` });
  await page.screenshot({ path: `test-results/screenshots/buyer-360-${state}-full.png`, fullPage: true });
  await page.setViewportSize(desk);
  await page.screenshot({ path: `test-results/screenshots/buyer-1280-${state}.png` });
  await page.setViewportSize(phone);
}

async function phonePage(open: () => Promise<Page>): Promise<Page> {
  const p = await open();
  await p.setViewportSize(phone);
  return p;
}

const halls = { rows: ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"], seatsPerRow: 20, title: "Metropolis", price: { amount: 900, currency: "eur", rows: { A: 1500, B: 1500 } } };

test("a buyer's own states at 360 px: signed out, choosing, held, paying, paid, tickets, cancelled", async ({ open }) => {
  const screening = await createScreening(halls);
  const p = await phonePage(open);
  await p.goto(`/?screening=${screening}`);
  await expect(p.locator("[data-bar-action]")).toHaveText("Sign in");
  await shoot(p, "signed-out");

  await signIn(p, await createUser("buyer"));
  for (const s of ["E9", "E10"]) await seat(p, s).click();
  await expect(p.locator("[data-bar-action]")).toHaveText("Hold 2 seats");
  await shoot(p, "choosing");

  await p.locator("[data-bar-action]").click();
  await expect(seat(p, "E10")).toHaveAttribute("data-state", "mine-held");
  await expect(p.locator("[data-bar-action]")).toHaveText("Pay");
  await shoot(p, "held");

  await p.locator("[data-bar-action]").click();
  await p.waitForURL((u) => u.pathname === "/checkout");
  await shoot(p, "checkout");
  await p.goBack();
  await expect(p.locator("[data-hold]")).toHaveAttribute("data-payment-state", "paying");
  await shoot(p, "paying");

  await p.locator("[data-bar-action]").click();
  await p.waitForURL((u) => u.pathname === "/checkout");
  await p.locator('[data-checkout="pay"]').click();
  await p.waitForURL((u) => u.href.startsWith(env.web) && u.pathname === "/");
  await expect(seat(p, "E10")).toHaveAttribute("data-state", "mine-booked");
  await expect(p.locator("[data-order]")).toBeInViewport();
  await shoot(p, "paid");

  const tickets = await p.locator("[data-order-tickets]").getAttribute("href");
  await p.goto(new URL(tickets ?? "", p.url()).href);
  await expect(p.locator("[data-ticket-state]")).toHaveCount(2);
  await expect(p.locator("[data-ticket-state]").first()).toHaveAttribute("data-ticket-state", "valid");
  await shoot(p, "tickets");
  await p.goto(`/?screening=${screening}`);
  await expect(seat(p, "E10")).toHaveAttribute("data-state", "mine-booked");

  const booking = p.locator("[data-booking]");
  await booking.locator('[data-action="cancel"]').click();
  await expect(booking.locator("[data-cancel-question]")).toBeVisible();
  await shoot(p, "cancel-asks");
  await booking.locator('[data-action="cancel-refund"]').click();
  await expect(status(p)).toHaveText("Cancelled E9 and E10 and refunded €18.00 in full.");
  await status(p).scrollIntoViewIfNeeded();
  await shoot(p, "cancelled");
});

// The last of a buyer's own states, a test of its own beside the one above.
test("a buyer's own states at 360 px: lapsed", async ({ open }) => {
  const screening = await createScreening(halls);
  const p = await phonePage(open);
  // A hold of 5 s that runs out.
  await p.goto(`/?screening=${screening}&holdSeconds=5`);
  await signIn(p, await createUser("buyer"));
  await seat(p, "F4").click();
  await p.locator("[data-bar-action]").click();
  await expect(seat(p, "F4")).toHaveAttribute("data-state", "mine-held");
  await expect(p.locator("[data-hold]")).toHaveAttribute("data-hold-state", "lapsed", { timeout: 15_000 });
  await expect(status(p)).toHaveAttribute("data-code", "hold_expired");
  await shoot(p, "lapsed");
});

test("a sale's states at 360 px: waiting, admitted and sold out", async ({ open }) => {
  // One row of two seats, one pass at a time: the first buyer is admitted
  // and books both, the second waits, then meets the sold-out sale.
  const sale = { opensAt: new Date(Date.now() - 30_000), admitPerMinute: 60, maxActive: 1, passSeconds: 600 };
  const screening = await createScreening({ rows: ["A"], seatsPerRow: 2, title: "Nosferatu", sale, price: { amount: 900, currency: "eur" } });
  const admitter = runAdmitter();
  try {
    const a = await phonePage(open);
    await a.goto(`/?screening=${screening}`);
    await signIn(a, await createUser("first"));
    await a.locator('[data-action="join"]').click();
    await expect(queue(a)).toHaveAttribute("data-queue-state", "admitted", { timeout: 60_000 });
    await shoot(a, "admitted");

    const w = await phonePage(open);
    await w.goto(`/?screening=${screening}`);
    await signIn(w, await createUser("second"));
    await w.locator('[data-action="join"]').click();
    await expect(queue(w)).toHaveAttribute("data-queue-state", "waiting");
    await shoot(w, "waiting");

    for (const s of ["A1", "A2"]) await seat(a, s).click();
    await a.locator("[data-bar-action]").click();
    await expect(seat(a, "A2")).toHaveAttribute("data-state", "mine-held");
    await a.locator("[data-bar-action]").click();
    await a.waitForURL((u) => u.pathname === "/checkout");
    await a.locator('[data-checkout="pay"]').click();
    await a.waitForURL((u) => u.href.startsWith(env.web) && u.pathname === "/");
    await expect(queue(w)).toHaveAttribute("data-sale-state", "soldout", { timeout: 30_000 });
    await expect(status(w)).toHaveAttribute("data-code", "sold_out");
    await shoot(w, "sold-out");
  } finally {
    await admitter.stop();
  }
});

// A test of its own (its own sale), beside the one above.
test("a sale's states at 360 px: a revoked pass", async ({ open }) => {
  const sale = { opensAt: new Date(Date.now() - 30_000), admitPerMinute: 60, maxActive: 1, passSeconds: 600 };
  const revoked = await createScreening({ rows: ["A", "B"], seatsPerRow: 8, title: "Nosferatu", sale, price: { amount: 900, currency: "eur" } });
  const admitter = runAdmitter();
  try {
    // An operator revokes an admitted buyer's pass (CONTRACT §8).
    const r = await phonePage(open);
    const buyer = await createUser("revoked");
    await r.goto(`/?screening=${revoked}`);
    await signIn(r, buyer);
    await r.locator('[data-action="join"]').click();
    await expect(queue(r)).toHaveAttribute("data-queue-state", "admitted", { timeout: 60_000 });
    await revokePass(revoked, buyer.uid);
    await expect(queue(r)).toHaveAttribute("data-queue-ended", "revoked");
    await shoot(r, "revoked");
  } finally {
    await admitter.stop();
  }
});
