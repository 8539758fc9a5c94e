// The waiting room from the edge (CONTRACT §14, issue #51): a waiting page
// far from the front listens to neither the sale nor its place; it polls
// SaleState, and is still let in when its turn comes.
import { type Page } from "@playwright/test";
import { type Sale, createScreening, createUser, expect, runAdmitter, setSale, signIn, test } from "./bundle";

/**
 * The documents a page asks Firestore's Listen channel to watch: every
 * target added (by path), and those still open (added, not yet removed).
 * The web SDK's getDoc is a target too, removed after its one answer: a
 * read, not a listener. (A read the rules refuse is removed by the server,
 * unseen here.)
 */
function watchListenTargets(page: Page): { added: string[]; open: Map<number, { name: string; seq: number }> } {
  const seen = { added: [] as string[], open: new Map<number, { name: string; seq: number }>() };
  page.on("request", (req) => {
    if (!req.url().includes("/google.firestore.v1.Firestore/Listen/channel")) return;
    const body = req.postData();
    if (!body) return;
    for (const [key, value] of new URLSearchParams(body)) {
      if (!/^req\d+___data__$/.test(key)) continue;
      const msg = JSON.parse(value) as { addTarget?: { targetId?: number; documents?: { documents?: string[] }; query?: { parent?: string } }; removeTarget?: number };
      if (msg.removeTarget !== undefined) seen.open.delete(msg.removeTarget);
      const t = msg.addTarget;
      if (!t) continue;
      const name = t.documents?.documents?.map((d) => d.replace(/^.*\/documents\//, "")).join(",") ?? `query:${(t.query?.parent ?? "").replace(/^.*\/documents\/?/, "")}`;
      seen.open.set(t.targetId ?? -1, { name, seq: seen.added.length });
      seen.added.push(name);
    }
  });
  return seen;
}

test("a page waiting far from the front listens to neither sales/{id} nor its place: it polls SaleState, and is let in when its turn comes", async ({ open }) => {
  test.slow();
  const sale: Sale = { opensAt: new Date(Date.now() + 300_000), admitPerMinute: 60, maxActive: 1, passSeconds: 120, maxSeatsPerUser: 2 };
  const screening = await createScreening({ rows: ["A"], seatsPerRow: 4, title: "Sunrise", sale });
  const user = await createUser("edge");
  const admitter = runAdmitter();
  try {
    const page = await open();
    const targets = watchListenTargets(page);
    const polls: string[] = [];
    page.on("request", (req) => {
      if (new URL(req.url()).pathname.endsWith("/SaleState")) polls.push(req.url());
    });
    await page.goto(`/?screening=${screening}`);
    await signIn(page, user);
    const beforeJoin = targets.added.length; // the place read before it exists, refused
    await page.locator('[data-action="join"]').click();
    const queue = page.locator("#queue");
    await expect(queue).toHaveAttribute("data-queue-state", "waiting");
    await expect(page.locator("[data-opens-countdown]")).toHaveText(/^[0-4]:[0-5]\d$/);
    await expect(queue).toHaveAttribute("data-sale-state", "scheduled");
    await expect(queue).toHaveAttribute("data-seats-left", "4"); // the admitter published; the page learnt it by polling
    await page.waitForTimeout(3000); // a few polls' worth of waiting
    // Never a listener on sales/{id}; the place read (a one-shot target) at most twice (before and after the join), none left open.
    const waitingDoc = (t: string) => t.startsWith("sales/") || t.startsWith("queue/");
    const added = targets.added.slice(beforeJoin).filter(waitingDoc);
    const stillOpen = [...targets.open.values()].filter((t) => t.seq >= beforeJoin && waitingDoc(t.name)).map((t) => t.name);
    expect(stillOpen, `listeners opened since the join: ${targets.added.slice(beforeJoin).join(", ")}`).toEqual([]);
    expect(targets.added.filter((t) => t.startsWith("sales/")), "sales/{id} never listened to").toEqual([]);
    expect(added.length, `the place read at most twice since the join: ${added.join(", ")}`).toBeLessThanOrEqual(2);
    expect(polls.length, "SaleState polls while waiting").toBeGreaterThan(0);

    // The opening: the only person in line is at the front, and is let in.
    await setSale(screening, { ...sale, opensAt: new Date(Date.now() + 2_000) });
    await expect(queue).toHaveAttribute("data-queue-state", "admitted", { timeout: 20_000 });
    await expect(page.locator("#hall")).toBeVisible();
  } finally {
    await admitter.stop();
  }
});
