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
// Fencing: a write protected by a lease should run in a Firestore
// transaction that calls Lease.Guard first; it then commits only while the
// lease document still names the holder with the same token. Lease.Token
// can be handed to stores outside Firestore.
//
// Errors: ErrHeld (a *HeldError says who holds a key and until when),
// ErrNotHeld (the lease is gone), ErrInvalidKey (nothing was written).
package lock
