import QRCode from "qrcode";
import { bookTickets, callAs, createScanner, createScreening, createUser, expect, getDoc, openScanner, scanTyped, setDoor, signIn, test, ticketsOf } from "./bundle";

// The buyer's tickets (CONTRACT §13) in Chromium, at a phone's 360 px: a
// booking leads to its tickets, each with its seat, time and zone, and a QR
// code of its code; the ticket turns `in` live when a gate scans it; a
// transfer moves it to another account, whose new code works while the old
// one is refused.

const phone = { width: 360, height: 780 };

/** The drawing of a QR code's SVG (its paths), whatever the serialization (`/>` or `></path>`). */
const paths = (svg: string) => [...svg.matchAll(/ d="([^"]+)"/g)].map((m) => m[1]);
/** The SVG that qrcode draws of a code, as the tickets page asks for it. */
const qrOf = (code: string) => QRCode.toString(code, { type: "svg", errorCorrectionLevel: "M", margin: 4, color: { dark: "#000000", light: "#ffffff" } });

async function doorScreening(title: string): Promise<string> {
  const screening = await createScreening({ rows: ["A", "B", "C", "D"], seatsPerRow: 8, title });
  await setDoor(screening, { opensAt: new Date(Date.now() - 60_000), gates: ["A", "B"] });
  return screening;
}

// The live "in" can be lost by the emulator, not the page: a commit whose
// change the emulator cannot send to a listen stream the client has closed
// and it has not forgotten (the SDK restarts its stream as the page signs
// in) is answered CANCELLED after it landed, and the stream open now is not
// told (docs/testing.md, CI 2026-11-29 22:19 and 23:01: the door's retry
// found its check-in landed and answered 200; the card stayed valid). One
// retry of the whole journey, with a new buyer and screening: a page that
// does not show a scan live fails both.
test.describe("the scan shows live", () => {
  test.describe.configure({ retries: 1 });

  test("a buyer books, follows the booking to its ticket, and sees its QR code, which turns in when scanned", async ({ open }) => {
    const screening = await doorScreening("Metropolis");
    const buyer = await createUser("buyer");
    const page = await open();
    await page.setViewportSize(phone);
    await page.goto(`/?screening=${screening}`);
    await signIn(page, buyer);
    await page.locator('[data-seat="B4"]').click();
    await page.locator('[data-action="book"]').click();
    await expect(page.locator("[data-status]")).toHaveAttribute("data-code", "ok");

    // The booking names its order, and leads to its tickets.
    const link = page.locator('[data-booking] [data-action="tickets"]');
    await expect(link).toContainText(/order [A-Z0-9]{4}-[A-Z0-9]{4}/);
    await link.click();
    await expect(page).toHaveURL(/tickets\.html\?booking=/);
    const card = page.locator("[data-ticket]");
    await expect(card).toHaveCount(1);
    await expect(card).toHaveAttribute("data-ticket-state", "valid");
    await expect(card.locator(".seat-id")).toHaveText("B4");
    await expect(card.locator(".title")).toHaveText("Metropolis");
    await expect(card.locator(".when")).toContainText(/\d\d:\d\d/);

    // The QR code is the ticket's code, as qrcode draws it, and large enough
    // to be read from a phone at arm's length: most of the 360 px width.
    const [ticket] = await ticketsOf(screening);
    if (!ticket) throw new Error("no ticket stored");
    expect(await card.getAttribute("data-ticket")).toBe(ticket.ticketId);
    expect(paths(await card.locator(".qr").innerHTML())).toEqual(paths(await qrOf(ticket.code)));
    const box = await card.locator(".qr svg").boundingBox();
    expect(box?.width ?? 0).toBeGreaterThanOrEqual(280);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    await page.screenshot({ path: "test-results/screenshots/ticket-phone.png", fullPage: true });

    // A gate lets it in: the ticket says so, live. The scan waits until the
    // page follows the ticket's check-in (data-ticket-live): the emulator can
    // lose a write that lands while that listener is being set up (CI
    // 2026-11-29 22:19: scanned 0.6 s after the booking, the card stayed valid).
    await expect(card).toHaveAttribute("data-ticket-live", "");
    const scanner = await createScanner();
    const r = await callAs(scanner, "CheckIn", { screeningId: screening, gate: "A", code: ticket.code, nonce: `e2e-${crypto.randomUUID()}` });
    expect(r.status).toBe(200);
    await expect(card).toHaveAttribute("data-ticket-state", "in");
    await expect(card.locator(".state")).toContainText("gate A");
    await page.screenshot({ path: "test-results/screenshots/ticket-in-phone.png", fullPage: true });
});
});

test("a refunded booking's ticket turns cancelled live, beside the other order's valid one", async ({ open }) => {
  const screening = await doorScreening("Nosferatu");
  const buyer = await createUser("buyer");
  const kept = await bookTickets(buyer, screening, ["A1"]);
  const cancelled = await bookTickets(buyer, screening, ["A2"]);
  const page = await open();
  await page.setViewportSize(phone);
  await page.goto("/tickets.html");
  await signIn(page, buyer);
  const a1 = page.locator(`[data-ticket="${kept.get("A1")?.ticketId ?? ""}"]`);
  const a2 = page.locator(`[data-ticket="${cancelled.get("A2")?.ticketId ?? ""}"]`);
  await expect(a1).toHaveAttribute("data-ticket-state", "valid");
  await expect(a2).toHaveAttribute("data-ticket-state", "valid");
  const r = await callAs(buyer, "CancelBooking", { bookingId: cancelled.get("A2")?.bookingId });
  expect(r.status).toBe(200);
  await expect(a2).toHaveAttribute("data-ticket-state", "cancelled");
  await expect(a2.locator(".qr")).toBeHidden();
  await expect(a1).toHaveAttribute("data-ticket-state", "valid");
});

test("a transfer moves the ticket to another account with a new code; the old code is refused as reissued", async ({ open }) => {
  const screening = await doorScreening("The Conversation");
  const [alice, bob] = await Promise.all([createUser("alice"), createUser("bob")]);
  const ticket = (await bookTickets(alice, screening, ["C3"])).get("C3");
  if (!ticket) throw new Error("no ticket");
  const page = await open();
  await page.setViewportSize(phone);
  await page.goto("/tickets.html");
  await signIn(page, alice);
  const card = page.locator(`[data-ticket="${ticket.ticketId}"]`);
  await expect(card).toHaveAttribute("data-ticket-state", "valid");
  await card.locator(".transfer summary").click();
  await card.locator('[data-field="transfer-email"]').fill("nobody-at-all@example.com");
  await card.locator('[data-action="transfer"]').click();
  await expect(page.locator("[data-status]")).toHaveAttribute("data-code", "user_not_found");
  await expect(card).toHaveAttribute("data-ticket-state", "valid");

  await card.locator('[data-field="transfer-email"]').fill(bob.email);
  await card.locator('[data-action="transfer"]').click();
  await expect(page.locator("[data-status]")).toHaveAttribute("data-code", "ok");
  await expect(card).toHaveAttribute("data-ticket-state", "reissued");
  await expect(card.locator(".qr")).toBeHidden();

  const stored = await getDoc(`tickets/${ticket.ticketId}`);
  expect(stored?.fields.uid?.stringValue).toBe(bob.uid);
  expect(stored?.fields.version?.integerValue).toBe("2");
  const newCode = stored?.fields.code?.stringValue ?? "";
  expect(newCode).not.toBe(ticket.code);

  // Bob has it now, with its new code.
  const b = await open();
  await b.setViewportSize(phone);
  await b.goto("/tickets.html");
  await signIn(b, bob);
  const bobs = b.locator(`[data-ticket="${ticket.ticketId}"]`);
  await expect(bobs).toHaveAttribute("data-ticket-state", "valid");
  const want = paths(await qrOf(newCode));
  await expect.poll(async () => paths(await bobs.locator(".qr").innerHTML())).toEqual(want);

  // At the door: the old code is refused, the new one lets Bob in.
  const gate = await open();
  await openScanner(gate, screening, "A", await createScanner());
  expect(await scanTyped(gate, ticket.code)).toBe("reissued");
  await expect(gate.locator("#verdict-title")).toHaveText(/old code/i);
  await gate.screenshot({ path: "test-results/screenshots/scan-reissued-phone.png" });
  expect(await scanTyped(gate, newCode)).toBe("admitted");
  await expect(bobs).toHaveAttribute("data-ticket-state", "in");
});
