// Package lock provides lease locks stored as Firestore documents, for
// Cloud Functions and any other Go server: one execution at a time may
// hold a key, a crashed holder blocks it for at most one lease, and a
// holder that lost its lease can no longer write what the lock protects.
//
//	locker, err := lock.New(client, "locks")
//	err = locker.WithLock(ctx, "nightly-report", func(ctx context.Context, lease *lock.Lease) error {
//		return client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
//			if err := lease.Guard(tx); err != nil {
//				return err // the lease is lost: write nothing
//			}
//			return tx.Set(client.Doc("reports/nightly"), report)
//		})
//	})
//	if errors.Is(err, lock.ErrNotHeld) { ... } // lost while fn ran: its work may not have been exclusive
//
// # The documents
//
// A lock is one document per key, {collection}/{key}, in a collection of
// your choice. Its shape is shared with mobile and web clients, whose
// security rules can enforce the same protocol (firelock's firestore.rules
// has the functions leaseWrite, leaseRelease and holdsLease):
//
//	owner         string     the holder: an execution ID (nanoid) for server code, request.auth.uid for a client
//	acquiredAt    timestamp  server time of the write that granted the lease; unchanged by renewals
//	renewedAt     timestamp  server time of the grant or of the last renewal
//	leaseSeconds  integer    the lease is held while now < renewedAt + leaseSeconds (server clock)
//	expireAt      timestamp  for a TTL policy only (garbage collection), a day after the lease end
//	holds         []string   the acquisitions holding it (this library's; more than one only with Reentrant)
//
// Beside each lease document the library keeps a fence,
// {collection}/{key}/fence/grant {owner, acquiredAt}, written with every
// grant and deleted with every release that ends the lease (see Fencing).
// WithFields adds fields of your own to a lease document; a job run's
// lease, for instance, carries its state.
//
// The protocol: a grant creates the document if absent, or overwrites it
// when the lease there has ended; both set acquiredAt and renewedAt to the
// server's time. Only the owner renews (renewedAt moves, owner and
// acquiredAt stay) or releases (a delete with a precondition, never an
// unconditional one); anyone may take over or delete a lease that has
// ended. acquiredAt names the grant: a write protected by the lock commits
// only while the lease document still names the writer with the same
// acquiredAt and has time left.
//
// Only Firestore's clock decides whether a lease has ended: server
// timestamps on writes, a snapshot's read time when judging another
// owner's lease. Clock skew between machines cannot make two holders.
//
// # Costs
//
// TryAcquire on a free key is one RPC (a create that fails if the document
// exists); a key held or ended adds one read. Renew is one conditional
// write, Release one conditional delete. TryAcquireAll grants many keys in
// one atomic commit, or none. Guard adds one read to the caller's
// transaction, sent at the same time as the transaction's own. KeepAlive
// renews a third into the lease (three writes per lease length). The first
// commit of each Locker's client proves its connection (two RPCs, once per
// process).
//
// # Exclusion
//
// Every acquisition excludes every other, whether it comes through the same
// Locker (goroutines sharing one), another Locker of the same owner, or
// another owner. Each acquisition has an ID of its own, listed in the
// document's holds. Reentrant opts in to joining a live lease of the same
// owner: the lease then counts one more holder, each Release gives up one
// hold, only the last deletes the document, and a reentrant acquisition
// never shortens the lease.
//
// # Losing a lease
//
// A lease is lost when it is taken over after it ended, released by
// someone else (an operator's ForceRelease, a sweep) or not renewed in
// time. Whatever runs under it then learns so through ErrNotHeld, its
// message saying why:
//
//   - WithLock returns an error wrapping ErrNotHeld (and fn's own error,
//     if it failed);
//   - Guard fails with ErrNotHeld, so a guarded transaction writes nothing;
//   - the context KeepAlive returns (and WithLock gives fn) is cancelled,
//     context.Cause(ctx) wraps ErrNotHeld, and Done closes. An RPC cut off
//     by that context fails with gRPC's bare Canceled status: Explain(ctx,
//     err) turns it into ErrNotHeld, to tell it from your own cancellation.
//
// KeepAlive learns of a forced release at its next renewal, within a third
// of the lease; Guard at once.
//
// # Fencing
//
// A write protected by a lease runs in a Firestore transaction that calls
// Lease.Guard first; it then commits only while the lease still names this
// acquisition of this grant and had time left when Guard read it. Guard
// reads the lease's fence in the transaction: every grant, takeover and
// release that ends a lease writes the fence in its own commit, so none can
// commit between Guard and the transaction's commit (the transaction locks
// what it read). The lease document itself it reads without a lock:
// renewals write only the lease document, so a holder's renewals never
// queue behind its own guarded transactions. Lockers for a collection that
// clients also grant under security rules take SharedWithClients: a
// client's takeover writes no fence, so their Guard reads the lease
// document in the transaction instead.
//
// Lease.Token, for stores outside Firestore, is the grant's commit time: it
// strictly increases in the order grants of a key commit (unlike
// acquiredAt, the request's start, which a slow grant can leave behind).
//
// # Faults
//
// Every RPC the lock sends carries a deadline of about the lease (1 s to
// 1 min), whatever the caller's context: an RPC left unanswered (a
// half-open connection, a lost stream, an overloaded server) ends with
// ErrUnanswered, and is settled by reading back; an Acquire then tries
// again.
//
// When a grant, renewal or release cannot tell whether its write landed
// (deadline, dropped connection), it reads the document back, past the
// caller's context for a few seconds if need be. A grant that landed is
// returned as the lease while the context is live and the lease has time
// left, and otherwise deleted again with a precondition (the error then
// matches ErrUnanswered, beside the context's if that ended it: others may
// have seen the key held meanwhile). A grant found nowhere may still be on
// its way (a request cut off by a deadline can reach Firestore after the
// read): it is sealed out first, by one write conditioned as the grant was
// (a key without a document gets a lease that ended long ago, of owner
// "firelock-sealed", which the next grant takes over; an existing one a
// new expireAt), so that it can no longer land; a release that
// landed counts as done; a renewal, whose effect another holder's write may
// mimic, is written again while the lease is still ours. Only when even
// the read fails does an error leave a lease behind, and that lease ends by
// itself within its length (a grant's error then matches ErrUnanswered,
// beside the context's if that ended it).
//
// A grant, renewal or guarded commit is decided at a read or a request's
// time and may land later (the network holds it back). The lease's times
// are the server's request times, so a late renewal only makes the lease
// end later than its holder believes, never earlier; a late guarded commit
// still lands only if no grant or release came in between (the fence).
//
// A guarded transaction whose client vanished before it committed or rolled
// back (a crashed process, or a lost answer to its first read) keeps its
// read lock on the fence until Firestore expires it, after about a minute
// idle. A grant of that key fails with ErrHeld, naming the server's Aborted
// answer, until then. The lease itself still ends on time: this delays the
// next holder, it never makes two.
//
// # Connection
//
// Grants, renewals and releases use a low-level commit client (to read the
// server's timestamps from the commit itself, and to see a grant's or a
// release's ambiguous failure rather than have it sent again blind: one
// that lost its answer is settled by reading it back). It reaches the
// database of the *firestore.Client given to New (named databases too) with the
// client's endpoint and credentials: pass the options the client was made
// with through WithClientOptions where they are not the environment's
// defaults. The first commit per client proves both reach one database and
// otherwise fails with ErrClientMismatch.
//
// # Errors
//
// ErrHeld (a *HeldError says who holds a key and until when), ErrNotHeld
// (the lease is gone), ErrInvalidKey (nothing was written),
// ErrClientMismatch (the Locker's commits would reach another database),
// ErrUnanswered (an RPC got no answer within its bound). Branch on them
// with errors.Is.
//
// # Testing
//
// The package firelocktest runs your tests against the real Firestore
// emulator, a project per test, with a fault proxy to lose answers.
package lock
