import { createScreening, createUser, expect, signIn, test } from "./bundle";

// Screenshots of the seat map with every state on it, at desktop and phone
// size, kept under test-results/screenshots for a person to look at.
for (const [name, viewport] of [
  ["desktop", { width: 1280, height: 860 }],
  ["phone", { width: 390, height: 844 }],
] as const) {
  test(`screenshot of the seat map, ${name}`, async ({ open }) => {
    const screening = await createScreening({ rows: ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"], seatsPerRow: 20, title: "Metropolis" });
    const [alice, bob] = await Promise.all([createUser("alice"), createUser("bob")]);
    const b = await open();
    await b.goto(`/?screening=${screening}`);
    await signIn(b, bob);
    for (const s of ["E10", "E11"]) await b.locator(`[data-seat="${s}"]`).click();
    await b.locator('[data-action="book"]').click();
    await expect(b.locator("[data-status]")).toHaveAttribute("data-code", "ok");
    await b.locator('[data-seat="G4"]').click();
    await b.locator('[data-action="hold"]').click();
    await expect(b.locator("[data-status]")).toHaveAttribute("data-code", "ok");

    const a = await open();
    await a.setViewportSize(viewport);
    await a.goto(`/?screening=${screening}`);
    await signIn(a, alice);
    await a.locator('[data-seat="F8"]').click();
    await a.locator('[data-action="book"]').click();
    await expect(a.locator('[data-seat="F8"]')).toHaveAttribute("data-state", "mine-booked");
    await a.locator('[data-seat="C15"]').click();
    await a.locator('[data-action="hold"]').click();
    await expect(a.locator('[data-seat="C15"]')).toHaveAttribute("data-state", "mine-held");
    await a.locator('[data-seat="H12"]').click();
    await a.locator('[data-seat="H13"]').click();
    await expect(a.locator('[data-seat="E10"]')).toHaveAttribute("data-state", "booked");
    await expect(a.locator('[data-seat="G4"]')).toHaveAttribute("data-state", "held");
    await a.screenshot({ path: `test-results/screenshots/seatmap-${name}.png`, fullPage: true });
  });
}
