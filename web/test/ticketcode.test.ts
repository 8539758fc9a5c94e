// The web's reader of ticket codes (src/ticketcode.ts) against the Go
// package's own vectors (ticket/testdata/codes.json, written by
// `go test ./ticket -run TestCodeVectors -update`): the format is written
// once, in Go, and every valid code must verify here to its payload, every
// bad one be refused for the same reason, in the same order of checks.
// Node's WebCrypto does the Ed25519, as Chromium's does in the scanner.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { type TicketKeySet, TicketCodeError, decodeTicketCode, importTicketKeys, verifyTicketCode } from "../src/ticketcode";

interface Vectors {
  keys: { public: TicketKeySet };
  valid: { name: string; code: string; payload: { t: string; s: string; seat: string; v: number; k: string } }[];
  invalid: { name: string; code: string; reason: string }[];
}

const vectors = JSON.parse(readFileSync(resolve(import.meta.dirname, "../../ticket/testdata/codes.json"), "utf8")) as Vectors;

async function reasonOf(code: string, set: TicketKeySet): Promise<string> {
  try {
    await verifyTicketCode(code, await importTicketKeys(set));
    return "";
  } catch (err) {
    if (err instanceof TicketCodeError) return err.problem;
    throw err;
  }
}

describe("ticket codes, against the Go vectors", () => {
  it("has vectors of every kind", () => {
    expect(vectors.valid.length).toBeGreaterThan(0);
    expect(new Set(vectors.invalid.map((v) => v.reason))).toEqual(new Set(["malformed", "payload", "unknown_key", "bad_signature"]));
  });

  for (const v of vectors.valid) {
    it(`verifies ${v.name}`, async () => {
      const claims = await verifyTicketCode(v.code, await importTicketKeys(vectors.keys.public));
      expect(claims).toEqual({ ticketId: v.payload.t, screeningId: v.payload.s, seatId: v.payload.seat, version: v.payload.v, keyId: v.payload.k });
    });
  }

  for (const v of vectors.invalid) {
    it(`refuses ${v.name} (${v.reason})`, async () => {
      expect(await reasonOf(v.code, vectors.keys.public)).toBe(v.reason);
    });
  }

  it("reads a code's claims without the keys, and still refuses a bad format", () => {
    const v = vectors.valid[0];
    if (!v) throw new Error("no valid vector");
    expect(decodeTicketCode(v.code).claims.seatId).toBe(v.payload.seat);
    expect(() => decodeTicketCode(`${v.code}.`)).toThrow(TicketCodeError);
  });

  it("skips keys of other types in the set, and knows none of their codes", async () => {
    const keys = await importTicketKeys({ keys: [{ kty: "RSA", kid: "k1", n: "AQAB", e: "AQAB" }] });
    expect(keys.size).toBe(0);
    const v = vectors.valid[0];
    if (!v) throw new Error("no valid vector");
    await expect(verifyTicketCode(v.code, keys)).rejects.toMatchObject({ problem: "unknown_key" });
  });
});
