package ticket

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The code on a ticket (CONTRACT §13), what its QR code shows:
//
//	FLT1.<payload>.<signature>
//
// <payload> is base64url without padding of the JSON object
// {"t": ticketId, "s": screeningId, "seat": seatId, "v": version, "k": keyId},
// and <signature> is base64url without padding of the Ed25519 signature of
// the ASCII text "FLT1.<payload>" (the first two parts as they stand, dot
// included). A verifier checks the signature over the text it was given,
// never over a payload it encoded again, so no JSON canonical form is needed.
//
// A decoder (this one, and the web app's, tested against the same vectors in
// testdata/codes.json) refuses, in this order:
//   - ErrMalformed: not three parts "FLT1", payload and signature; a part
//     that is not strict base64url (A-Z a-z 0-9 - _, no padding, no stray
//     bits); a signature that is not 64 bytes; a code over MaxCodeLength;
//   - ErrPayload: a payload that is not one JSON object with exactly the
//     keys t, s, seat, v and k, each once: t, s, seat and k non-empty
//     strings, v a whole number from 1 (digits only: no 1.0, no 1e0);
//   - ErrUnknownKey: k names no key of the verifier's set;
//   - ErrBadSignature: the signature does not verify with that key.
//
// Every one wraps ErrInvalidCode. Whether the code is the ticket's current
// one (its version) is for the door to say, which reads the ticket.

// Prefix is the format's tag and version, the code's first part.
const Prefix = "FLT1"

// MaxCodeLength bounds a code, in bytes. A real one is about 200.
const MaxCodeLength = 1024

// Errors of Decode and Keys.Verify. Each wraps ErrInvalidCode.
var (
	ErrInvalidCode  = errors.New("ticket: not a ticket code")
	ErrMalformed    = fmt.Errorf("%w: malformed", ErrInvalidCode)
	ErrPayload      = fmt.Errorf("%w: bad payload", ErrInvalidCode)
	ErrUnknownKey   = fmt.Errorf("%w: unknown key", ErrInvalidCode)
	ErrBadSignature = fmt.Errorf("%w: bad signature", ErrInvalidCode)
)

// Reason is the short name of a decode error, as testdata/codes.json gives
// it for each bad code: "malformed", "payload", "unknown_key",
// "bad_signature", or "" for nil (and "invalid" for any other error).
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrMalformed):
		return "malformed"
	case errors.Is(err, ErrPayload):
		return "payload"
	case errors.Is(err, ErrUnknownKey):
		return "unknown_key"
	case errors.Is(err, ErrBadSignature):
		return "bad_signature"
	}
	return "invalid"
}

// Payload is what a code says: the ticket, its screening and seat, the
// ticket's version when the code was made, and the key that signed it.
type Payload struct {
	TicketID    string `json:"t"`
	ScreeningID string `json:"s"`
	Seat        string `json:"seat"`
	Version     int    `json:"v"`
	KeyID       string `json:"k"`
}

// payloadKeys are the payload's JSON keys, each required exactly once.
var payloadKeys = []string{"t", "s", "seat", "v", "k"}

var b64 = base64.RawURLEncoding.Strict()

// Decoded is a code taken apart: its payload, and what the signature covers.
type Decoded struct {
	Payload   Payload
	Signed    string // "FLT1.<payload>", as the code carries it
	Signature []byte // 64 bytes
}

// Decode takes a code apart without verifying its signature: for showing
// what a code claims (firelock tickets show CODE) before or without the keys.
// Keys.Verify is Decode and the signature check. Errors: ErrMalformed,
// ErrPayload.
func Decode(code string) (Decoded, error) {
	if len(code) > MaxCodeLength {
		return Decoded{}, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(code), MaxCodeLength)
	}
	parts := strings.Split(code, ".")
	if len(parts) != 3 || parts[0] != Prefix {
		return Decoded{}, fmt.Errorf("%w: want %s.<payload>.<signature>", ErrMalformed, Prefix)
	}
	raw, err := b64.DecodeString(parts[1])
	if err != nil || parts[1] == "" || !isBase64URL(parts[1]) {
		return Decoded{}, fmt.Errorf("%w: the payload is not base64url without padding", ErrMalformed)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || !isBase64URL(parts[2]) {
		return Decoded{}, fmt.Errorf("%w: the signature is not base64url without padding", ErrMalformed)
	}
	if len(sig) != ed25519.SignatureSize {
		return Decoded{}, fmt.Errorf("%w: the signature is %d bytes, not %d", ErrMalformed, len(sig), ed25519.SignatureSize)
	}
	p, err := decodePayload(raw)
	if err != nil {
		return Decoded{}, err
	}
	return Decoded{Payload: p, Signed: parts[0] + "." + parts[1], Signature: sig}, nil
}

// decodePayload reads the payload's JSON strictly (see the format above).
func decodePayload(raw []byte) (Payload, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrPayload, fmt.Sprintf(format, args...))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Payload{}, bad("not a JSON object")
	}
	fields := map[string]any{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return Payload{}, bad("not JSON")
		}
		key, _ := t.(string)
		if _, seen := fields[key]; seen {
			return Payload{}, bad("%q appears twice", key)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return Payload{}, bad("not JSON")
		}
		fields[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return Payload{}, bad("not JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Payload{}, bad("more than one JSON value")
	}
	if len(fields) != len(payloadKeys) {
		return Payload{}, bad("want exactly the keys %v", payloadKeys)
	}
	var p Payload
	for _, f := range []struct {
		key string
		dst *string
	}{{"t", &p.TicketID}, {"s", &p.ScreeningID}, {"seat", &p.Seat}, {"k", &p.KeyID}} {
		s, ok := fields[f.key].(string)
		if !ok || s == "" {
			return Payload{}, bad("%q must be a non-empty string", f.key)
		}
		*f.dst = s
	}
	n, ok := fields["v"].(json.Number)
	if !ok || !isDigits(string(n)) {
		return Payload{}, bad(`"v" must be a whole number`)
	}
	if _, err := fmt.Sscan(string(n), &p.Version); err != nil || p.Version < 1 || len(n) > 9 {
		return Payload{}, bad(`"v" must be a whole number from 1`)
	}
	return p, nil
}

// isBase64URL says whether s is letters of base64url only: Go's decoders,
// strict ones too, skip \r and \n, which the format does not allow.
func isBase64URL(s string) bool {
	for _, c := range []byte(s) {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// encodePayload is the payload's part of a code.
func encodePayload(p Payload) (string, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	return b64.EncodeToString(raw), nil
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
