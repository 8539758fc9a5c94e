import { randomUUID } from "node:crypto";
import { type Page } from "@playwright/test";
import { createUser, expect, getDoc, signIn, test, twoUsers } from "./bundle";

const editor = (page: Page) => page.locator("[data-mutex-state]");
const action = (page: Page, name: string) => page.locator(`[data-action="${name}"]`);
const content = (page: Page) => page.locator('[data-field="content"]');
const status = (page: Page) => page.locator("[data-status]");
const holder = (page: Page) => page.locator("#holder");
const badge = (page: Page) => page.locator("#badge");
/** The name the page shows for a user without a display name: the email's local part. */
const localPart = (email: string) => email.slice(0, email.indexOf("@"));

test("the mutex page with two users: one edits at a time, both see the lock and the text live", async ({ open }) => {
  const id = `note-${randomUUID().slice(0, 8)}`;
  const { a, b, alice, bob } = await twoUsers(open, `/critical.html?id=${id}`);
  await expect(editor(a)).toHaveAttribute("data-mutex-state", "free");
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "free");

  await action(a, "lock").click();
  await expect(editor(a)).toHaveAttribute("data-mutex-state", "mine");
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "other");
  // Who holds it, by name, and for how long.
  await expect(holder(b)).toContainText(`Locked by ${localPart(alice.email)}`);
  await expect(holder(b)).toContainText(/ends in 0:[0-5]\d/);
  await expect(content(b)).not.toBeEditable();
  await expect(action(b, "save")).toBeDisabled();
  await content(a).fill("Alice is typing…");
  await a.screenshot({ path: "test-results/screenshots/critical-mine.png" });
  await b.screenshot({ path: "test-results/screenshots/critical-other.png" });

  // Bob tries anyway and is told why.
  await action(b, "lock").click();
  await expect(status(b)).toHaveAttribute("data-code", "mutex_held");
  await expect(status(b)).toContainText(`${localPart(alice.email)} is editing`);
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "other");

  await content(a).fill("Alice was here.");
  await action(a, "save").click();
  await expect(status(a)).toHaveAttribute("data-code", "ok");
  await expect(editor(a), "save keeps the mutex").toHaveAttribute("data-mutex-state", "mine");
  await expect(content(b)).toHaveValue("Alice was here.");
  expect((await getDoc(`critical_data/${id}`))?.fields.content?.stringValue).toBe("Alice was here.");

  await action(a, "unlock").click();
  await expect(editor(a)).toHaveAttribute("data-mutex-state", "free");
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "free");
  expect(await getDoc(`mutex_critical_data/${id}`)).toBeUndefined();

  await action(b, "lock").click();
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "mine");
  await expect(editor(a)).toHaveAttribute("data-mutex-state", "other");
  await expect(content(b)).toHaveValue("Alice was here.");
  await content(b).fill("Bob rewrote it.");
  await action(b, "save").click();
  await expect(status(b)).toHaveAttribute("data-code", "ok");
  await expect(content(a)).toHaveValue("Bob rewrote it.");
  const lease = await getDoc(`mutex_critical_data/${id}`);
  expect(lease?.fields.owner?.stringValue).toBe(bob.uid);
  expect((await getDoc(`critical_data/${id}`))?.fields.content?.stringValue).toBe("Bob rewrote it.");
});

test("the mutex page signed out shows nothing to edit", async ({ open }) => {
  const a = await open();
  await a.goto(`/critical.html?id=note-${randomUUID().slice(0, 8)}`);
  await expect(a.locator("#holder")).toHaveText("Sign in to see and edit this note.");
  await expect(action(a, "lock")).toBeDisabled();
  await expect(content(a)).not.toBeEditable();
});

test("the mutex page names the holder, and its status line agrees with the badge when the lock changes hands", async ({ open }) => {
  const id = `note-${randomUUID().slice(0, 8)}`;
  const [alice, bob] = await Promise.all([createUser("alice", "Alice Liddell"), createUser("bob")]);
  const [a, b] = await Promise.all([open(), open()]);
  await Promise.all([a.goto(`/critical.html?id=${id}`), b.goto(`/critical.html?id=${id}`)]);
  await Promise.all([signIn(a, alice), signIn(b, bob)]);
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "free");

  // Alice (her Auth display name) takes the lock: Bob's badge, holder line and status line all say so.
  await action(a, "lock").click();
  await expect(holder(a)).toContainText("others see “Alice Liddell”");
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "other");
  await expect(badge(b)).toHaveText("Locked");
  await expect(holder(b)).toContainText("Locked by Alice Liddell since");
  await expect(status(b)).toContainText("Alice Liddell is editing");
  await expect(status(b)).not.toContainText(/take the lock|anyone can/i);
  await expect(holder(b)).not.toContainText(alice.uid);
  await b.screenshot({ path: "test-results/screenshots/critical-other-named.png" });

  // Bob tries anyway: refused, by name.
  await action(b, "lock").click();
  await expect(status(b)).toHaveAttribute("data-code", "mutex_held");
  await expect(status(b)).toContainText("Alice Liddell is editing");

  // Alice unlocks: Bob's status line no longer says she is editing.
  await action(a, "unlock").click();
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "free");
  await expect(badge(b)).toHaveText("Free");
  await expect(status(b)).toContainText("Nobody is editing");
  await expect(status(b)).toHaveAttribute("data-code", "ok");

  // Bob (no display name: his email's local part) takes it: Alice's status
  // line, which said "Unlocked. Anyone can take the lock now.", follows.
  await expect(status(a)).toContainText("Unlocked");
  await action(b, "lock").click();
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "mine");
  await expect(editor(a)).toHaveAttribute("data-mutex-state", "other");
  await expect(holder(a)).toContainText(`Locked by ${localPart(bob.email)} since`);
  await expect(status(a)).toContainText(`${localPart(bob.email)} is editing`);
  await expect(status(a)).not.toContainText(/anyone can/i);
  // What Firestore holds: each user's own profile, written by the page.
  expect((await getDoc(`profiles/${alice.uid}`))?.fields.displayName?.stringValue).toBe("Alice Liddell");
  expect((await getDoc(`profiles/${bob.uid}`))?.fields.displayName?.stringValue).toBe(localPart(bob.email));
  await a.screenshot({ path: "test-results/screenshots/critical-other-unnamed.png" });
});
