// Package appchecklocal stands in for Firebase App Check on loopback
// (CONTRACT §12): no emulator exists for it. An Issuer holds an RSA key
// made for one run, serves its key set (JWKS) where the functions' Admin
// SDK verifier fetches it (FIRELOCK_APPCHECK_JWKS_URL), and signs tokens
// as App Check signs them after an attestation. cmd/firelock-local serves
// its tokens to the web app; cmd/surge gives them to its people and none
// to its bots.
package appchecklocal

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

const (
	// TokenTTL is short, so that an app's token refresh runs in a local
	// session too (App Check's own default is an hour).
	TokenTTL = 10 * time.Minute
	// ProjectNumber stands for the project number that App Check puts in
	// its tokens' issuer and audience; the emulators' project has none.
	ProjectNumber = "123456789012"
	// AppID is the app ID (the token's subject) of a local run's tokens,
	// unless the run names another.
	AppID = "1:" + ProjectNumber + ":web:firelock-local"
)

// Issuer signs App Check tokens for one project and app with a key of its
// own.
type Issuer struct {
	Project string // the Firebase project the tokens are for
	AppID   string
	key     *rsa.PrivateKey
	kid     string
	jwks    []byte
}

// New makes an Issuer with a fresh 2048-bit RSA key.
func New(project, appID string) (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	kidBytes := make([]byte, 6)
	if _, err := rand.Read(kidBytes); err != nil {
		return nil, err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	is := &Issuer{Project: project, AppID: appID, key: key, kid: "firelock-local-" + b64(kidBytes)}
	is.jwks, err = json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": is.kid,
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	return is, err
}

// Sign makes a token as App Check signs one, valid from now for TokenTTL:
// RS256 with the key's id, the project's number in the issuer, the
// project's number and id in the audience, the app's ID as the subject.
func (is *Issuer) Sign(now time.Time) (string, time.Time, error) {
	exp := now.Add(TokenTTL)
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": "https://firebaseappcheck.googleapis.com/" + ProjectNumber,
		"sub": is.AppID,
		"aud": []string{"projects/" + ProjectNumber, "projects/" + is.Project},
		"iat": now.Unix(),
		"exp": exp.Unix(),
	})
	tok.Header["kid"] = is.kid
	s, err := tok.SignedString(is.key)
	return s, exp, err
}

// ServeJWKS answers the key set, as App Check's public keys endpoint does.
func (is *Issuer) ServeJWKS(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(is.jwks)
}
