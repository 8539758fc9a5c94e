/**
 * The door's scanner (CONTRACT §13), `scan.html?screening=ID&gate=G`, for a
 * phone at a gate: codes from the camera or typed, a verdict at once in
 * full-screen green or red, and every scan recorded.
 *
 * Two ways to the server, one protocol:
 * - **Online**, a scan goes to `CheckIn` (HTTP): the server's transaction on
 *   `checkins/{ticketId}` decides, in one round trip, with the whole answer
 *   (`already_in` with the gate and time of the entry, `ticket_reissued`,
 *   ...), records the scan whatever its result, and answers a retry with
 *   the same nonce the same. Two gates at once: exactly one gets in.
 * - **Offline** (the browser says so, or CheckIn gives no answer in time),
 *   the scanner decides itself: the code's signature against the cached
 *   `/TicketKeys` (src/ticketcode.ts), then the door, the ticket and its
 *   entry as last seen (src/app/verdict.ts). It writes `checkins/{ticketId}`
 *   and `screenings/{id}/scans/{nonce}` in ONE batched write with the SDK,
 *   which the persistent cache queues until the network is back, and which
 *   `firestore.rules` hold to the same protocol. A queued entry that the
 *   server refuses (the ticket went in at another gate meanwhile) is a
 *   conflict: the scan is recorded again as `conflict`, and listed.
 *
 * The device remembers its entries and scans in IndexedDB (gatestore.ts),
 * so it never lets a ticket in twice, even after a reload offline, and
 * knows which scans are still waiting to upload (`data-pending`).
 */
/// <reference types="vite-plugin-pwa/client" />
import type { User } from "firebase/auth";
import {
  type Firestore,
  Timestamp,
  collection,
  doc,
  disableNetwork,
  enableNetwork,
  getDocFromServer,
  onSnapshot,
  query,
  serverTimestamp,
  waitForPendingWrites,
  where,
  writeBatch,
} from "firebase/firestore";
import { registerSW } from "virtual:pwa-register";
import { Api, ApiError } from "./api";
import { scanCamera, qrReader } from "./camera";
import { services } from "./config";
import { GateStore, type ScanRecord, type StoredEntry } from "./gatestore";
import { KeyRing, REFRESH_MS } from "./ticketkeys";
import { $, $as, Status, h } from "./ui";
import { mountAccount } from "./account";
import {
  type Direction,
  type Door,
  type Entry,
  type GateState,
  type KnownTicket,
  PASSES,
  type ScanResult,
  type Verdict,
  decide,
  nextEntry,
  resultOfError,
  verdictWords,
} from "./verdict";

const LAST_DOOR = "firelock.scan.door";
/** How long CheckIn may take before the gate decides offline. */
const ONLINE_DEADLINE_MS = 2500;

interface CheckinDoc {
  screeningId: string;
  version: number;
  state: "in" | "out";
  seq: number;
  gate: string;
  at?: Timestamp | null;
  scannedAt?: Timestamp;
  nonce?: string;
}

registerSW({ immediate: true });

/** A nonce of 22 characters (16 random bytes, base64url): unique per scan. */
function newNonce(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function entryOf(d: CheckinDoc): Entry {
  return { state: d.state, seq: d.seq, gate: d.gate, atMs: (d.at ?? d.scannedAt)?.toMillis() ?? Date.now(), ...(d.nonce ? { nonce: d.nonce } : {}) };
}

/** Of two views of one entry, the later one (a higher seq; a tie goes to the server's). */
function later(server: Entry | undefined, here: Entry | undefined): Entry | undefined {
  if (!here) return server;
  if (!server) return here;
  return here.seq > server.seq ? here : server;
}

/** Short feedback: a buzz where the device can, and a beep (high for through, low twice for refused). */
class Feedback {
  private audio: AudioContext | undefined;

  /** Call from a user gesture: browsers start audio only after one. */
  unlock(): void {
    try {
      this.audio ??= new AudioContext();
      void this.audio.resume();
    } catch {
      // no audio here: the screen and the buzz say it
    }
  }

  give(pass: boolean): void {
    if ("vibrate" in navigator) navigator.vibrate(pass ? 120 : [220, 90, 220]);
    const a = this.audio;
    if (!a || a.state !== "running") return;
    const tones = pass ? [[880, 0, 0.14]] : [[220, 0, 0.18], [220, 0.26, 0.18]];
    for (const [freq = 440, start = 0, length = 0.1] of tones) {
      const osc = a.createOscillator();
      const gain = a.createGain();
      osc.frequency.value = freq;
      osc.type = pass ? "sine" : "square";
      gain.gain.value = 0.15;
      osc.connect(gain).connect(a.destination);
      osc.start(a.currentTime + start);
      osc.stop(a.currentTime + start + length);
    }
  }
}

async function main(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const last = JSON.parse(localStorage.getItem(LAST_DOOR) ?? "{}") as { screening?: string; gate?: string };
  const screeningId = params.get("screening") ?? last.screening ?? "";
  const gate = params.get("gate") ?? last.gate ?? "";
  // How long a verdict covers the screen (ms; 0: until tapped or the next scan).
  const verdictMs = Number(params.get("verdictMs") ?? "4000");
  const status = new Status($("[data-status]"));

  const setup = $as(HTMLFormElement, "#setup");
  if (!screeningId || !gate) {
    setup.hidden = false;
    $as(HTMLInputElement, '[name="screening"]', setup).value = screeningId;
    $as(HTMLInputElement, '[name="gate"]', setup).value = gate;
  }
  setup.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const s = $as(HTMLInputElement, '[name="screening"]', setup).value.trim();
    const g = $as(HTMLInputElement, '[name="gate"]', setup).value.trim();
    location.search = new URLSearchParams({ screening: s, gate: g }).toString();
  });

  const { auth, db, functionsURL } = await services(undefined, { persistentCache: true });
  if (!screeningId || !gate) {
    mountAccount($("#account"), auth, status, () => undefined);
    return;
  }
  localStorage.setItem(LAST_DOOR, JSON.stringify({ screening: screeningId, gate }));
  document.title = `Gate ${gate} · door scanner`;
  $("#title").textContent = `Gate ${gate}`;

  const api = new Api(functionsURL, () => auth.currentUser, { attempts: 2, backoffMs: 150, timeoutMs: ONLINE_DEADLINE_MS });
  const keys = new KeyRing(() => api.ticketKeys());
  const store = await GateStore.open(screeningId);
  const feedback = new Feedback();

  // What the gate knows, live while online, from the persistent cache offline.
  let door: Door | undefined;
  const tickets = new Map<string, KnownTicket>();
  const checkins = new Map<string, Entry>();
  let user: User | null = null;
  let allowed = false;
  /** CheckIn gave no answer: decide here until the browser reports the network back. */
  let unreachable = false;
  // A CheckIn without an answer: the server cannot be reached (setReachable, below, once ready).
  let unreachableHook = () => {
    unreachable = true;
  };
  /** Scans whose queued write this session is waiting on (the rest are reconciled). */
  const inFlight = new Set<string>();

  const online = () => navigator.onLine && !unreachable;
  const direction = (): Direction => ($as(HTMLSelectElement, '[data-field="direction"]').value === "out" ? "out" : "in");
  const gateState = (): GateState => ({
    screeningId,
    gate,
    direction: direction(),
    nowMs: Date.now(),
    door,
    ticket: (id) => tickets.get(id),
    entry: (id) => later(checkins.get(id), store.entry(id)),
  });

  // ---- the screen ----

  function paintNet(): void {
    const off = !online();
    $("[data-offline]").hidden = !off;
    $("#online").hidden = off;
    const pending = store.allScans().filter((s) => s.sync === "pending").length;
    const p = $("[data-pending]");
    p.dataset.pending = String(pending);
    p.textContent = pending === 0 ? "Every scan is at the server" : `${String(pending)} scan${pending === 1 ? "" : "s"} waiting to upload`;
    p.classList.toggle("waiting", pending > 0);
  }

  function paintConflicts(): void {
    const list = $("#conflicts");
    const items = store.allScans().filter((s) => s.sync === "conflict");
    $("#conflicts-card").hidden = items.length === 0;
    list.replaceChildren(
      ...items.map((s) => {
        const when = new Date(s.scannedAtMs).toLocaleTimeString();
        const other = s.other?.gate
          ? `it had gone in at gate ${s.other.gate}${s.other.atMs ? ` at ${new Date(s.other.atMs).toLocaleTimeString()}` : ""}`
          : `the server refused it (${s.result.replace("_", " ")})`;
        return h("li", { "data-conflict": s.nonce, "data-ticket": s.ticketId ?? "" }, h("span", { class: "seats" }, `Seat ${s.seatId ?? "?"}`), h("span", {}, `let in here offline at ${when}, but ${other}`));
      }),
    );
  }

  function paintRecent(): void {
    const items = store.allScans().slice(-8).reverse();
    $("#recent").replaceChildren(
      ...items.map((s) =>
        h(
          "li",
          { "data-scan": s.nonce, "data-result": s.result, class: PASSES.has(s.result) ? "pass" : "stop" },
          h("span", { class: "seats" }, s.seatId ? `Seat ${s.seatId}` : "No seat"),
          h("span", {}, `${s.result.replace("_", " ")}${s.offline ? " (offline)" : ""}`),
          h("span", { class: "muted" }, `${new Date(s.scannedAtMs).toLocaleTimeString()}${s.sync === "pending" ? " · waiting to upload" : ""}`),
        ),
      ),
    );
  }

  const paintLists = () => {
    paintNet();
    paintConflicts();
    paintRecent();
  };

  const verdictEl = $("#verdict");
  let hideVerdict: ReturnType<typeof setTimeout> | undefined;
  /**
   * Shows a verdict. `t0` is when the code was read (performance.now):
   * `data-verdict-ms` is how long until the verdict showed, and, for a
   * verdict decided here, `data-decide-ms` how long the deciding took
   * (the signature and the local state).
   */
  function showVerdict(v: Verdict, offline: boolean, t0: number, decideMs?: number): void {
    const pass = PASSES.has(v.result);
    const w = verdictWords(v, Date.now());
    verdictEl.dataset.verdict = v.result;
    verdictEl.dataset.verdictMs = (performance.now() - t0).toFixed(2);
    if (decideMs === undefined) delete verdictEl.dataset.decideMs;
    else verdictEl.dataset.decideMs = decideMs.toFixed(2);
    verdictEl.className = `verdict ${pass ? "pass" : "stop"}`;
    $("#verdict-title").textContent = w.title;
    $("#verdict-seat").textContent = v.claims ? v.claims.seatId : "";
    const detail = w.detail.replace(/^Seat [^\s.:,]+[.:,]?\s*/, ""); // the seat shows on its own
    $("#verdict-detail").textContent = detail.charAt(0).toUpperCase() + detail.slice(1);
    $("#verdict-note").textContent = offline ? "Decided offline: it uploads when the network is back." : "";
    verdictEl.hidden = false;
    feedback.give(pass);
    clearTimeout(hideVerdict);
    if (verdictMs > 0) hideVerdict = setTimeout(() => (verdictEl.hidden = true), verdictMs);
  }
  verdictEl.addEventListener("click", () => {
    verdictEl.hidden = true;
    $as(HTMLInputElement, '[data-field="code"]').focus();
  });

  // ---- writes ----

  const iso = (ms: number) => new Date(ms).toISOString();

  /** The scan's document, as CONTRACT §13 has it. */
  function scanDoc(r: ScanRecord, result: ScanResult): Record<string, unknown> {
    const d: Record<string, unknown> = {
      gate,
      by: user?.uid ?? "",
      direction: r.direction,
      result,
      at: serverTimestamp(),
      scannedAt: Timestamp.fromMillis(r.scannedAtMs),
      offline: true,
    };
    if (r.ticketId) d.ticketId = r.ticketId;
    return d;
  }

  /** The scan's write (with its entry, for a pass): one batch, queued by the SDK while offline. */
  function write(db: Firestore, r: ScanRecord): Promise<void> {
    const batch = writeBatch(db);
    if (r.entry && r.ticketId) {
      batch.set(doc(db, "checkins", r.ticketId), {
        screeningId,
        version: r.version ?? 1,
        state: r.entry.state,
        seq: r.entry.seq,
        gate,
        at: serverTimestamp(),
        scannedAt: Timestamp.fromMillis(r.scannedAtMs),
        by: user?.uid ?? "",
        nonce: r.nonce,
        offline: true,
      });
    }
    batch.set(doc(db, "screenings", screeningId, "scans", r.nonce), scanDoc(r, r.result));
    return batch.commit();
  }

  /** Sends a scan decided here, and settles it when the server answers (whenever that is). */
  function upload(r: ScanRecord): void {
    inFlight.add(r.nonce);
    write(db, r)
      .then(
        () => settle(r, "done"),
        (err: unknown) => settleRefused(r, err),
      )
      .catch((err: unknown) => {
        // Settling needs the server (offline again?): the scan stays pending, and is reconciled later.
        console.warn(`scan ${r.nonce}: not settled yet`, err);
      })
      .finally(() => inFlight.delete(r.nonce));
  }

  async function settle(r: ScanRecord, sync: ScanRecord["sync"]): Promise<void> {
    await store.put({ ...r, sync });
    paintLists();
  }

  /**
   * The server refused a queued write. For an entry: if the ticket's entry
   * is this scan's own (CheckIn took it before its answer was lost), it is
   * done. If another gate's entry is there, this scan is a `conflict`; if
   * there is none, the ticket changed meanwhile (cancelled, transferred) or
   * the door did. Either way the scan is recorded again with that result,
   * and listed. A scan without an entry that is refused is left as it is
   * (its nonce was taken: an earlier attempt of it is there).
   */
  async function settleRefused(r: ScanRecord, err: unknown): Promise<void> {
    if (!r.entry || !r.ticketId) {
      console.warn(`scan ${r.nonce} refused by the server`, err);
      await settle(r, "done");
      return;
    }
    const snap = await getDocFromServer(doc(db, "checkins", r.ticketId));
    const held = snap.exists() ? (snap.data() as CheckinDoc) : undefined;
    if (held?.nonce === r.nonce) {
      await settle(r, "done");
      return;
    }
    let result: ScanResult = "conflict";
    if (held) {
      await store.setEntry(r.ticketId, { ...entryOf(held), ticketId: r.ticketId, screeningId });
    } else {
      await store.setEntry(r.ticketId, undefined);
      const t = await getDocFromServer(doc(db, "tickets", r.ticketId));
      const ticket = t.data() as { status?: string; version?: number } | undefined;
      result = ticket?.status === "cancelled" ? "cancelled" : ticket && ticket.version !== r.version ? "reissued" : "door_closed";
    }
    const other = held ? { gate: held.gate, ...(held.at ? { atMs: held.at.toMillis() } : {}) } : {};
    await store.put({ ...r, sync: "conflict", result, other });
    paintLists();
    try {
      const batch = writeBatch(db);
      batch.set(doc(db, "screenings", screeningId, "scans", r.nonce), scanDoc(r, result));
      await batch.commit();
    } catch (e) {
      // The nonce is taken (CheckIn recorded this scan already): the server has its own record.
      console.warn(`refused scan ${r.nonce} not recorded again`, e);
    }
    status.error(result, held ? `Seat ${r.seatId ?? "?"} had already gone in at gate ${held.gate}: this gate's offline entry was refused.` : `Seat ${r.seatId ?? "?"}: this gate's offline entry was refused (${result.replace("_", " ")}).`);
  }

  /** Scans still pending from an earlier session (a reload): settled once the SDK's queue drains. */
  async function reconcile(): Promise<void> {
    const stale = store.allScans().filter((s) => s.sync === "pending" && !inFlight.has(s.nonce));
    if (stale.length === 0 || !navigator.onLine) return;
    await waitForPendingWrites(db);
    for (const r of stale) {
      if (inFlight.has(r.nonce) || store.scan(r.nonce)?.sync !== "pending") continue;
      if (!r.entry || !r.ticketId) {
        await settle(r, "done");
        continue;
      }
      const snap = await getDocFromServer(doc(db, "checkins", r.ticketId));
      if (!snap.exists()) upload(r); // its queued write was lost: send it again
      else if ((snap.data() as CheckinDoc).nonce === r.nonce) await settle(r, "done");
      else await settleRefused(r, new Error("another entry holds the ticket"));
    }
  }

  // ---- a scan ----

  let scanning = Promise.resolve();
  /** One scan at a time, in the order read. */
  function scan(code: string): Promise<void> {
    scanning = scanning.then(() => scanOne(code.trim())).catch((err: unknown) => {
      status.error("unavailable", `The scan failed: ${err instanceof Error ? err.message : String(err)}`);
    });
    return scanning;
  }

  async function scanOne(code: string): Promise<void> {
    if (!code) return;
    if (!allowed || !user) {
      status.error("unauthenticated", "Sign in with a scanner's account first.");
      return;
    }
    const t0 = performance.now();
    const nonce = newNonce();
    const scannedAtMs = Date.now();
    const dir = direction();
    let local = await decide(code, keys.keys, gateState());
    const decideMs = performance.now() - t0; // the offline verdict: signature and local state
    if (local.problem === "unknown_key" && online()) {
      // A key newer than the cached set: fetch the set again, then judge again.
      await keys.refresh().catch(() => undefined);
      local = await decide(code, keys.keys, gateState());
    }
    const base: ScanRecord = {
      nonce,
      screeningId,
      gate,
      direction: dir,
      result: local.result,
      scannedAtMs,
      offline: false,
      sync: "done",
      ...(local.claims ? { ticketId: local.claims.ticketId, seatId: local.claims.seatId, version: local.claims.version } : {}),
    };

    if (online()) {
      try {
        const r = await api.checkIn({ screeningId, gate, code, nonce, direction: dir, scannedAt: iso(scannedAtMs) });
        const prev = gateState().entry(r.ticketId);
        const entry = { ...nextEntry(prev, dir, r.gate, Date.parse(r.at), nonce), ticketId: r.ticketId, screeningId };
        const saved = store.put({ ...base, result: r.result, ticketId: r.ticketId, seatId: r.seatId, entry }, entry);
        showVerdict({ result: r.result, claims: local.claims ?? { ticketId: r.ticketId, screeningId, seatId: r.seatId, version: 0, keyId: "" } }, false, t0);
        await saved;
        paintLists();
        return;
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        const result = resultOfError(err.code);
        if (result) {
          const v: Verdict = { ...local, result };
          if (result === "already_in" && err.details.gate) {
            v.entry = { state: "in", seq: 0, gate: err.details.gate, atMs: err.details.at ? Date.parse(err.details.at) : Date.now() };
          }
          if (err.details.screeningId) v.screeningId = err.details.screeningId;
          const saved = store.put({ ...base, result });
          showVerdict(v, false, t0);
          await saved;
          paintLists();
          return;
        }
        if (err.code !== "unavailable") {
          status.error(err.code, `The server refused the scan: ${err.message} (${err.code}).`);
          return;
        }
        // No answer: decide here, with the same nonce (a CheckIn that did land is recognised by it).
        unreachableHook();
      }
    }

    const record: ScanRecord = { ...base, offline: true, sync: "pending" };
    let entry: StoredEntry | undefined;
    if (PASSES.has(local.result) && local.claims) {
      entry = { ...nextEntry(gateState().entry(local.claims.ticketId), dir, gate, scannedAtMs, nonce), ticketId: local.claims.ticketId, screeningId };
      record.entry = entry;
    }
    // Remembered at once in memory (so the next scan sees it), in IndexedDB just after.
    const saved = store.put(record, entry);
    showVerdict(local, true, t0, decideMs);
    await saved;
    upload(record);
    paintLists();
  }

  // ---- controls ----

  const codeInput = $as(HTMLInputElement, '[data-field="code"]');
  $as(HTMLFormElement, "#typed").addEventListener("submit", (ev) => {
    ev.preventDefault();
    feedback.unlock();
    const code = codeInput.value;
    codeInput.value = "";
    void scan(code);
  });
  $('[data-action="next"]').addEventListener("click", (ev) => {
    ev.stopPropagation();
    verdictEl.hidden = true;
    codeInput.focus();
  });

  let camera: AbortController | undefined;
  const cameraOn = $as(HTMLButtonElement, '[data-action="camera"]');
  const cameraOff = $as(HTMLButtonElement, '[data-action="camera-off"]');
  const stopCamera = () => {
    camera?.abort();
    camera = undefined;
    cameraOn.hidden = false;
    cameraOff.hidden = true;
    $(".viewfinder").classList.remove("live");
  };
  cameraOn.addEventListener("click", () => {
    feedback.unlock();
    stopCamera();
    const ctl = new AbortController();
    camera = ctl;
    cameraOn.hidden = true;
    cameraOff.hidden = false;
    $("#reader").textContent = "Starting the camera…";
    void (async () => {
      try {
        const reader = await qrReader();
        $(".viewfinder").classList.add("live");
        $("#reader").textContent = `Hold a ticket's QR code in the frame (${reader.kind === "native" ? "the browser's reader" : "ZXing reader"}).`;
        await scanCamera($as(HTMLVideoElement, "#video"), reader, (code) => void scan(code), ctl.signal);
      } catch (err) {
        if (camera === ctl) stopCamera();
        $("#reader").textContent = `The camera could not start (${err instanceof Error ? err.message : String(err)}). Type or paste codes below.`;
      }
    })();
  });
  cameraOff.addEventListener("click", stopCamera);

  // ---- data ----

  await keys.loadCached();
  const paintKeys = () => {
    if (keys.keys.size === 0) status.error("no_keys", "No ticket keys yet: this scanner must be online once to fetch them.");
  };

  /**
   * Whether the server can be reached, as this page finds out: the browser's
   * `navigator.onLine` says offline for sure, but "online" only maybe (a
   * captive Wi-Fi, a hall's dead network; and a page loaded offline from the
   * service worker). So the page probes: fetching the keys (past the HTTP
   * cache) at start, on the browser's `online`, every 10 s while the server
   * cannot be reached and every 5 minutes otherwise; a CheckIn without an
   * answer counts too. While the server cannot be reached the Firestore SDK's
   * network is off (its listeners serve the cache, its writes queue); when it
   * can again, it is turned on, which sends the queue at once.
   */
  async function setReachable(yes: boolean): Promise<void> {
    const was = !unreachable;
    unreachable = !yes;
    paintNet();
    if (yes === was) return;
    if (yes) {
      await enableNetwork(db);
      void reconcile().catch(() => undefined);
    } else {
      await disableNetwork(db);
    }
  }
  async function probe(): Promise<void> {
    try {
      await keys.refresh();
      await setReachable(true);
    } catch (err) {
      if (err instanceof ApiError && err.code === "unavailable") await setReachable(false);
    }
    paintKeys();
  }
  unreachableHook = () => void setReachable(false);
  let probing: ReturnType<typeof setTimeout> | undefined;
  const probeNow = () => {
    clearTimeout(probing);
    void probe().finally(() => {
      clearTimeout(probing);
      probing = setTimeout(probeNow, unreachable ? 10_000 : REFRESH_MS);
    });
  };
  probeNow();
  window.addEventListener("online", probeNow);
  window.addEventListener("offline", () => void setReachable(false));
  // Scans whose settling failed (offline again at the wrong moment) are settled later.
  setInterval(() => {
    if (allowed) void reconcile().catch(() => undefined);
  }, 30_000);

  let stops: (() => void)[] = [];
  function listen(): void {
    const fail = (what: string) => (err: { code: string }) => status.error("unavailable", `${what} could not be read (${err.code}).`);
    stops = [
      onSnapshot(
        doc(db, "screenings", screeningId),
        { includeMetadataChanges: true }, // to learn when the door is the server's, not the cache's
        (snap) => {
          const s = snap.data() as { title?: string; startsAt?: Timestamp; door?: { opensAt: Timestamp; gates: string[]; reentry?: boolean } } | undefined;
          door = s?.door ? { opensAtMs: s.door.opensAt.toMillis(), gates: s.door.gates, reentry: s.door.reentry === true } : undefined;
          $("#title").textContent = `Gate ${gate}${s?.title ? ` · ${s.title}` : ""}`;
          const when = s?.startsAt ? s.startsAt.toDate().toLocaleString(undefined, { weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" }) : "";
          // For tests and people alike: whether the door as the server has it is known here.
          $("#when").dataset.doorState = snap.metadata.fromCache ? "cached" : !door ? "none" : !door.gates.includes(gate) ? "not-here" : Date.now() < door.opensAtMs ? "closed" : "open";
          $("#when").textContent = !s
            ? snap.metadata.fromCache
              ? "The screening is not on this device yet: it loads once the scanner is online."
              : `There is no screening ${screeningId}.`
            : !door
              ? `${when}. This screening has no door yet: every scan is refused (door closed).`
              : !door.gates.includes(gate)
                ? `${when}. Gate ${gate} is not one of this door's gates (${door.gates.join(", ")}).`
                : `${when}. Door ${Date.now() < door.opensAtMs ? `opens ${new Date(door.opensAtMs).toLocaleTimeString()}` : "open"}${door.reentry ? ", re-entry allowed" : ""}.`;
          $("label.direction").hidden = !door?.reentry;
        },
        fail("The screening"),
      ),
      onSnapshot(
        query(collection(db, "tickets"), where("screeningId", "==", screeningId)),
        (snap) => {
          for (const c of snap.docChanges()) {
            const d = c.doc.data() as { status: "valid" | "cancelled"; version: number; seatId: string };
            if (c.type === "removed") tickets.delete(c.doc.id);
            else tickets.set(c.doc.id, { status: d.status, version: d.version, seatId: d.seatId });
          }
        },
        fail("The tickets"),
      ),
      onSnapshot(
        query(collection(db, "checkins"), where("screeningId", "==", screeningId)),
        (snap) => {
          for (const c of snap.docChanges()) {
            if (c.type === "removed") checkins.delete(c.doc.id);
            else checkins.set(c.doc.id, entryOf(c.doc.data({ serverTimestamps: "estimate" }) as CheckinDoc));
          }
        },
        fail("The entries"),
      ),
    ];
  }

  mountAccount($("#account"), auth, status, (u) => {
    for (const stop of stops) stop();
    stops = [];
    user = u;
    allowed = false;
    $("#signed-out").hidden = u !== null;
    $("[data-scan-denied]").hidden = true;
    $("#scanner").hidden = true;
    if (!u) {
      stopCamera();
      return;
    }
    const cachedClaim = `firelock.scanner.${u.uid}`;
    // A fresh token (a claim granted since the last sign-in counts at once);
    // offline, the last word this device had on this user.
    void u
      .getIdTokenResult(navigator.onLine)
      .then(
        (t) => {
          const ok = t.claims.scanner === true || t.claims.operator === true;
          localStorage.setItem(cachedClaim, String(ok));
          return ok;
        },
        () => localStorage.getItem(cachedClaim) === "true",
      )
      .then((ok) => {
        if (auth.currentUser?.uid !== u.uid) return;
        allowed = ok;
        $("[data-scan-denied]").hidden = ok;
        $("#scanner").hidden = !ok;
        if (!ok) return;
        listen();
        paintLists();
        paintKeys();
        void reconcile().catch(() => undefined);
      });
  }, "Signed in. Scan away.");

  paintLists();
  setInterval(paintNet, 2000);
}

main().catch((err: unknown) => {
  const status = document.querySelector<HTMLElement>("[data-status]");
  if (status) new Status(status).error("unavailable", `The scanner could not start: ${err instanceof Error ? err.message : String(err)}`);
  console.error(err);
});
