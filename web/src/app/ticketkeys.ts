/**
 * The ticket keys at a gate: the JWK Set of `GET /TicketKeys`, kept in
 * localStorage so that a scanner that starts offline still verifies codes,
 * and fetched again whenever the page is online (at start, on coming back
 * online, and every 5 minutes, the set's max-age). A key the server drops
 * stays until the next successful fetch.
 */
import { type TicketKeySet, type TicketKeys, importTicketKeys } from "../ticketcode";

const STORAGE_KEY = "firelock.ticketKeys";
export const REFRESH_MS = 5 * 60_000;

interface Stored {
  set: TicketKeySet;
  fetchedAtMs: number;
}

export class KeyRing {
  keys: TicketKeys = new Map();
  fetchedAtMs: number | undefined;

  constructor(private readonly fetchSet: () => Promise<TicketKeySet>) {}

  /** The keys kept from the last fetch, if any. */
  async loadCached(): Promise<void> {
    const raw = localStorage.getItem(STORAGE_KEY);
    if (!raw) return;
    try {
      const s = JSON.parse(raw) as Stored;
      this.keys = await importTicketKeys(s.set);
      this.fetchedAtMs = s.fetchedAtMs;
    } catch {
      localStorage.removeItem(STORAGE_KEY); // unreadable: fetched again when online
    }
  }

  /** Fetches the set and keeps it; throws when it cannot be had (offline). */
  async refresh(): Promise<void> {
    const set = await this.fetchSet();
    this.keys = await importTicketKeys(set);
    this.fetchedAtMs = Date.now();
    localStorage.setItem(STORAGE_KEY, JSON.stringify({ set, fetchedAtMs: this.fetchedAtMs } satisfies Stored));
  }
}
