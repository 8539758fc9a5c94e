package lock

// Close closes the commit client that New built for this Locker from
// WithClientOptions, and with it a gRPC connection given there with
// option.WithGRPCConn (as a Google Cloud client's Close does): call it when
// the Locker is done, or each New with options leaves a connection open. A
// Locker without WithClientOptions uses the process's shared commit client,
// which stays open (like firestore.NewClient's); Close does nothing then.
// Lockers derived with ForOwner share their parent's client: close only the
// one New returned, once nothing uses it or its derived Lockers anymore.
// No RPC.
func (l *Locker) Close() error {
	rawMu.Lock()
	for _, shared := range rawShared {
		if shared == l.raw {
			rawMu.Unlock()
			return nil
		}
	}
	rawMu.Unlock()
	return l.raw.Close()
}
