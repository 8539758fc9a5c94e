/**
 * Client mutexes on Firestore (CONTRACT §2), for web and Node apps on the
 * official Firebase JS SDK, under firelock's `firestore.rules`.
 *
 * A document `{collection}/{id}` is guarded by the lease document
 * `mutex_{collection}/{id}`: `{owner, acquiredAt, renewedAt, leaseSeconds}`,
 * held while `request.time < renewedAt + leaseSeconds`. The owner is the
 * signed-in user's uid. Every write goes to the server and the rules judge it
 * with `request.time`, so this client never decides by its own clock whether
 * another user's lease has ended: it asks, and the rules answer.
 *
 * - A grant is one write: a create, or a takeover that the rules allow only
 *   once the lease has ended. Of two racing clients the rules let exactly one
 *   through.
 * - The fencing token is the grant's `acquiredAt` (the server's time). A
 *   renewal, a release and the writes of {@link withMutex} name it, so a
 *   stale tab of the same user cannot act on a newer grant.
 * - Leases taken here and by the Go library (`lock/`, Admin SDK) respect each
 *   other: same documents, same state machine.
 *
 * @example
 * ```ts
 * import { getFirestore } from "firebase/firestore";
 * import { Mutexes } from "./mutex";
 *
 * const mutexes = new Mutexes(getFirestore(app), "critical_data", { leaseSeconds: 30 });
 * await mutexes.withMutex("doc-1", async (w) => {
 *   w.set({ content: "edited under the mutex" }); // committed with the mutex check
 * });
 * ```
 *
 * @module
 */
import {
  type DocumentData,
  type DocumentReference,
  type DocumentSnapshot,
  type Firestore,
  type FirestoreError,
  type UpdateData,
  Timestamp,
  doc,
  onSnapshot,
  runTransaction,
  serverTimestamp,
  setDoc,
  writeBatch,
} from "firebase/firestore";
import { type Auth, getAuth } from "firebase/auth";

/** The §1 lease document as stored. */
export interface LeaseDoc {
  owner: string;
  acquiredAt: Timestamp;
  renewedAt: Timestamp;
  leaseSeconds: number;
  expireAt?: Timestamp;
}

/** Options of a {@link Mutexes}. */
export interface MutexOptions {
  /** Length of a lease, 1 to 300 whole seconds (the rules' bounds). Default 30. */
  leaseSeconds?: number;
  /** The Auth instance whose signed-in user owns the mutexes. Default: getAuth(db.app). */
  auth?: Auth;
}

/** Options of {@link Mutexes.acquire}. */
export interface AcquireOptions {
  /** Give up when this signal aborts (the error is the signal's reason). */
  signal?: AbortSignal;
  /** Give up after this many milliseconds with a {@link MutexHeldError}. Default: wait for as long as it takes. */
  timeoutMs?: number;
}

/** Base class of this module's errors. */
export class MutexError extends Error {
  constructor(
    message: string,
    /** The guarded document's id. */
    readonly id: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Another holder has the mutex. `owner` and `until` are what the lease
 * document says; `until` is in the server's time (`renewedAt + leaseSeconds`).
 */
export class MutexHeldError extends MutexError {
  constructor(
    id: string,
    readonly owner: string,
    readonly until: Timestamp,
  ) {
    super(`mutex ${id} is held by ${owner} until ${until.toDate().toISOString()} (server time)`, id);
  }
}

/** The lease is no longer this grant's: it ended, was released, or was taken over. */
export class MutexNotHeldError extends MutexError {
  constructor(id: string, detail: string) {
    super(`mutex ${id} is not held: ${detail}`, id);
  }
}

/** The rules refused for another reason than a held mutex (signed out, bad lease length). */
export class MutexPermissionError extends MutexError {
  constructor(id: string, cause: unknown) {
    super(`mutex ${id}: permission denied (${cause instanceof Error ? cause.message : String(cause)}; signed in?)`, id, { cause });
  }
}

/** Writes to the guarded document, committed in one batch with the mutex check. */
export interface GuardedWriter {
  /** The guarded document as the server holds it now (no one else can write it while the mutex is held). */
  get(): Promise<DocumentSnapshot>;
  set(data: DocumentData): void;
  update(data: UpdateData<DocumentData>): void;
  delete(): void;
}

/** A held mutex: one grant, identified by its fencing token. */
export class Mutex {
  private lostController = new AbortController();
  /**
   * @internal The local monotonic time (performance.now) taken before the
   * request of the last write that set renewedAt: the lease surely lasts
   * until validFrom + leaseSeconds on this machine's clock, whatever the
   * server's clock says. Only this holder's own lease is measured so.
   */
  validFrom: number;

  constructor(
    private readonly owner: Mutexes,
    /** The guarded document's id. */
    readonly id: string,
    /** The grant's acquiredAt, the server's time: the fencing token. */
    readonly token: Timestamp,
    /** Length of the lease in seconds. */
    readonly leaseSeconds: number,
    validFrom: number,
  ) {
    this.validFrom = validFrom;
  }

  /** Aborts once this client learns the lease is lost (a failed renewal or guarded write). */
  get lost(): AbortSignal {
    return this.lostController.signal;
  }

  /** @internal */
  markLost(reason: MutexError): void {
    if (!this.lostController.signal.aborted) this.lostController.abort(reason);
  }

  /** Moves the lease end to now + leaseSeconds (server time). {@link MutexNotHeldError} if the lease ended or is not this grant. */
  renew(): Promise<void> {
    return this.owner.renew(this);
  }

  /**
   * Gives the mutex up. Resolves also when the lease was already gone;
   * {@link MutexNotHeldError} if another grant holds it,
   * {@link MutexPermissionError} if the user signed out (or another signed in).
   */
  release(): Promise<void> {
    return this.owner.release(this);
  }

  /**
   * Renews every third of the lease until `stop()`. The returned signal
   * (the mutex's `lost`) aborts when the lease is lost (a renewal refused:
   * {@link MutexNotHeldError}), when no renewal can succeed any more (the
   * user signed out: {@link MutexPermissionError}; the Firestore client was
   * terminated), or when it could not be renewed in time: no renewal
   * landed within a lease of the last one, measured on this machine from
   * before that renewal's request, so never later than the server's end.
   * A renewal that fails otherwise is tried again after 250 ms, doubling
   * up to a third of the lease. Offline, the SDK keeps writes queued; the
   * signal fires all the same.
   */
  keepAlive(): { signal: AbortSignal; stop: () => void } {
    return this.owner.keepAlive(this);
  }
}

const defaultLeaseSeconds = 30;
/** keepAlive's first wait after a failed renewal; it doubles up to a third of the lease. */
const firstRenewalRetryMs = 250;

// By code, not instanceof: in Node a bundle may hold two copies of the SDK's
// error classes (its ESM and CJS builds).
function isCode(err: unknown, code: FirestoreError["code"]): boolean {
  return typeof err === "object" && err !== null && "code" in err && err.code === code;
}

/**
 * Why no renewal can succeed after this failure (the lease is as good as
 * lost to this holder), or undefined for a failure worth retrying.
 */
function renewalCannotSucceed(id: string, err: unknown): MutexError | undefined {
  if (err instanceof MutexError) return err; // refused (not held), or signed out
  if (isCode(err, "permission-denied") || isCode(err, "unauthenticated")) return new MutexPermissionError(id, err);
  // What a write with no precondition fails with once its client is terminated.
  if (isCode(err, "failed-precondition")) {
    return new MutexNotHeldError(id, `it cannot be renewed any more (${err instanceof Error ? err.message : String(err)})`);
  }
  return undefined;
}

function sameTime(a: Timestamp | undefined, b: Timestamp): boolean {
  return a !== undefined && a.seconds === b.seconds && a.nanoseconds === b.nanoseconds;
}

/**
 * The document as the server holds it now. A transaction's read, not
 * getDocFromServer: that one fails at once while the SDK counts itself
 * offline (its listen stream slow to connect, as under load), whereas a
 * transaction reads by request and retries what is retryable.
 */
export function serverRead(db: Firestore, ref: DocumentReference): Promise<DocumentSnapshot> {
  return runTransaction(db, (tx) => tx.get(ref));
}

function leaseEnd(d: LeaseDoc): Timestamp {
  return new Timestamp(d.renewedAt.seconds + d.leaseSeconds, d.renewedAt.nanoseconds);
}

function asLease(s: DocumentSnapshot): LeaseDoc | undefined {
  const d = s.data();
  if (!d) return undefined;
  const { owner, acquiredAt, renewedAt, leaseSeconds } = d as Partial<LeaseDoc>;
  if (typeof owner !== "string" || !(acquiredAt instanceof Timestamp) || !(renewedAt instanceof Timestamp) || typeof leaseSeconds !== "number") {
    return undefined;
  }
  return { owner, acquiredAt, renewedAt, leaseSeconds };
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
}

/**
 * p, or the signal's reason as soon as the signal aborts. p itself carries
 * on: the SDK cannot take back a write it has queued (offline, it keeps it
 * until the network returns).
 */
function unlessAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(abortReason(signal));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => {
      signal.removeEventListener("abort", onAbort);
    });
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(t);
      if (signal) reject(abortReason(signal));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The mutexes of one guarded collection, for the signed-in user. */
export class Mutexes {
  readonly leaseSeconds: number;
  private readonly mutexCollection: string;
  private readonly auth: Auth;

  /**
   * @param db the app's Firestore (the user must be signed in: rules give the owner `request.auth.uid`)
   * @param collection the guarded collection, e.g. `critical_data`; its mutexes live in `mutex_{collection}`
   */
  constructor(
    private readonly db: Firestore,
    readonly collection: string,
    options: MutexOptions = {},
  ) {
    this.auth = options.auth ?? getAuth(db.app);
    const secs = options.leaseSeconds ?? defaultLeaseSeconds;
    if (!Number.isInteger(secs) || secs < 1 || secs > 300) {
      throw new RangeError(`leaseSeconds must be a whole number of seconds from 1 to 300, got ${String(secs)}`);
    }
    if (!/^[A-Za-z0-9_]+$/.test(collection)) {
      throw new RangeError(`collection must be a top-level collection id, got ${JSON.stringify(collection)}`);
    }
    this.leaseSeconds = secs;
    this.mutexCollection = `mutex_${collection}`;
  }

  /** The lease document of id. */
  mutexRef(id: string): DocumentReference {
    return doc(this.db, this.mutexCollection, id);
  }

  /** The guarded document of id. */
  guardedRef(id: string): DocumentReference {
    return doc(this.db, this.collection, id);
  }

  /**
   * Takes the mutex once, or fails: {@link MutexHeldError} while another
   * grant's lease is live by the server's clock. One write (create, or
   * takeover of an ended lease), then one read of the grant for its token.
   */
  tryAcquire(id: string): Promise<Mutex> {
    return this.grant(id, undefined);
  }

  /** {@link tryAcquire}, given up when signal aborts (the error is then the signal's reason). */
  private async grant(id: string, signal: AbortSignal | undefined): Promise<Mutex> {
    const ref = this.mutexRef(id);
    const owner = this.ownerUid(id);
    let before = 0; // when the grant's write was sent (see Mutex.validFrom)
    let sent: Promise<void> | undefined; // the last grant write
    try {
      for (let attempt = 1; ; attempt++) {
        if (signal?.aborted) throw abortReason(signal); // before a write that could not be taken back
        before = performance.now();
        // Offline, the SDK queues this write and its promise stays pending
        // until the network returns: hence the race with the signal.
        sent = setDoc(ref, { owner, acquiredAt: serverTimestamp(), renewedAt: serverTimestamp(), leaseSeconds: this.leaseSeconds });
        try {
          await unlessAborted(sent, signal);
          break;
        } catch (err) {
          if (!isCode(err, "permission-denied")) throw err;
          // Refused: a live lease (the usual case), or a request the rules
          // refuse outright. The document tells which. A lease released
          // between the refusal and the read leaves no document: try again.
          const d = asLease(await unlessAborted(serverRead(this.db, ref), signal));
          if (d) throw new MutexHeldError(id, d.owner, leaseEnd(d));
          if (attempt === 3) throw new MutexPermissionError(id, err);
        }
      }
      const d = asLease(await unlessAborted(serverRead(this.db, ref), signal));
      if (!d || d.owner !== owner) {
        // Our lease ended and was taken over between the write and the read:
        // only possible with a lease shorter than a round trip.
        throw new MutexNotHeldError(id, "the grant was taken over before it could be read back");
      }
      return new Mutex(this, id, d.acquiredAt, this.leaseSeconds, before);
    } catch (err) {
      // No Mutex comes of this grant, so nobody would renew or release it:
      // if it landed, or lands later (a write queued offline whose caller
      // gave up), free it at once instead of letting it block everyone for
      // a lease. A refused write has nothing to free.
      if (sent) this.freeOnceLanded(id, owner, sent);
      throw err;
    }
  }

  /**
   * Deletes the lease of a grant nobody holds, once its write has landed:
   * in a transaction, only while the document still names owner (ours,
   * unless the lease already ended and this user took it again elsewhere,
   * which takes a lease shorter than a round trip). Best effort: if the
   * server cannot be reached, the lease ends by itself.
   */
  private freeOnceLanded(id: string, owner: string, write: Promise<void>): void {
    const ref = this.mutexRef(id);
    write
      .then(() =>
        runTransaction(this.db, async (tx) => {
          if (asLease(await tx.get(ref))?.owner === owner) tx.delete(ref);
        }),
      )
      .catch(() => undefined);
  }

  /**
   * Waits until the mutex is taken: tries, and while it is held waits for
   * the lease document to change (a snapshot listener) or for a backoff
   * (100 ms doubling to 2 s), then tries again; the rules decide each try.
   */
  async acquire(id: string, options: AcquireOptions = {}): Promise<Mutex> {
    const signals = [options.signal, options.timeoutMs !== undefined ? AbortSignal.timeout(options.timeoutMs) : undefined].filter(
      (s): s is AbortSignal => s !== undefined,
    );
    const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
    let backoff = 100;
    let lastHeld: MutexHeldError | undefined;
    for (;;) {
      if (signal?.aborted) throw this.gaveUp(id, signal, options, lastHeld);
      try {
        return await this.grant(id, signal);
      } catch (err) {
        if (signal?.aborted) throw this.gaveUp(id, signal, options, lastHeld);
        if (err instanceof MutexHeldError) lastHeld = err;
        else if (!isCode(err, "unavailable") && !isCode(err, "deadline-exceeded")) throw err;
        // held, or the network is down for now: wait and try again
      }
      try {
        await this.changeOrTimeout(id, backoff, signal);
      } catch {
        throw this.gaveUp(id, signal as AbortSignal, options, lastHeld);
      }
      backoff = Math.min(backoff * 2, 2000);
    }
  }

  private gaveUp(id: string, signal: AbortSignal, options: AcquireOptions, lastHeld: MutexHeldError | undefined): unknown {
    if (options.signal?.aborted) return options.signal.reason;
    return lastHeld ?? new MutexError(`mutex ${id}: gave up after ${String(options.timeoutMs)} ms`, id, { cause: signal.reason });
  }

  /** Resolves when the lease document changes (after its first snapshot) or after ms. */
  private changeOrTimeout(id: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      let first = true;
      let settled = false;
      const cleanups: (() => void)[] = [];
      const done = (err?: Error): void => {
        if (settled) return;
        settled = true;
        for (const cleanup of cleanups) cleanup();
        if (err) reject(err);
        else resolve();
      };
      const timer = setTimeout(() => done(), ms);
      cleanups.push(() => clearTimeout(timer));
      if (signal) {
        const onAbort = (): void => done(abortReason(signal));
        signal.addEventListener("abort", onAbort, { once: true });
        cleanups.push(() => signal.removeEventListener("abort", onAbort));
      }
      cleanups.push(
        onSnapshot(
          this.mutexRef(id),
          () => {
            if (first) first = false;
            else done();
          },
          () => done(), // a listener error only ends the wait early
        ),
      );
      if (signal?.aborted) done(abortReason(signal));
    });
  }

  /** @internal See {@link Mutex.renew}. */
  async renew(m: Mutex): Promise<void> {
    const ref = this.mutexRef(m.id);
    const owner = this.ownerUid(m.id);
    const before = performance.now();
    try {
      // The token in the write: the rules keep acquiredAt, so another grant
      // (another tab of this user) refuses it; a lease that ended refuses it.
      await setDoc(ref, { owner, acquiredAt: m.token, renewedAt: serverTimestamp(), leaseSeconds: m.leaseSeconds });
      m.validFrom = before;
    } catch (err) {
      if (!isCode(err, "permission-denied")) throw err;
      const lost = new MutexNotHeldError(m.id, await this.why(m));
      m.markLost(lost);
      throw lost;
    }
  }

  /** What the lease document says about m, for an error message. */
  private async why(m: Mutex): Promise<string> {
    const d = asLease(await serverRead(this.db, this.mutexRef(m.id)));
    if (!d) return "the lease is gone";
    if (!sameTime(d.acquiredAt, m.token)) return `another grant holds it (owner ${d.owner})`;
    return "the lease ended";
  }

  /** @internal See {@link Mutex.release}. */
  async release(m: Mutex): Promise<void> {
    const ref = this.mutexRef(m.id);
    this.ownerUid(m.id); // signed out: refused without a request
    try {
      await runTransaction(this.db, async (tx) => {
        const d = asLease(await tx.get(ref));
        if (!d) return; // already gone: nothing to give up
        if (!sameTime(d.acquiredAt, m.token)) {
          throw new MutexNotHeldError(m.id, `another grant holds it (owner ${d.owner})`);
        }
        tx.delete(ref);
      });
    } catch (err) {
      // Signed in as another user than the grant's: the rules refuse the delete.
      if (isCode(err, "permission-denied")) throw new MutexPermissionError(m.id, err);
      throw err;
    }
  }

  /** @internal See {@link Mutex.keepAlive}. */
  keepAlive(m: Mutex): { signal: AbortSignal; stop: () => void } {
    const stopped = new AbortController();
    const every = (m.leaseSeconds * 1000) / 3;
    // The watchdog fires when the lease may have ended by now without a
    // renewal having landed: errors, or a write the SDK keeps queued while
    // offline (its promise then never settles). A queued renewal that lands
    // later is refused by the rules if the lease had ended.
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const arm = (): void => {
      clearTimeout(watchdog);
      const left = m.validFrom + m.leaseSeconds * 1000 - performance.now();
      watchdog = setTimeout(() => {
        m.markLost(new MutexNotHeldError(m.id, "it could not be renewed before it ended"));
      }, Math.max(0, left));
    };
    const disarm = (): void => clearTimeout(watchdog);
    m.lost.addEventListener("abort", disarm, { once: true });
    stopped.signal.addEventListener("abort", disarm, { once: true });
    arm();
    const active = (): boolean => !stopped.signal.aborted && !m.lost.aborted;
    let retryIn = 0; // after a failed renewal: the backoff before the next try
    const loop = async (): Promise<void> => {
      while (active()) {
        try {
          // A third of the lease after the last renewal's request, or the
          // backoff after a failure (which can come at once, and the third
          // may have passed already: without it, this loop would spin).
          await sleep(retryIn || Math.max(0, m.validFrom + every - performance.now()), stopped.signal);
        } catch {
          return;
        }
        try {
          await this.renew(m);
          retryIn = 0;
          if (active()) arm();
        } catch (err) {
          const final = renewalCannotSucceed(m.id, err);
          if (final) {
            m.markLost(final);
            return;
          }
          // Transient: try again, backing off; the watchdog ends it if no
          // renewal lands in time.
          retryIn = Math.min(retryIn ? retryIn * 2 : firstRenewalRetryMs, every);
        }
      }
    };
    void loop();
    return { signal: m.lost, stop: () => stopped.abort() };
  }

  /**
   * Takes the mutex (waiting as {@link acquire} does), runs fn, and commits
   * fn's writes to the guarded document in one batch with a renewal of this
   * grant: the rules accept the batch only while the caller holds the lease,
   * and the renewal names the token, so a stale grant writes nothing. The
   * mutex is released afterwards, whatever happened. Returns fn's result.
   */
  async withMutex<T>(id: string, fn: (w: GuardedWriter, m: Mutex) => Promise<T> | T, options: AcquireOptions = {}): Promise<T> {
    const m = await this.acquire(id, options);
    try {
      const result = await this.writeUnder(m, fn);
      return result;
    } finally {
      await m.release().catch(() => undefined); // a lost lease has nothing to release
    }
  }

  /**
   * Runs fn and commits its writes to the guarded document together with a
   * renewal of m, in one batch. {@link MutexNotHeldError} (and nothing
   * written) if m no longer holds a live lease.
   */
  async writeUnder<T>(m: Mutex, fn: (w: GuardedWriter, m: Mutex) => Promise<T> | T): Promise<T> {
    const owner = this.ownerUid(m.id);
    const batch = writeBatch(this.db);
    const target = this.guardedRef(m.id);
    let writes = 0;
    const w: GuardedWriter = {
      get: () => serverRead(this.db, target),
      set: (data) => {
        batch.set(target, data);
        writes++;
      },
      update: (data) => {
        batch.update(target, data);
        writes++;
      },
      delete: () => {
        batch.delete(target);
        writes++;
      },
    };
    const result = await fn(w, m);
    batch.set(this.mutexRef(m.id), { owner, acquiredAt: m.token, renewedAt: serverTimestamp(), leaseSeconds: m.leaseSeconds });
    const before = performance.now();
    try {
      await batch.commit();
      m.validFrom = before;
    } catch (err) {
      if (!isCode(err, "permission-denied")) throw err;
      const lost = new MutexNotHeldError(m.id, `${await this.why(m)}; ${String(writes)} write(s) not made`);
      m.markLost(lost);
      throw lost;
    }
    return result;
  }

  /** The signed-in user's uid: the owner the rules expect. */
  private ownerUid(id: string): string {
    const user = this.auth.currentUser;
    if (!user) throw new MutexPermissionError(id, new Error("no user is signed in"));
    return user.uid;
  }
}
