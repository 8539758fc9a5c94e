/**
 * The mutex page (CONTRACT §6): edits `critical_data/{id}` (`{content}`)
 * under the mutex `mutex_critical_data/{id}`, with the mutex client of
 * ../mutex.ts. `data-mutex-state` shows, live, whether the mutex is free,
 * this tab's (`mine`) or someone else's (`other`, with who and how long).
 * Who is the holder's public profile name (./profiles.ts), never a uid.
 */
import type { User } from "firebase/auth";
import { type Timestamp, type Unsubscribe, onSnapshot } from "firebase/firestore";
import { type Mutex, MutexHeldError, MutexNotHeldError, Mutexes, serverRead } from "../mutex";
import { services } from "./config";
import { saveProfile, shownName, watchName } from "./profiles";
import { countdown } from "./seats";
import { $, $as, Status, runAction } from "./ui";
import { mountAccount } from "./account";

const LEASE_SECONDS = 30;

type MutexState = "free" | "mine" | "other";

interface Lease {
  owner: string;
  acquiredAt: Timestamp | null;
  renewedAt: Timestamp | null;
  leaseSeconds: number;
}

async function main(): Promise<void> {
  const id = new URLSearchParams(location.search).get("id") ?? "demo";
  const statusEl = $("[data-status]");
  const status = new Status(statusEl);
  const { auth, db } = await services();
  const mutexes = new Mutexes(db, "critical_data", { leaseSeconds: LEASE_SECONDS, auth });
  const editor = $(".editor");
  const badge = $("#badge");
  const holder = $("#holder");
  const content = $as(HTMLTextAreaElement, '[data-field="content"]');
  const lockButton = $as(HTMLButtonElement, '[data-action="lock"]');
  const saveButton = $as(HTMLButtonElement, '[data-action="save"]');
  const unlockButton = $as(HTMLButtonElement, '[data-action="unlock"]');
  $("#title").textContent = `Shared note “${id}”`;

  let user: User | null = null;
  let held: Mutex | null = null;
  let stopKeepAlive: (() => void) | null = null;
  let lease: Lease | null = null;
  let saved = "";
  let busy = false;
  /** Grants this tab released (by token): their lease may linger in the listener for a moment. */
  const released = new Set<number>();
  /** Shown names by uid, from the profiles of the holders seen. */
  const names = new Map<string, string>();
  /** The live lookup of the current holder's name. */
  let watchedName: { uid: string; stop: Unsubscribe } | null = null;
  /** The holder the status line last followed (see followHolder); "" right after sign-in. */
  let holderKey = "";
  /** The words followHolder last put in the status line. */
  let note: string | null = null;

  const leaseEndMs = (l: Lease) => (l.renewedAt ? l.renewedAt.toMillis() + l.leaseSeconds * 1000 : Infinity);

  function state(): MutexState {
    if (held && !held.lost.aborted) return "mine";
    // Whether someone else's lease has ended is shown by this clock, but the
    // rules decide it with request.time when this user tries to lock.
    if (lease && leaseEndMs(lease) > Date.now() && !released.has(lease.acquiredAt?.toMillis() ?? -1)) return "other";
    return "free";
  }

  /** Keeps the name of uid (a holder) looked up, live; only one holder's at a time. */
  function followName(uid: string | undefined): void {
    if (watchedName?.uid === uid) return;
    watchedName?.stop();
    watchedName = null;
    if (!uid || uid === user?.uid) return;
    const stop = watchName(db, uid, (name) => {
      if (name) names.set(uid, name);
      else names.delete(uid);
      paint();
    });
    watchedName = { uid, stop };
  }

  /** Who holds the lease of another tab or user, for the holder line. */
  function holderName(owner: string): string {
    if (owner === user?.uid) return "you, in another tab or window";
    return names.get(owner) ?? "another user";
  }

  /** The lock as it stands, in words for the status line. */
  function describe(s: MutexState): string {
    if (s === "mine") return "You hold the lock.";
    if (s === "other" && lease) {
      if (lease.owner === user?.uid) return "You hold the lock in another tab or window.";
      return `${names.get(lease.owner) ?? "Another user"} is editing the note. You can lock it once they unlock it.`;
    }
    return "Nobody is editing the note: take the lock to edit it.";
  }

  /**
   * Keeps the status line from contradicting the badge: when the lock
   * changes hands by someone else's doing (taken, unlocked, lapsed), the
   * line says so instead of the last outcome, which no longer holds
   * ("Anyone can take the lock now" beside "Locked"). This tab's own
   * actions and the loss of its lock report themselves. A name that
   * arrives later updates the words while they are still shown.
   */
  function followHolder(s: MutexState): void {
    const key = s === "other" && lease ? `other ${lease.owner} ${String(lease.acquiredAt?.toMillis())}` : s;
    const prev = holderKey;
    holderKey = key;
    const changedHands = key !== prev && !busy && prev !== "" && prev !== "mine" && s !== "mine";
    const showingNote = key === prev && note !== null && statusEl.textContent === note;
    if (!changedHands && !showingNote) return;
    const text = describe(s);
    if (statusEl.textContent !== text) status.ok(text);
    note = text;
  }

  function paint(): void {
    const s = user ? state() : "free";
    if (editor.dataset.mutexState !== s) editor.dataset.mutexState = s;
    badge.textContent = { free: "Free", mine: "Locked by you", other: "Locked" }[s];
    if (!user) {
      holder.textContent = "Sign in to see and edit this note.";
    } else if (s === "other" && lease) {
      const since = lease.acquiredAt ? ` since ${lease.acquiredAt.toDate().toLocaleTimeString()}` : "";
      holder.textContent = `Locked by ${holderName(lease.owner)}${since}; it ends in ${countdown(leaseEndMs(lease) - Date.now())} unless they keep editing.`;
    } else if (s === "mine") {
      const me = shownName(user);
      holder.textContent = `You hold the lock${me ? ` (others see “${me}”)` : ""}; it is renewed while this page is open.`;
    } else {
      holder.textContent = "Nobody is editing.";
    }
    if (user) followHolder(s);
    // Not while an action runs: taking the lock loads the saved text into
    // the editor when its read returns, which would wipe what was typed
    // meanwhile (a CI run saved the old text over the new this way).
    content.readOnly = s !== "mine" || busy;
    if (s !== "mine" && content.value !== saved) content.value = saved;
    lockButton.disabled = !user || busy || s === "mine";
    saveButton.disabled = unlockButton.disabled = !user || busy || s !== "mine";
    // The button to press next stands out; locking a note someone else holds is only refused.
    lockButton.classList.toggle("primary", s === "free");
    saveButton.classList.toggle("primary", s === "mine");
  }

  function act(pending: string, fn: () => Promise<string>): Promise<void> {
    const setBusy = (on: boolean) => {
      busy = on;
      paint();
    };
    return runAction(status, setBusy, pending, fn, (err) => {
      if (err instanceof MutexHeldError) {
        const who = err.owner === user?.uid ? "You hold it in another tab or window" : `${names.get(err.owner) ?? "Another user"} is editing`;
        return { code: "mutex_held", message: `${who}. It frees up by ${err.until.toDate().toLocaleTimeString()} at the latest, unless they keep editing.` };
      }
      if (err instanceof MutexNotHeldError) {
        return { code: "mutex_lost", message: "Your lock ended before the save, so nothing was saved. Lock again to continue." };
      }
      return { code: "unavailable", message: `That did not work: ${err instanceof Error ? err.message : String(err)}` };
    });
  }

  function letGo(): void {
    stopKeepAlive?.();
    stopKeepAlive = null;
    held = null;
  }

  lockButton.addEventListener("click", () => {
    void act("Taking the lock…", async () => {
      const m = await mutexes.tryAcquire(id);
      held = m;
      const ka = m.keepAlive();
      stopKeepAlive = ka.stop;
      ka.signal.addEventListener("abort", () => {
        if (held !== m) return;
        letGo();
        status.error("mutex_lost", "Your lock ended (the connection dropped or it was taken over). Your unsaved text was not saved.");
        paint();
      });
      const snap = await serverRead(db, mutexes.guardedRef(id));
      saved = (snap.get("content") as string | undefined) ?? "";
      content.value = saved;
      content.focus();
      return "The note is yours to edit. Save keeps the lock; Unlock lets others in.";
    });
  });

  saveButton.addEventListener("click", () => {
    const text = content.value;
    const m = held;
    if (!m) return;
    void act("Saving…", async () => {
      await mutexes.writeUnder(m, (w) => w.set({ content: text }));
      saved = text;
      return "Saved. You still hold the lock.";
    });
  });

  unlockButton.addEventListener("click", () => {
    const m = held;
    if (!m) return;
    void act("Unlocking…", async () => {
      letGo();
      released.add(m.token.toMillis());
      await m.release();
      return "Unlocked. Anyone can take the lock now.";
    });
  });

  window.addEventListener("pagehide", () => {
    const m = held;
    letGo();
    void m?.release().catch(() => undefined); // best effort: otherwise the lease lapses by itself
  });

  let unsubscribe: Unsubscribe[] = [];
  mountAccount($("#account"), auth, status, (u) => {
    for (const un of unsubscribe) un();
    unsubscribe = [];
    letGo();
    user = u;
    lease = null;
    saved = "";
    followName(undefined);
    holderKey = "";
    note = null;
    if (u) {
      // Others see this user's name on the locks they take.
      saveProfile(db, u).catch((err: unknown) => {
        console.warn("profile not saved: others see this user as “another user”", err);
      });
      unsubscribe = [
        onSnapshot(
          mutexes.mutexRef(id),
          (snap) => {
            const data = snap.data({ serverTimestamps: "estimate" }) as Lease | undefined;
            lease = data ?? null;
            followName(lease?.owner);
            paint();
          },
          (err) => status.error("unavailable", `The lock state could not be loaded (${err.code}).`),
        ),
        onSnapshot(
          mutexes.guardedRef(id),
          (snap) => {
            saved = (snap.get("content") as string | undefined) ?? "";
            paint();
          },
          (err) => status.error("unavailable", `The note could not be loaded (${err.code}).`),
        ),
      ];
    }
    paint();
  }, () => {
    // Words that agree with the badge, and that followHolder keeps current.
    note = `Signed in. ${describe(state())}`;
    return note;
  });
  setInterval(paint, 1000);
}

main().catch((err: unknown) => {
  const status = document.querySelector<HTMLElement>("[data-status]");
  if (status) new Status(status).error("unavailable", `The page could not start: ${err instanceof Error ? err.message : String(err)}`);
  console.error(err);
});
