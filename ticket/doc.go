// Package ticket issues the tickets of CONTRACT §13: one tickets/{ticketId}
// per booked seat, created in the commit that confirms the booking and
// cancelled in the commit that cancels it, each carrying a code that a
// gate verifies offline.
//
// The code (code.go) is FLT1.<payload>.<signature>: the ticket, its
// screening, seat and version and the key's id, in base64url JSON, signed
// with Ed25519 (crypto/ed25519). Keys (keys.go) come from the secret
// FIRELOCK_TICKET_KEY, a JWK Set whose first key signs and whose every key
// verifies; GET /TicketKeys serves the public half. testdata/codes.json
// holds test vectors that the web app's own decoder is tested against.
//
// Service is booking's Tickets seam (booking.WithTickets): booking calls it
// inside its own commits, so a ticket exists exactly when its booking is
// confirmed; there is no second transaction scheme. Service.Transfer moves
// a ticket to another account with a new version and a new code, so the old
// code answers ticket_reissued at the door (package door).
package ticket
