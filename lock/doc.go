// Package lock provides lease locks stored as Firestore documents.
//
// A lock is one document per key in a collection of your choice. Its shape
// is fixed by CONTRACT §1 and shared with mobile and web clients, whose
// security rules enforce the same protocol:
//
//	owner         string     execution ID (nanoid) or request.auth.uid
//	acquiredAt    timestamp  server time of the grant: the fencing token
//	renewedAt     timestamp  server time of the grant or last renewal
//	leaseSeconds  integer    held while now < renewedAt + leaseSeconds
//	expireAt      timestamp  for a TTL policy only, a day after the lease end
//	holds         []string   the acquisitions holding it (library field)
//
// Only Firestore's clock decides whether a lease has ended: server
// timestamps on writes, a snapshot's read time when judging another owner's
// lease. A crashed holder therefore never blocks a key for longer than its
// lease, and clock skew between machines cannot make two holders.
//
// Costs: TryAcquire on a free key is one RPC (a create that fails if the
// document exists); Release is one conditional delete; Renew is one
// conditional update. A held key answers with one more read.
// TryAcquireAll grants many keys in one atomic commit, or none.
//
// Exclusion: every acquisition excludes every other, whether it comes
// through the same Locker (goroutines sharing one), another Locker of the
// same owner, or another owner. Each acquisition has an ID of its own,
// listed in the document's holds. Reentrant opts in to joining a live lease
// of the same owner: the lease then counts one more holder, each Release
// gives up one hold, only the last deletes the document, and a reentrant
// acquisition never shortens the lease.
//
// Fencing: a write protected by a lease should run in a Firestore
// transaction that calls Lease.Guard first; it then commits only while the
// lease still names this acquisition of this grant and had time left when
// Guard read it. Guard reads the lease's fence, {lease}/fence/grant
// {owner, acquiredAt}, in the transaction: every grant, takeover and
// release that ends a lease writes the fence in its own commit, so none
// can commit between Guard and the transaction's commit (the transaction
// locks what it read). The lease document itself it reads without a lock:
// renewals write only the lease document, so a holder's renewals never
// queue behind its own guarded transactions, which under load used to
// make a busy holder lose its own lease. A free-key grant is still one
// RPC (the create and the fence in one commit); Guard costs one more read,
// sent at the same time as the transaction's. Lockers for a collection
// that clients also grant under rules (CONTRACT §2's mutex_*) take
// SharedWithClients: a client's takeover writes no fence, so their Guard
// reads the lease document in the transaction instead.
//
// Lease.Token, for stores outside Firestore, is the grant's commit time: it
// strictly increases in the order grants of a key commit (unlike
// acquiredAt, the request's start, which a slow grant can leave behind).
//
// Bounded RPCs: every RPC the lock sends carries a deadline of about the
// lease (1 s to 1 min), whatever the caller's context: an RPC left
// unanswered (a half-open connection, a lost stream, an overloaded server)
// ends with ErrUnanswered, ambiguous, and is settled by reading back; an
// Acquire then tries again.
//
// Late commits: a grant, renewal or guarded commit is decided at a read or
// a request's time and may land later (the network holds it back). The
// lease's times are the server's request times, so a late renewal only
// makes the lease end later than its holder believes, never earlier; a
// late guarded commit still lands only if no grant or release came in
// between (the fence), which is what fencing promises: the lease was this
// grant's when Guard read it and no other grant had happened when it
// committed.
//
// Abandoned transactions: a guarded transaction whose client vanished
// before it committed or rolled back (a crashed process, or a lost answer
// to its first read, so the client never learned the transaction's ID)
// keeps its read lock on the fence until Firestore expires it, after about
// a minute idle (the emulator does the same). A grant of that key waits for
// the lock on each try and fails with ErrHeld, its message naming the
// server's Aborted answer, until then. The lease itself still ends on time:
// this delays the next holder, it never makes two.
//
// Ambiguous outcomes: when a grant, renewal or release cannot tell whether
// its write landed (deadline, dropped connection), it reads the document
// back, past the caller's context for a few seconds if need be. A grant
// that landed is returned as the lease while the context is live, and
// otherwise deleted again with a precondition; a release that landed
// counts as done; a renewal, whose effect another holder's write may mimic,
// is written again while the lease is still ours. Only when even the read
// fails does an error leave a lease behind, and that lease ends by itself
// within its length.
//
// Connection: grants, renewals and releases use a low-level commit client
// (to read the server's timestamps from the commit itself, and to see a
// release's ambiguous failure rather than have it retried). It reaches the
// database of the *firestore.Client given to New (named databases too) with
// the client's endpoint and credentials: pass the options the client was
// made with through WithClientOptions where they are not the environment's
// defaults. The first commit per client proves both reach one database and
// otherwise fails with ErrClientMismatch.
//
// Errors: ErrHeld (a *HeldError says who holds a key and until when),
// ErrNotHeld (the lease is gone), ErrInvalidKey (nothing was written),
// ErrClientMismatch (the Locker's commits would reach another database),
// ErrUnanswered (an RPC got no answer within its bound).
package lock
