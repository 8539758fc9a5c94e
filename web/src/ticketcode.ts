/**
 * The ticket code of CONTRACT §13, read in the browser (and in Node): the
 * format is written once, in Go (`ticket/`), and this is its reader, tested
 * against the Go package's own vectors (ticket/testdata/codes.json).
 *
 *     FLT1.<payload>.<signature>
 *
 * `<payload>` is base64url (no padding) of the JSON
 * `{"t": ticketId, "s": screeningId, "seat": seatId, "v": version, "k": keyId}`,
 * `<signature>` base64url of the Ed25519 signature of the ASCII text
 * `FLT1.<payload>`. The keys are the JWK Set that `GET /TicketKeys` serves
 * (RFC 8037 OKP keys), checked here with WebCrypto's Ed25519: no crypto of
 * our own, and no JWT library for a format that is not a JWT.
 *
 * A code with a bad signature or an unknown key is not a ticket
 * (`TicketCodeError`, code `invalid_ticket`); whether its `v` is the ticket's
 * version is the door's question (src/app/verdict.ts), not the code's.
 */

/** What a code says, once its signature checks. */
export interface TicketClaims {
  ticketId: string;
  screeningId: string;
  seatId: string;
  /** The ticket's version when the code was made (1 at issue, + 1 at each transfer). */
  version: number;
  /** The `kid` of the key that signed it. */
  keyId: string;
}

/** Why a code is not a ticket. */
export type CodeProblem = "format" | "base64" | "json" | "fields" | "unknown_key" | "signature";

export class TicketCodeError extends Error {
  /** The §13 error code (CheckIn's `400 invalid_ticket`). */
  readonly code = "invalid_ticket";
  constructor(
    readonly problem: CodeProblem,
    message: string,
  ) {
    super(message);
    this.name = "TicketCodeError";
  }
}

/** A JWK Set of Ed25519 public keys, as `GET /TicketKeys` answers it. */
export interface TicketKeySet {
  keys: { kty: string; crv?: string; kid?: string; x?: string; [k: string]: unknown }[];
}

/** The keys of a set, ready to verify: by `kid`. */
export type TicketKeys = ReadonlyMap<string, CryptoKey>;

export const CODE_PREFIX = "FLT1.";
const B64URL = /^[A-Za-z0-9_-]*$/;

/** Bytes of unpadded base64url, or undefined when it is not that. */
export function base64urlBytes(s: string): Uint8Array | undefined {
  if (!B64URL.test(s) || s.length % 4 === 1) return undefined;
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4);
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** A code taken apart, its signature not yet checked. */
export interface DecodedCode {
  claims: TicketClaims;
  /** The signed text, `FLT1.<payload>`, as bytes. */
  signed: Uint8Array<ArrayBuffer>;
  signature: Uint8Array<ArrayBuffer>;
}

/**
 * Takes a code apart without checking its signature: what a person at a
 * gate may read off a code (which seat it names), never a verdict. Throws
 * TicketCodeError for anything that is not the format.
 */
export function decodeTicketCode(code: string): DecodedCode {
  const text = code.trim();
  if (!text.startsWith(CODE_PREFIX)) throw new TicketCodeError("format", "not a firelock ticket (it does not start with FLT1.)");
  const parts = text.slice(CODE_PREFIX.length).split(".");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "") throw new TicketCodeError("format", "not a firelock ticket (want FLT1.<payload>.<signature>)");
  const [payload = "", sig = ""] = parts;
  const json = base64urlBytes(payload);
  const signature = base64urlBytes(sig);
  if (!json || !signature) throw new TicketCodeError("base64", "the code is damaged (not base64url)");
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(json));
  } catch {
    throw new TicketCodeError("json", "the code is damaged (its payload is not JSON)");
  }
  const claims = claimsOf(raw);
  if (!claims) throw new TicketCodeError("fields", "the code is damaged (its payload lacks a field)");
  const signed = new TextEncoder().encode(CODE_PREFIX + payload);
  return { claims, signed, signature: new Uint8Array(signature) };
}

function claimsOf(raw: unknown): TicketClaims | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const o = raw as Record<string, unknown>;
  const { t, s, seat, v, k } = o;
  if (typeof t !== "string" || t === "" || typeof s !== "string" || s === "" || typeof seat !== "string" || seat === "") return undefined;
  if (typeof k !== "string" || k === "" || typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) return undefined;
  return { ticketId: t, screeningId: s, seatId: seat, version: v, keyId: k };
}

/**
 * Imports the Ed25519 keys of a JWK Set for verifying (others are skipped:
 * a later key type must not break today's scanners).
 */
export async function importTicketKeys(set: TicketKeySet, subtle: SubtleCrypto = crypto.subtle): Promise<TicketKeys> {
  const out = new Map<string, CryptoKey>();
  for (const k of set.keys) {
    if (k.kty !== "OKP" || k.crv !== "Ed25519" || typeof k.kid !== "string" || typeof k.x !== "string") continue;
    const key = await subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: k.x }, { name: "Ed25519" }, false, ["verify"]);
    out.set(k.kid, key);
  }
  return out;
}

/**
 * Checks a code against the keys: its claims when the signature of a known
 * key checks, else a TicketCodeError. Offline: nothing here asks a server.
 */
export async function verifyTicketCode(code: string, keys: TicketKeys, subtle: SubtleCrypto = crypto.subtle): Promise<TicketClaims> {
  const d = decodeTicketCode(code);
  const key = keys.get(d.claims.keyId);
  if (!key) throw new TicketCodeError("unknown_key", `the code was signed by a key this scanner does not know (${d.claims.keyId})`);
  if (d.signature.length !== 64) throw new TicketCodeError("signature", "the code's signature is not genuine");
  const ok = await subtle.verify({ name: "Ed25519" }, key, d.signature, d.signed);
  if (!ok) throw new TicketCodeError("signature", "the code's signature is not genuine");
  return d.claims;
}
