/**
 * The mutex page (CONTRACT §6): edits `critical_data/{id}` (`{content}`)
 * under the mutex `mutex_critical_data/{id}`, with the mutex client of
 * ../mutex.ts. `data-mutex-state` shows, live, whether the mutex is free,
 * this tab's (`mine`) or someone else's (`other`, with who and how long).
 */
import type { User } from "firebase/auth";
import { type Timestamp, type Unsubscribe, onSnapshot } from "firebase/firestore";
import { type Mutex, MutexHeldError, MutexNotHeldError, Mutexes, serverRead } from "../mutex";
import { services } from "./config";
import { countdown } from "./seats";
import { $, $as, Status, mountAccount, runAction } from "./ui";

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
  const status = new Status($("[data-status]"));
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

  const leaseEndMs = (l: Lease) => (l.renewedAt ? l.renewedAt.toMillis() + l.leaseSeconds * 1000 : Infinity);

  function state(): MutexState {
    if (held && !held.lost.aborted) return "mine";
    // Whether someone else's lease has ended is shown by this clock, but the
    // rules decide it with request.time when this user tries to lock.
    if (lease && leaseEndMs(lease) > Date.now() && !released.has(lease.acquiredAt?.toMillis() ?? -1)) return "other";
    return "free";
  }

  function paint(): void {
    const s = user ? state() : "free";
    if (editor.dataset.mutexState !== s) editor.dataset.mutexState = s;
    badge.textContent = { free: "Free", mine: "Locked by you", other: "Locked" }[s];
    if (!user) {
      holder.textContent = "Sign in to see and edit this note.";
    } else if (s === "other" && lease) {
      const who = lease.owner === user.uid ? "you, in another tab or window" : `user ${lease.owner}`;
      const since = lease.acquiredAt ? ` since ${lease.acquiredAt.toDate().toLocaleTimeString()}` : "";
      holder.textContent = `Locked by ${who}${since}; it ends in ${countdown(leaseEndMs(lease) - Date.now())} unless they keep editing.`;
    } else if (s === "mine") {
      holder.textContent = "You hold the lock; it is renewed while this page is open.";
    } else {
      holder.textContent = "Nobody is editing.";
    }
    content.readOnly = s !== "mine";
    if (s !== "mine" && content.value !== saved) content.value = saved;
    lockButton.disabled = !user || busy || s === "mine";
    saveButton.disabled = unlockButton.disabled = !user || busy || s !== "mine";
  }

  function act(pending: string, fn: () => Promise<string>): Promise<void> {
    const setBusy = (on: boolean) => {
      busy = on;
      paint();
    };
    return runAction(status, setBusy, pending, fn, (err) => {
      if (err instanceof MutexHeldError) {
        const who = err.owner === user?.uid ? "You hold it in another tab or window" : `User ${err.owner} is editing`;
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
    if (u) {
      unsubscribe = [
        onSnapshot(
          mutexes.mutexRef(id),
          (snap) => {
            const data = snap.data({ serverTimestamps: "estimate" }) as Lease | undefined;
            lease = data ?? null;
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
  }, "Signed in. Take the lock to edit the note.");
  setInterval(paint, 1000);
}

main().catch((err: unknown) => {
  const status = document.querySelector<HTMLElement>("[data-status]");
  if (status) new Status(status).error("unavailable", `The page could not start: ${err instanceof Error ? err.message : String(err)}`);
  console.error(err);
});
