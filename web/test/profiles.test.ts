// The name a user shows others (src/app/profiles.ts): plain unit tests, no
// emulator needed. The rules' side is in the Go rules matrix (emulator_test.go).
import { describe, expect, it } from "vitest";
import { maxNameLength, shownName } from "../src/app/profiles";

describe("shownName", () => {
  it("is the Auth display name, else the email's local part", () => {
    expect(shownName({ displayName: "Alice Liddell", email: "alice@example.com" })).toBe("Alice Liddell");
    expect(shownName({ displayName: null, email: "bob-3dce92a5@example.com" })).toBe("bob-3dce92a5");
    expect(shownName({ displayName: "   ", email: "carol@example.com" })).toBe("carol");
    expect(shownName({ displayName: null, email: null })).toBe("");
  });

  it("fits the rules' 64 characters without halving a character", () => {
    expect(shownName({ displayName: "a".repeat(100), email: null })).toHaveLength(maxNameLength);
    const emoji = shownName({ displayName: "🙂".repeat(40), email: null }); // two UTF-16 units each
    expect(emoji).toBe("🙂".repeat(32));
    expect(shownName({ displayName: `${"a".repeat(63)}🙂`, email: null })).toBe("a".repeat(63));
  });
});
