/**
 * What a scanner remembers across reloads, in IndexedDB (database
 * `firelock-door`): the entries it made (so the same gate never lets a
 * ticket in twice, even offline after a reload) and every scan it decided,
 * with whether its write has reached the server (`sync`). Firestore's own
 * persistent cache holds the queued writes themselves; this holds what the
 * app needs to say about them (pending, conflicts) after a reload.
 */
import type { Direction, Entry, ScanResult } from "./verdict";

export interface StoredEntry extends Entry {
  ticketId: string;
  screeningId: string;
}

/** One scan at this device. */
export interface ScanRecord {
  nonce: string;
  screeningId: string;
  gate: string;
  direction: Direction;
  ticketId?: string;
  seatId?: string;
  /** The ticket's version the code named: the entry's `version`. */
  version?: number;
  result: ScanResult;
  /** The device's clock when the code was read. */
  scannedAtMs: number;
  /** Decided here without the server. */
  offline: boolean;
  /**
   * `pending`: its write has not reached the server; `conflict`: the server
   * refused the entry this gate made offline (`result` says why: `conflict`
   * when another entry was there first).
   */
  sync: "pending" | "done" | "conflict";
  /** The entry it made, for a scan that let someone through. */
  entry?: Entry;
  /** With `conflict`: the entry the server had (another gate's), when known. */
  other?: { gate?: string; atMs?: number };
}

const DB_NAME = "firelock-door";

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error ?? new Error("IndexedDB request failed"));
  });
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = tx.onabort = () => reject(tx.error ?? new Error("IndexedDB transaction failed"));
  });
}

/** The scanner's memory of one screening at this device, mirrored in memory for the verdict's speed. */
export class GateStore {
  private readonly entries = new Map<string, StoredEntry>();
  private readonly scans = new Map<string, ScanRecord>();

  private constructor(
    private readonly db: IDBDatabase,
    readonly screeningId: string,
  ) {}

  /** Opens the store and loads what this device remembers of the screening. */
  static async open(screeningId: string, factory: IDBFactory = indexedDB): Promise<GateStore> {
    const open = factory.open(DB_NAME, 1);
    open.onupgradeneeded = () => {
      const db = open.result;
      db.createObjectStore("entries", { keyPath: "ticketId" }).createIndex("screeningId", "screeningId");
      db.createObjectStore("scans", { keyPath: "nonce" }).createIndex("screeningId", "screeningId");
    };
    const db = await request(open);
    const store = new GateStore(db, screeningId);
    const tx = db.transaction(["entries", "scans"], "readonly");
    const [entries, scans] = await Promise.all([
      request(tx.objectStore("entries").index("screeningId").getAll(screeningId) as IDBRequest<StoredEntry[]>),
      request(tx.objectStore("scans").index("screeningId").getAll(screeningId) as IDBRequest<ScanRecord[]>),
    ]);
    for (const e of entries) store.entries.set(e.ticketId, e);
    for (const s of scans) store.scans.set(s.nonce, s);
    return store;
  }

  /** The entry this device made or last learned of. */
  entry(ticketId: string): StoredEntry | undefined {
    return this.entries.get(ticketId);
  }

  /** Every scan remembered, oldest first. */
  allScans(): ScanRecord[] {
    return [...this.scans.values()].sort((a, b) => a.scannedAtMs - b.scannedAtMs);
  }

  scan(nonce: string): ScanRecord | undefined {
    return this.scans.get(nonce);
  }

  /**
   * Remembers a scan (and its entry, if it made one): in memory at once
   * (before this returns its promise), in IndexedDB in one transaction.
   */
  async put(scan: ScanRecord, entry?: StoredEntry): Promise<void> {
    this.scans.set(scan.nonce, scan);
    if (entry) this.entries.set(entry.ticketId, entry);
    const tx = this.db.transaction(["entries", "scans"], "readwrite");
    tx.objectStore("scans").put(scan);
    if (entry) tx.objectStore("entries").put(entry);
    await done(tx);
  }

  /** Forgets an entry this device believed in (the server refused it, or holds another). */
  async setEntry(ticketId: string, entry: StoredEntry | undefined): Promise<void> {
    const tx = this.db.transaction("entries", "readwrite");
    if (entry) {
      this.entries.set(ticketId, entry);
      tx.objectStore("entries").put(entry);
    } else {
      this.entries.delete(ticketId);
      tx.objectStore("entries").delete(ticketId);
    }
    await done(tx);
  }

  close(): void {
    this.db.close();
  }
}
