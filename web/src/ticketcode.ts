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

/**
 * Why a code is not a ticket, as the Go decoder names it (ticket.Reason),
 * checked in this order: `malformed` (not three parts "FLT1", payload and
 * signature; a part that is not strict base64url; a signature that is not
 * 64 bytes; over 1024 bytes), `payload` (not one JSON object with exactly
 * t, s, seat, v and k, each once: strings that are not empty, v a whole
 * number from 1 in digits), `unknown_key`, `bad_signature`.
 */
export type CodeProblem = "malformed" | "payload" | "unknown_key" | "bad_signature";

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

export const CODE_PREFIX = "FLT1";
/** A code's length at most, in bytes (a real one is about 200). */
export const MAX_CODE_LENGTH = 1024;
const B64URL = /^[A-Za-z0-9_-]*$/;

/**
 * Bytes of strict unpadded base64url (no padding, no stray bits in the last
 * letter), or undefined when it is not that.
 */
export function base64urlBytes(s: string): Uint8Array<ArrayBuffer> | undefined {
  if (!B64URL.test(s) || s.length % 4 === 1) return undefined;
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4);
  const bin = atob(b64);
  // Strict: the bytes encode back to the very same letters.
  if (btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "") !== s) return undefined;
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** A code taken apart, its signature not yet checked. */
export interface DecodedCode {
  claims: TicketClaims;
  /** The signed text, `FLT1.<payload>` as the code carries it, as bytes. */
  signed: Uint8Array<ArrayBuffer>;
  /** 64 bytes. */
  signature: Uint8Array<ArrayBuffer>;
}

const malformed = (why: string) => new TicketCodeError("malformed", `not a firelock ticket: ${why}`);
const badPayload = (why: string) => new TicketCodeError("payload", `not a firelock ticket: ${why}`);

/**
 * Takes a code apart without checking its signature: what a person at a
 * gate may read off a code (which seat it names), never a verdict. Throws
 * TicketCodeError (`malformed`, `payload`) for anything that is not the format.
 */
export function decodeTicketCode(code: string): DecodedCode {
  if (new TextEncoder().encode(code).length > MAX_CODE_LENGTH) throw malformed(`longer than ${String(MAX_CODE_LENGTH)} bytes`);
  const parts = code.split(".");
  const [prefix, payload = "", sig = ""] = parts;
  if (parts.length !== 3 || prefix !== CODE_PREFIX) throw malformed("want FLT1.<payload>.<signature>");
  const json = base64urlBytes(payload);
  if (!json || payload === "") throw malformed("the payload is not base64url without padding");
  const signature = base64urlBytes(sig);
  if (!signature) throw malformed("the signature is not base64url without padding");
  if (signature.length !== 64) throw malformed(`the signature is ${String(signature.length)} bytes, not 64`);
  const claims = claimsOf(new TextDecoder().decode(json));
  return { claims, signed: new TextEncoder().encode(`${CODE_PREFIX}.${payload}`), signature };
}

/** The payload's claims, read as strictly as the Go decoder reads them. */
function claimsOf(text: string): TicketClaims {
  try {
    JSON.parse(text);
  } catch {
    throw badPayload("its payload is not one JSON value");
  }
  const fields = topLevelFields(text);
  if (!fields) throw badPayload("its payload is not a JSON object");
  const want = ["t", "s", "seat", "v", "k"];
  const seen = new Set<string>();
  for (const [k] of fields) {
    if (seen.has(k)) throw badPayload(`"${k}" appears twice`);
    seen.add(k);
  }
  if (seen.size !== want.length || !want.every((k) => seen.has(k))) throw badPayload("want exactly the keys t, s, seat, v, k");
  const raw = new Map(fields);
  const str = (k: string): string => {
    const v: unknown = JSON.parse(raw.get(k) ?? "null");
    if (typeof v !== "string" || v === "") throw badPayload(`"${k}" must be a non-empty string`);
    return v;
  };
  const ticketId = str("t");
  const screeningId = str("s");
  const seatId = str("seat");
  const keyId = str("k");
  const v = raw.get("v") ?? "";
  if (!/^[1-9][0-9]{0,8}$/.test(v)) throw badPayload(`"v" must be a whole number from 1`);
  return { ticketId, screeningId, seatId, version: Number(v), keyId };
}

/**
 * The keys of a top-level JSON object, each with its value's raw text, in
 * order and with repeats (JSON.parse keeps only a repeated key's last
 * value, and a number's text only as a number). The text is valid JSON
 * (JSON.parse took it); undefined when it is not an object.
 */
function topLevelFields(text: string): [string, string][] | undefined {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text.charAt(i))) i++;
  };
  const skipString = () => {
    i++; // the opening quote
    while (text.charAt(i) !== '"') i += text.charAt(i) === "\\" ? 2 : 1;
    i++;
  };
  const skipValue = () => {
    const c = text.charAt(i);
    if (c === '"') {
      skipString();
      return;
    }
    if (c === "{" || c === "[") {
      let depth = 0;
      do {
        const d = text.charAt(i);
        if (d === '"') {
          skipString();
          continue;
        }
        if (d === "{" || d === "[") depth++;
        else if (d === "}" || d === "]") depth--;
        i++;
      } while (depth > 0);
      return;
    }
    while (i < text.length && !",}] \t\n\r".includes(text.charAt(i))) i++;
  };
  ws();
  if (text.charAt(i) !== "{") return undefined;
  i++;
  const out: [string, string][] = [];
  ws();
  if (text.charAt(i) === "}") return out;
  for (;;) {
    ws();
    const k0 = i;
    skipString();
    const key = JSON.parse(text.slice(k0, i)) as string;
    ws();
    i++; // the colon
    ws();
    const v0 = i;
    skipValue();
    out.push([key, text.slice(v0, i)]);
    ws();
    if (text.charAt(i) === ",") {
      i++;
      continue;
    }
    return out;
  }
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
  const ok = await subtle.verify({ name: "Ed25519" }, key, d.signature, d.signed);
  if (!ok) throw new TicketCodeError("bad_signature", "the code's signature is not genuine");
  return d.claims;
}
