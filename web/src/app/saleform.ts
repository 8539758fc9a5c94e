/**
 * The console's configuration form, checked in the page (CONTRACT §7, §8):
 * every field that the function would refuse is flagged at once, in the
 * function's own words ("sale.maxActive must be a whole number from 1 to
 * 100000, not the number 0"), before anything is sent. The function still
 * checks everything; what only it knows (a sale that has opened, say)
 * comes back from it as before.
 */

export type Field = "opensAt" | "admitPerMinute" | "maxActive" | "passSeconds" | "maxSeatsPerUser";
export const FIELDS: readonly Field[] = ["opensAt", "admitPerMinute", "maxActive", "passSeconds", "maxSeatsPerUser"];

/** §7's ranges of the four numbers; `optional` ones may be left empty for their default. */
export const RANGES: Record<Exclude<Field, "opensAt">, { min: number; max: number; optional: boolean }> = {
  admitPerMinute: { min: 1, max: 10_000, optional: false },
  maxActive: { min: 1, max: 100_000, optional: false },
  passSeconds: { min: 30, max: 3600, optional: true },
  maxSeatsPerUser: { min: 1, max: 10, optional: true },
};

// RFC 3339 as Go's time.RFC3339Nano reads it: a full date, T, a full time, Z or an offset.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/;

/** Whether s is an RFC 3339 time that names a real instant (no 31 February, no 25:00). */
export function isRFC3339(s: string): boolean {
  const m = RFC3339.exec(s);
  if (!m) return false;
  const [y, mo, d, hh, mi, ss] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || hh > 23 || mi > 59 || ss > 59) return false;
  if (d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) return false;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return false;
  return !Number.isNaN(Date.parse(s));
}

/** A typed value as the function's messages name it: `the number 0`, `the string "five"`. */
function described(raw: string): string {
  return /^-?\d+(\.\d+)?$/.test(raw) ? `the number ${String(Number(raw))}` : `the string ${JSON.stringify(raw)}`;
}

/**
 * What is wrong with one field's typed value, in the function's words, or
 * "" when nothing is. `startsAtMs` is the screening's start: a sale must
 * open before it.
 */
export function fieldProblem(f: Field, raw: string, startsAtMs?: number): string {
  const v = raw.trim();
  if (f === "opensAt") {
    if (!isRFC3339(v)) return `sale.opensAt must be an RFC 3339 time, e.g. "2026-12-01T18:00:00Z", not ${v === "" ? "empty" : described(v)}`;
    if (startsAtMs !== undefined && Date.parse(v) >= startsAtMs) {
      return `sale.opensAt must be before the screening's startsAt (${new Date(startsAtMs).toISOString().replace(".000Z", "Z")}), not ${v}`;
    }
    return "";
  }
  const r = RANGES[f];
  if (v === "") return r.optional ? "" : `sale.${f} must be a whole number from ${String(r.min)} to ${String(r.max)}, not empty`;
  const n = Number(v);
  if (!/^-?\d+$/.test(v) || n < r.min || n > r.max) return `sale.${f} must be a whole number from ${String(r.min)} to ${String(r.max)}, not ${described(v)}`;
  return "";
}

/** Every field's problem at once (only the fields that have one). */
export function formProblems(values: Record<Field, string>, startsAtMs?: number): Partial<Record<Field, string>> {
  const out: Partial<Record<Field, string>> = {};
  for (const f of FIELDS) {
    const p = fieldProblem(f, values[f], startsAtMs);
    if (p) out[f] = p;
  }
  return out;
}
