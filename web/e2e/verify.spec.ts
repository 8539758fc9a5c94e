// A sale for verified email addresses (CONTRACT §12): the queue screen says
// so before the join, a join without a verified address is refused in
// words (403 email_not_verified) and writes nothing, the page sends the
// verification email (the Auth emulator keeps it), and once its link is
// opened the same user joins.
import { createScreening, createUser, env, expect, listDocs, signIn, test } from "./bundle";

interface OobCode {
  email: string;
  requestType: string;
  oobLink: string;
}

test("a sale for verified emails: refused, verified through the emailed link, then joined", async ({ open }) => {
  const screening = await createScreening({
    rows: ["A", "B"],
    seatsPerRow: 8,
    sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5, requireVerifiedEmail: true },
  });
  const fan = await createUser("unverified");
  const page = await open();
  await page.goto(`/?screening=${screening}`);
  await signIn(page, fan);
  const verify = page.locator("[data-verify]");
  await expect(verify).toBeVisible();
  await expect(verify).toContainText("verified email addresses");

  // Joining anyway is refused, in words, and leaves no place.
  await page.locator('[data-action="join"]').click();
  const status = page.locator("[data-status]");
  await expect(status).toHaveAttribute("data-code", "email_not_verified");
  await expect(status).toContainText("Send yourself the verification email");
  const places = async () => (await listDocs("queue")).filter((d) => d.fields.screeningId?.stringValue === screening);
  expect(await places()).toHaveLength(0);

  // The page sends the verification email; the Auth emulator keeps its link.
  await page.locator('[data-action="send-verification"]').click();
  await expect(status).toHaveAttribute("data-code", "ok");
  await expect(status).toContainText(fan.email);
  const res = await fetch(`http://${env.auth}/emulator/v1/projects/${env.project}/oobCodes`);
  const { oobCodes } = (await res.json()) as { oobCodes: OobCode[] };
  const code = oobCodes.find((c) => c.email === fan.email && c.requestType === "VERIFY_EMAIL");
  expect(code, "a verification email for the user").toBeDefined();
  // The user opens the link (the emulator applies the code).
  const applied = await fetch(code?.oobLink ?? "");
  expect(applied.ok).toBe(true);

  await page.locator('[data-action="verified"]').click();
  await expect(status).toHaveAttribute("data-code", "ok");
  await expect(verify).toBeHidden();
  await page.locator('[data-action="join"]').click();
  await expect(page.locator("#queue")).toHaveAttribute("data-queue-state", "waiting");
  expect(await places()).toHaveLength(1);
  await page.screenshot({ path: "test-results/screenshots/verified-join.png", fullPage: true });
});
