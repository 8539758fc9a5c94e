// A runnable example of the mutex client (test/example.test.ts runs it
// against the emulators): edit a shared document under its mutex.
import type { Firestore } from "firebase/firestore";
import { MutexHeldError, Mutexes } from "./mutex";

/** Appends line to critical_data/{id}.content under the document's mutex; returns the new content. */
export async function appendUnderMutex(db: Firestore, id: string, line: string): Promise<string> {
  const mutexes = new Mutexes(db, "critical_data", { leaseSeconds: 30 });
  try {
    return await mutexes.withMutex(
      id,
      async (w) => {
        // Read, then write: no one else can write between the two, because
        // the rules accept the write only in the batch that proves the mutex.
        const s = await w.get();
        const content = (s.exists() ? String(s.get("content")) + "\n" : "") + line;
        w.set({ content });
        return content;
      },
      { timeoutMs: 10_000 },
    );
  } catch (err) {
    if (err instanceof MutexHeldError) {
      // Still held after 10 s: say by whom and until when (server time).
      throw new Error(`${id} is being edited by ${err.owner} until ${err.until.toDate().toLocaleTimeString()}`, { cause: err });
    }
    throw err;
  }
}
