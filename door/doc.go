// Package door checks tickets in at a screening's gates (CONTRACT §13): a
// ticket lets one person in once, whichever gate they use, and every scan
// is recorded.
//
// One document per ticket is the door's lock: checkins/{ticketId}
// {screeningId, version, state, seq, gate, at, scannedAt, by, nonce,
// offline}. Service.CheckIn (the function CheckIn) runs the state machine in
// one transaction that reads the screening's door, the ticket and its
// check-in, and creates screenings/{id}/scans/{nonce} beside the check-in's
// write; two gates scanning one ticket at once cannot both get it in,
// because both read the check-in and only one commit can follow that read.
// Scanners' own writes (the scanner app's batched write of the same two
// documents with the Firebase SDK) are held to the same state machine by
// firestore.rules. docs/door.md has the protocol, what offline scanning can
// and cannot promise, and the costs.
//
//	svc := door.New(client, keys) // keys: ticket.KeysFromEnv(), or the public set
//	scan, err := svc.CheckIn(ctx, door.Request{
//		Scanner: uid, ScreeningID: "demo", Gate: "A", Code: code, Nonce: nonce,
//	})
//	var refused *door.Refusal
//	switch {
//	case err == nil: // scan.Result is admitted (or exited)
//	case errors.As(err, &refused): // recorded: refused.Result, and for already_in refused.Gate, refused.At
//	default: // nothing recorded: door.Code(err) is invalid_argument, nonce_reused, ...
//	}
package door
