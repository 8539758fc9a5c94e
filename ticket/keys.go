package ticket

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sync"

	gonanoid "github.com/matoous/go-nanoid/v2"
)

// KeyEnv names the variable that carries the ticket keys, a JWK Set of
// Ed25519 keys (RFC 8037) as JSON; deployed, Secret Manager fills it
// (deploy.sh: --set-secrets FIRELOCK_TICKET_KEY=FIRELOCK_TICKET_KEY:latest):
//
//	{"keys": [
//	  {"kty": "OKP", "crv": "Ed25519", "kid": "k2026b", "x": "<public>", "d": "<private>"},
//	  {"kty": "OKP", "crv": "Ed25519", "kid": "k2026a", "x": "<public>"}
//	]}
//
// The first key signs, and must carry its private part d (the 32-byte seed,
// base64url). Every key is listed by GET /TicketKeys (its kid and x only),
// so codes signed by the others still verify: a rotation puts a new key
// first and keeps the old ones while their tickets live (docs/door.md says
// how, in two steps so that no scanner meets a code of a key it has not
// fetched yet). A listed key may keep or drop its d.
const KeyEnv = "FIRELOCK_TICKET_KEY"

// ErrNoKey: KeyEnv is not set, and no emulator says this is a local run.
var ErrNoKey = errors.New("ticket: " + KeyEnv + " is not set: the ticket keys come from Secret Manager (see docs/door.md)")

// JWK is one key of a JWK Set: an Ed25519 key (RFC 8037), with its private
// part D only in the secret, never in what GET /TicketKeys serves.
type JWK struct {
	Kty string `json:"kty"` // "OKP"
	Crv string `json:"crv"` // "Ed25519"
	Kid string `json:"kid"`
	X   string `json:"x"`           // the public key, base64url
	D   string `json:"d,omitempty"` // the private key's seed, base64url
}

// JWKSet is a JWK Set (RFC 7517): the body of GET /TicketKeys, and the
// secret's format.
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

// Keys signs ticket codes with its first key and verifies codes of any of
// its keys. It is safe for concurrent use (it never changes).
type Keys struct {
	signer ed25519.PrivateKey // nil: verify only
	kid    string             // the signer's
	order  []string           // kids as listed
	public map[string]ed25519.PublicKey
	secret map[string]ed25519.PrivateKey // the keys that came with d
}

var kidPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParseKeys reads a JWK Set of Ed25519 keys: the secret (its first key with
// d, to sign) or a public set such as GET /TicketKeys answers (verify only).
// Every key must be kty OKP, crv Ed25519, with a kid of 1 to 64 of
// A-Z a-z 0-9 . _ - (unique), x of 32 bytes and, if given, a d of 32 bytes
// whose public key is x.
func ParseKeys(jwks []byte) (*Keys, error) {
	var set JWKSet
	dec := json.NewDecoder(bytesReader(jwks))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&set); err != nil {
		return nil, fmt.Errorf("ticket: the keys are not a JWK Set of Ed25519 keys: %v", err)
	}
	return FromJWKS(set)
}

// FromJWKS is ParseKeys of a decoded set.
func FromJWKS(set JWKSet) (*Keys, error) {
	if len(set.Keys) == 0 {
		return nil, errors.New("ticket: the JWK Set has no keys")
	}
	k := &Keys{public: map[string]ed25519.PublicKey{}, secret: map[string]ed25519.PrivateKey{}}
	for i, j := range set.Keys {
		if j.Kty != "OKP" || j.Crv != "Ed25519" {
			return nil, fmt.Errorf("ticket: key %d (%q) is kty %q crv %q, want OKP Ed25519", i, j.Kid, j.Kty, j.Crv)
		}
		if !kidPattern.MatchString(j.Kid) {
			return nil, fmt.Errorf("ticket: key %d: kid %q must be 1 to 64 of A-Z a-z 0-9 . _ -", i, j.Kid)
		}
		if _, dup := k.public[j.Kid]; dup {
			return nil, fmt.Errorf("ticket: kid %q is listed twice", j.Kid)
		}
		x, err := b64.DecodeString(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("ticket: key %q: x must be %d bytes of base64url without padding", j.Kid, ed25519.PublicKeySize)
		}
		k.public[j.Kid] = ed25519.PublicKey(x)
		k.order = append(k.order, j.Kid)
		if j.D != "" {
			d, err := b64.DecodeString(j.D)
			if err != nil || len(d) != ed25519.SeedSize {
				return nil, fmt.Errorf("ticket: key %q: d must be %d bytes of base64url without padding", j.Kid, ed25519.SeedSize)
			}
			priv := ed25519.NewKeyFromSeed(d)
			if !priv.Public().(ed25519.PublicKey).Equal(ed25519.PublicKey(x)) {
				return nil, fmt.Errorf("ticket: key %q: x is not the public key of d", j.Kid)
			}
			k.secret[j.Kid] = priv
		}
	}
	if priv, ok := k.secret[k.order[0]]; ok {
		k.signer, k.kid = priv, k.order[0]
	}
	return k, nil
}

// GenerateKeys makes a set of one new key named kid (empty: a random
// name), for a local run or a test; a deployment's come from Secret Manager.
func GenerateKeys(kid string) (*Keys, error) {
	if kid == "" {
		id, err := gonanoid.Generate("abcdefghijklmnopqrstuvwxyz0123456789", 8)
		if err != nil {
			return nil, err
		}
		kid = "local-" + id
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return FromJWKS(JWKSet{Keys: []JWK{privateJWK(kid, priv)}})
}

// Rotated is the set with priv added as kid: second (sign false: step one
// of a rotation, the key is listed but does not sign yet), or first (sign
// true: it signs from now on). The other keys stay listed as they were.
func (k *Keys) Rotated(kid string, priv ed25519.PrivateKey, sign bool) (*Keys, error) {
	set := k.Secret()
	j := privateJWK(kid, priv)
	if sign {
		set.Keys = append([]JWK{j}, set.Keys...)
	} else {
		set.Keys = slices.Insert(set.Keys, min(1, len(set.Keys)), j)
	}
	return FromJWKS(set)
}

func privateJWK(kid string, priv ed25519.PrivateKey) JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", Kid: kid,
		X: b64.EncodeToString(priv.Public().(ed25519.PublicKey)), D: b64.EncodeToString(priv.Seed())}
}

// KeyID is the kid of the signing key ("" for a verify-only set).
func (k *Keys) KeyID() string { return k.kid }

// CanSign says whether the set has a signing key.
func (k *Keys) CanSign() bool { return k.signer != nil }

// Public is the set as GET /TicketKeys serves it: every key's kty, crv, kid
// and x, in the secret's order (the signing key first), no d.
func (k *Keys) Public() JWKSet {
	set := JWKSet{Keys: make([]JWK, 0, len(k.order))}
	for _, kid := range k.order {
		set.Keys = append(set.Keys, JWK{Kty: "OKP", Crv: "Ed25519", Kid: kid, X: b64.EncodeToString(k.public[kid])})
	}
	return set
}

// Secret is the set as the secret holds it: Public, with d for each key
// that came with one.
func (k *Keys) Secret() JWKSet {
	set := k.Public()
	for i, j := range set.Keys {
		if priv, ok := k.secret[j.Kid]; ok {
			set.Keys[i].D = b64.EncodeToString(priv.Seed())
		}
	}
	return set
}

// Sign makes the code of p with the signing key (p.KeyID is set to its
// kid). p must name a ticket, a screening and a seat, and a version from 1.
func (k *Keys) Sign(p Payload) (string, error) {
	if k.signer == nil {
		return "", errors.New("ticket: these keys cannot sign: the first key of the set has no d")
	}
	if p.TicketID == "" || p.ScreeningID == "" || p.Seat == "" || p.Version < 1 {
		return "", fmt.Errorf("ticket: cannot sign %+v: it needs a ticket, a screening, a seat and a version from 1", p)
	}
	p.KeyID = k.kid
	payload, err := encodePayload(p)
	if err != nil {
		return "", err
	}
	signed := Prefix + "." + payload
	return signed + "." + b64.EncodeToString(ed25519.Sign(k.signer, []byte(signed))), nil
}

// Verify decodes code and checks its signature with the key it names. It
// returns the payload of a code signed by one of the keys; errors (all
// wrap ErrInvalidCode): ErrMalformed, ErrPayload, ErrUnknownKey,
// ErrBadSignature. It reads nothing: whether the ticket is still valid, and
// the code its current version, is the door's to say (door.Service).
func (k *Keys) Verify(code string) (Payload, error) {
	d, err := Decode(code)
	if err != nil {
		return Payload{}, err
	}
	pub, ok := k.public[d.Payload.KeyID]
	if !ok {
		return Payload{}, fmt.Errorf("%w: %q", ErrUnknownKey, d.Payload.KeyID)
	}
	if !ed25519.Verify(pub, []byte(d.Signed), d.Signature) {
		return Payload{}, ErrBadSignature
	}
	return d.Payload, nil
}

var (
	localOnce sync.Once
	localKeys *Keys
	localErr  error
)

// KeysFromEnv reads the keys from KeyEnv. Without it, on the emulators
// (FIRESTORE_EMULATOR_HOST set: a local run or a test), it makes one key
// for the process, the same for every call; otherwise ErrNoKey. The local
// run (cmd/firelock-local) makes its key itself and sets KeyEnv, so that the
// other processes of the run (and its env file) have it too.
func KeysFromEnv() (*Keys, error) {
	if v := os.Getenv(KeyEnv); v != "" {
		k, err := ParseKeys([]byte(v))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", KeyEnv, err)
		}
		if !k.CanSign() {
			return nil, fmt.Errorf("%s: the first key has no d: it cannot sign tickets", KeyEnv)
		}
		return k, nil
	}
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		return nil, ErrNoKey
	}
	localOnce.Do(func() { localKeys, localErr = GenerateKeys("") })
	return localKeys, localErr
}
