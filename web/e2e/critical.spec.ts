import { randomUUID } from "node:crypto";
import { type Page } from "@playwright/test";
import { expect, getDoc, test, twoUsers } from "./bundle";

const editor = (page: Page) => page.locator("[data-mutex-state]");
const action = (page: Page, name: string) => page.locator(`[data-action="${name}"]`);
const content = (page: Page) => page.locator('[data-field="content"]');
const status = (page: Page) => page.locator("[data-status]");

test("the mutex page with two users: one edits at a time, both see the lock and the text live", async ({ open }) => {
  const id = `note-${randomUUID().slice(0, 8)}`;
  const { a, b, alice, bob } = await twoUsers(open, `/critical.html?id=${id}`);
  await expect(editor(a)).toHaveAttribute("data-mutex-state", "free");
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "free");

  await action(a, "lock").click();
  await expect(editor(a)).toHaveAttribute("data-mutex-state", "mine");
  await expect(editor(b)).toHaveAttribute("data-mutex-state", "other");
  // Who holds it, and for how long.
  await expect(b.locator("#holder")).toContainText(alice.uid);
  await expect(b.locator("#holder")).toContainText(/ends in 0:[0-5]\d/);
  await expect(content(b)).not.toBeEditable();
  await expect(action(b, "save")).toBeDisabled();
  await content(a).fill("Alice is typing…");
  await a.screenshot({ path: "test-results/screenshots/critical-mine.png" });
  await b.screenshot({ path: "test-results/screenshots/critical-other.png" });

  // Bob tries anyway and is told why.
  await action(b, "lock").click();
  await expect(status(b)).toHaveAttribute("data-code", "mutex_held");
  await expect(status(b)).toContainText(`User ${alice.uid} is editing`);
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
