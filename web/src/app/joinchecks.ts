// Joins by App Check result (CONTRACT §12, issue #40): what the console
// says of the places of a sale, counted by what App Check made of each
// JoinQueue call (the place's appCheck field).

import { type Firestore, collection, getCountFromServer, query, where } from "firebase/firestore";

export const APP_CHECK_RESULTS = ["valid", "missing", "invalid"] as const;
export type AppCheckResult = (typeof APP_CHECK_RESULTS)[number];
export type JoinChecks = Record<AppCheckResult, number>;

/** Counts the sale's places by App Check result: one count query each (a read per 1,000 places). */
export async function countJoinChecks(db: Firestore, screeningId: string): Promise<JoinChecks> {
  const count = async (r: AppCheckResult) =>
    (await getCountFromServer(query(collection(db, "queue"), where("screeningId", "==", screeningId), where("appCheck", "==", r)))).data().count;
  const [valid, missing, invalid] = await Promise.all([count("valid"), count("missing"), count("invalid")]);
  return { valid, missing, invalid };
}

/**
 * The console's words for them; undefined when no place has a result
 * (App Check was off for every join: nothing to say).
 */
export function joinCheckWords(c: JoinChecks): { value: string; note: string; unchecked: number } | undefined {
  const checked = c.valid + c.missing + c.invalid;
  if (checked === 0) return undefined;
  const unchecked = c.missing + c.invalid;
  return {
    value: `${c.valid.toLocaleString()} of ${checked.toLocaleString()} valid`,
    note:
      unchecked === 0
        ? "every checked join had a valid token"
        : `${c.missing.toLocaleString()} without a token, ${c.invalid.toLocaleString()} with an invalid one: places a script may hold (App Check in monitor lets them in)`,
    unchecked,
  };
}
