import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "@playwright/test";
import {
  type StoredDoc,
  bookTickets,
  createScanner,
  createScreening,
  createUser,
  env,
  expect,
  getDoc,
  listDocs,
  makeOperator,
  openScanner,
  scanTyped,
  setDoor,
  signIn,
  test,
  watchErrors,
} from "./bundle";
import { chromiumPath } from "./chromium";
import { writeQRVideo } from "./y4m";

// The door's scanner (CONTRACT §13) in Chromium: a ticket's QR code read
// from Chromium's fake camera, two gates scanning one ticket at once, a
// gate offline that admits a ticket another gate admits online (one entry,
// one conflict), the app installable and loading with the network off, and
// the console's door panel. Screenshots at 360 px go to
// test-results/screenshots/ (scan-*.png, door-panel-phone.png).

const baseArgs = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"];
const shots = "test-results/screenshots";

async function doorScreening(title: string, seatsPerRow = 8): Promise<string> {
  const screening = await createScreening({ rows: ["A", "B", "C", "D"], seatsPerRow, title });
  await setDoor(screening, { opensAt: new Date(Date.now() - 60_000), gates: ["A", "B"] });
  return screening;
}

const resultsOf = (scans: StoredDoc[]) => scans.map((s) => s.fields.result?.stringValue ?? "").sort();

test("the scanner reads a ticket's QR code from the camera and lets it in", async () => {
  const screening = await doorScreening("Metropolis");
  const buyer = await createUser("buyer");
  const ticket = (await bookTickets(buyer, screening, ["D5"])).get("D5");
  if (!ticket) throw new Error("no ticket");
  const scanner = await createScanner();

  // A video of the ticket's QR code, as the fake camera's input.
  const dir = mkdtempSync(join(tmpdir(), "firelock-camera-"));
  const video = join(dir, "ticket.y4m");
  writeQRVideo(video, ticket.code);
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: [...baseArgs, "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream", `--use-file-for-fake-video-capture=${video}`],
  });
  try {
    const context = await browser.newContext({ baseURL: env.web, permissions: ["camera"] });
    const page = await context.newPage();
    const errors = watchErrors(page);
    await openScanner(page, screening, "A", scanner);
    await page.locator('[data-action="camera"]').click();
    const verdict = page.locator("#verdict");
    await expect(verdict).toHaveAttribute("data-verdict", "admitted");
    await expect(page.locator("#verdict-seat")).toHaveText("D5");
    await expect(page.locator("#reader")).toContainText(/reader/);
    await page.screenshot({ path: `${shots}/scan-camera-admitted-phone.png` });
    // The camera keeps seeing the same code: it is one scan, not a second.
    await page.waitForTimeout(1500);
    await expect(verdict).toHaveAttribute("data-verdict", "admitted");
    const entry = await getDoc(`checkins/${ticket.ticketId}`);
    expect(entry?.fields.gate?.stringValue).toBe("A");
    expect(entry?.fields.state?.stringValue).toBe("in");
    expect(resultsOf(await listDocs(`screenings/${screening}/scans`))).toEqual(["admitted"]);
    // The ZXing .wasm came from this app, not from a CDN.
    const wasm = await page.evaluate(() => performance.getEntriesByType("resource").map((e) => e.name).filter((n) => n.endsWith(".wasm")));
    for (const url of wasm) expect(url.startsWith(env.web)).toBe(true);
    expect(errors).toEqual([]);
  } finally {
    await browser.close();
  }
});

test("two gates scan one ticket at the same moment: exactly one lets it in", async ({ open }) => {
  const screening = await doorScreening("The Third Man");
  const buyer = await createUser("buyer");
  const ticket = (await bookTickets(buyer, screening, ["A3"])).get("A3");
  if (!ticket) throw new Error("no ticket");
  const [s1, s2] = await Promise.all([createScanner(), createScanner()]);
  const [a, b] = await Promise.all([open(), open()]);
  await Promise.all([openScanner(a, screening, "A", s1), openScanner(b, screening, "B", s2)]);
  await Promise.all([a.locator('[data-field="code"]').fill(ticket.code), b.locator('[data-field="code"]').fill(ticket.code)]);
  await Promise.all([a.locator('[data-action="scan"]').click(), b.locator('[data-action="scan"]').click()]);
  await Promise.all([expect(a.locator("#verdict")).toBeVisible(), expect(b.locator("#verdict")).toBeVisible()]);
  const [va, vb] = [await a.locator("#verdict").getAttribute("data-verdict"), await b.locator("#verdict").getAttribute("data-verdict")];
  expect([va, vb].sort()).toEqual(["admitted", "already_in"]);
  const [winner, loser] = va === "admitted" ? [a, b] : [b, a];
  // The refused gate says where it went in, and when.
  await expect(loser.locator("#verdict-detail")).toContainText(/Went in at gate [AB], (just now|\d+ s ago)/);
  await loser.screenshot({ path: `${shots}/scan-red-phone.png` });
  await winner.screenshot({ path: `${shots}/scan-green-phone.png` });
  const entry = await getDoc(`checkins/${ticket.ticketId}`);
  expect(entry?.fields.seq?.integerValue).toBe("1");
  expect(resultsOf(await listDocs(`screenings/${screening}/scans`))).toEqual(["admitted", "already_in"]);
});

test("a gate offline admits a ticket that another gate admits online: back online, one entry and one conflict listed", async ({ open }) => {
  const screening = await doorScreening("Stalker");
  const buyer = await createUser("buyer");
  const tickets = await bookTickets(buyer, screening, ["B1", "B2"]);
  const t = tickets.get("B1");
  const other = tickets.get("B2");
  if (!t || !other) throw new Error("no tickets");
  const [s1, s2] = await Promise.all([createScanner(), createScanner()]);
  const [a, b] = await Promise.all([open(), open()]);
  await Promise.all([openScanner(a, screening, "A", s1), openScanner(b, screening, "B", s2)]);

  await a.context().setOffline(true);
  await expect(a.locator("[data-offline]")).toBeVisible();
  expect(await scanTyped(a, t.code)).toBe("admitted");
  await expect(a.locator("#verdict-note")).toContainText(/offline/i);
  // The same gate never lets it in twice, offline too.
  expect(await scanTyped(a, t.code)).toBe("already_in");
  expect(await scanTyped(a, other.code)).toBe("admitted");
  await expect(a.locator("[data-pending]")).toHaveAttribute("data-pending", "3");
  await a.locator('[data-action="next"]').click();
  await a.screenshot({ path: `${shots}/scan-offline-phone.png`, fullPage: true });

  // Meanwhile gate B, online, lets the same ticket in: the server's entry.
  expect(await scanTyped(b, t.code)).toBe("admitted");

  await a.context().setOffline(false);
  await expect(a.locator("[data-offline]")).toBeHidden();
  await expect(a.locator("[data-pending]")).toHaveAttribute("data-pending", "0");
  const conflicts = a.locator("[data-conflict]");
  await expect(conflicts).toHaveCount(1);
  await expect(conflicts).toContainText("B1");
  await expect(conflicts).toContainText("gate B");
  await a.screenshot({ path: `${shots}/scan-conflict-phone.png`, fullPage: true });

  const entry = await getDoc(`checkins/${t.ticketId}`);
  expect(entry?.fields.gate?.stringValue).toBe("B");
  expect(entry?.fields.seq?.integerValue).toBe("1");
  const otherEntry = await getDoc(`checkins/${other.ticketId}`);
  expect(otherEntry?.fields.gate?.stringValue).toBe("A");
  expect(otherEntry?.fields.offline?.booleanValue).toBe(true);
  const scans = await listDocs(`screenings/${screening}/scans`);
  const ofT = scans.filter((s) => s.fields.ticketId?.stringValue === t.ticketId);
  // B's admission, A's offline one refused as a conflict, and A's own already_in.
  expect(resultsOf(ofT)).toEqual(["admitted", "already_in", "conflict"]);
  expect(ofT.find((s) => s.fields.result?.stringValue === "conflict")?.fields.gate?.stringValue).toBe("A");
});

test("the scanner is installable, and loads and scans with the network off after one visit", async () => {
  const screening = await doorScreening("Vertigo");
  const buyer = await createUser("buyer");
  const ticket = (await bookTickets(buyer, screening, ["C2"])).get("C2");
  if (!ticket) throw new Error("no ticket");
  const scanner = await createScanner();
  // A profile on disk: Chromium does not install apps from an incognito context.
  const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "firelock-profile-")), {
    executablePath: chromiumPath,
    args: baseArgs,
    baseURL: env.web,
    viewport: { width: 360, height: 740 },
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    const errors = watchErrors(page);
    await openScanner(page, screening, "A", scanner);
    await page.evaluate(async () => {
      const reg = await navigator.serviceWorker.ready;
      if (!navigator.serviceWorker.controller) await new Promise((r) => navigator.serviceWorker.addEventListener("controllerchange", r, { once: true }));
      return reg.active?.state;
    });
    const cdp = await context.newCDPSession(page);
    const { installabilityErrors } = (await cdp.send("Page.getInstallabilityErrors")) as { installabilityErrors: { errorId: string }[] };
    expect(installabilityErrors).toEqual([]);
    const manifest = (await cdp.send("Page.getAppManifest")) as { url: string; errors: unknown[] };
    expect(manifest.url).toMatch(/scan\.webmanifest$/);
    expect(manifest.errors).toEqual([]);

    await context.setOffline(true);
    await page.reload();
    await expect(page.locator("#scanner")).toBeVisible();
    await expect(page.locator("[data-offline]")).toBeVisible();
    expect(await scanTyped(page, ticket.code)).toBe("admitted");
    await expect(page.locator("[data-pending]")).toHaveAttribute("data-pending", "1");
    await context.setOffline(false);
    await expect(page.locator("[data-pending]")).toHaveAttribute("data-pending", "0");
    const entry = await getDoc(`checkins/${ticket.ticketId}`);
    expect(entry?.fields.offline?.booleanValue).toBe(true);
    expect(errors).toEqual([]);
  } finally {
    await context.close();
  }
});

test("the console's door panel follows the door live, and saves the door", async ({ open }) => {
  const screening = await doorScreening("M", 10);
  const buyer = await createUser("buyer");
  const tickets = await bookTickets(buyer, screening, ["A1", "A2", "A3", "A4", "A5"]);
  const operator = await createUser("operator");
  await makeOperator(operator);
  const ops = await open();
  await ops.setViewportSize({ width: 360, height: 780 });
  await ops.goto(`/operate.html?screening=${screening}`);
  await signIn(ops, operator);
  const panel = ops.locator("#door-panel");
  await expect(panel.locator("[data-door-expected]")).toHaveAttribute("data-value", "5");
  await expect(panel.locator("[data-door-in]")).toHaveAttribute("data-value", "0");

  const gate = await open();
  await openScanner(gate, screening, "B", await createScanner());
  for (const seat of ["A1", "A2", "A3"]) expect(await scanTyped(gate, tickets.get(seat)?.code ?? "")).toBe("admitted");
  expect(await scanTyped(gate, tickets.get("A1")?.code ?? "")).toBe("already_in");
  await expect(panel.locator("[data-door-in]")).toHaveAttribute("data-value", "3");
  await expect(panel.locator("[data-door-noshows]")).toHaveAttribute("data-value", "2");
  await expect(panel.locator('[data-door-gate="B"]')).toHaveAttribute("data-door-gate-in", "3");
  await expect(panel.locator('[data-door-gate="A"]')).toHaveAttribute("data-door-gate-in", "0");
  await expect(panel.locator('[data-chart="arrivals"] rect.bar')).not.toHaveCount(0);

  // The door's form, through OperateSale's configure-door.
  const opens = new Date(Date.now() - 120_000).toISOString().replace(/\.\d+Z$/, "Z");
  await panel.locator('[data-door-field="gates"]').fill("A, B, C");
  await panel.locator('[data-door-field="opensAt"]').fill(opens);
  await panel.locator('[data-door-field="reason"]').fill("a third gate for the crowd");
  await panel.locator('[data-action="save-door"]').click();
  await expect(ops.locator("[data-status]")).toHaveAttribute("data-code", "ok");
  await expect(panel.locator('[data-door-gate="C"]')).toHaveCount(1);
  const stored = await getDoc(`screenings/${screening}`);
  expect(stored?.fields.door?.mapValue?.fields?.gates?.arrayValue?.values?.map((v) => v.stringValue)).toEqual(["A", "B", "C"]);
  await panel.scrollIntoViewIfNeeded();
  await panel.screenshot({ path: `${shots}/door-panel-phone.png` });
});

// A measurement, not a pass/fail on time (issue #49's goal is p99 ≤ 20 ms): tagged @bench,
// it runs in `make bench`, not in `make test` (playwright.config.ts).
test("offline verdicts in Chromium: signature check and local state, timed on the scanner page", { tag: "@bench" }, async ({ open }) => {
  const screening = await doorScreening("Bench", 10);
  const buyer = await createUser("buyer");
  const codes = [...(await bookTickets(buyer, screening, ["A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10"])).values()].map((t) => t.code);
  const page = await open();
  await openScanner(page, screening, "A", await createScanner());
  await page.context().setOffline(true);
  // decide: the signature and the local state; shown: until the verdict is on the screen.
  const decide: number[] = [];
  const shown: number[] = [];
  for (let i = 0; i < 100; i++) {
    const code = codes[i % codes.length] ?? "";
    const forged = i % 3 === 2 ? `${code.slice(0, -10)}AAAAAAAAAA` : code;
    await scanTyped(page, forged);
    decide.push(Number(await page.locator("#verdict").getAttribute("data-decide-ms")));
    shown.push(Number(await page.locator("#verdict").getAttribute("data-verdict-ms")));
  }
  await page.context().setOffline(false);
  await expect(page.locator("[data-pending]")).toHaveAttribute("data-pending", "0");
  const stats = (xs: number[]) => {
    const s = [...xs].sort((x, y) => x - y);
    const q = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] ?? NaN;
    return { p50Ms: q(0.5), p99Ms: q(0.99), maxMs: s.at(-1) };
  };
  const result = { scans: decide.length, decide: stats(decide), shown: stats(shown) };
  mkdirSync("test-results", { recursive: true });
  writeFileSync("test-results/door-verdict-chromium.json", JSON.stringify(result, null, 2));
  console.log(`offline verdict in Chromium: ${JSON.stringify(result)}`);
  expect([...decide, ...shown].every((t) => Number.isFinite(t) && t > 0)).toBe(true);
});
