/**
 * Public profiles, `profiles/{uid}`: `{displayName}`, the name a user shows
 * other users. A lease names only its holder's uid (CONTRACT §1 allows no
 * other field), so the mutex page looks the name up here. firestore.rules
 * let only the user write their own profile, a name of 1 to 64 characters,
 * and any signed-in user read one by uid.
 */
import type { User } from "firebase/auth";
import { type DocumentReference, type Firestore, type Unsubscribe, doc, onSnapshot, setDoc } from "firebase/firestore";

/** The longest name the rules accept. */
export const maxNameLength = 64;

const profileRef = (db: Firestore, uid: string): DocumentReference => doc(db, "profiles", uid);

/**
 * The name a user shows: the display name of their Auth profile, else the
 * local part of their email; cut to 64 characters (UTF-16 units, never
 * halving a character, so the rules' count is within bounds either way).
 * Empty when the account has neither.
 */
export function shownName(user: Pick<User, "displayName" | "email">): string {
  const email = user.email ?? "";
  const at = email.indexOf("@");
  const name = user.displayName?.trim() || (at >= 0 ? email.slice(0, at) : email).trim();
  let out = "";
  for (const ch of name) {
    if (out.length + ch.length > maxNameLength) break;
    out += ch;
  }
  return out;
}

/** Writes the signed-in user's profile with their {@link shownName}; nothing for an account without one. */
export async function saveProfile(db: Firestore, user: User): Promise<void> {
  const displayName = shownName(user);
  if (displayName) await setDoc(profileRef(db, user.uid), { displayName });
}

/** Calls onName with uid's name, live: undefined while there is no profile (or it cannot be read). */
export function watchName(db: Firestore, uid: string, onName: (name: string | undefined) => void): Unsubscribe {
  return onSnapshot(
    profileRef(db, uid),
    (snap) => {
      const name: unknown = snap.get("displayName");
      onName(typeof name === "string" && name !== "" ? name : undefined);
    },
    () => {
      onName(undefined);
    },
  );
}
