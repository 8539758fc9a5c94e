package functions

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// unsigned makes an ID token as the Auth emulator signs it: alg none.
func unsigned(t *testing.T, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(b) + "."
}

func TestEmulatorTokensAreCheckedAsTheAdminSDKChecksThem(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	good := func() map[string]any {
		return map[string]any{"iss": "https://securetoken.google.com/demo-p", "aud": "demo-p", "sub": "u1",
			"iat": now.Unix() - 60, "exp": now.Unix() + 3540, "auth_time": now.Unix() - 60,
			"email": "u1@example.com", "email_verified": true, "operator": true,
			"firebase": map[string]any{"sign_in_provider": "password"}}
	}
	tok, err := verifyEmulatorToken(unsigned(t, good()), "demo-p", now)
	if err != nil {
		t.Fatal(err)
	}
	if tok.UID != "u1" || tok.Claims["email"] != "u1@example.com" || tok.Claims["operator"] != true ||
		tok.Claims["email_verified"] != true || tok.IssuedAt != now.Unix()-60 || tok.Firebase.SignInProvider != "password" {
		t.Fatalf("decoded %+v", tok)
	}
	if _, ok := tok.Claims["sub"]; ok {
		t.Fatalf("standard claims among the custom ones: %v", tok.Claims)
	}
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		want error
	}{
		{"another project's", func(m map[string]any) { m["aud"] = "demo-q" }, errTokenInvalid},
		{"another issuer's", func(m map[string]any) { m["iss"] = "https://securetoken.google.com/demo-q" }, errTokenInvalid},
		{"no subject", func(m map[string]any) { delete(m, "sub") }, errTokenInvalid},
		{"issued in the future", func(m map[string]any) { m["iat"] = now.Unix() + 301 }, errTokenInvalid},
		{"expired", func(m map[string]any) { m["exp"] = now.Unix() - 301 }, errTokenExpired},
	} {
		m := good()
		c.edit(m)
		if _, err := verifyEmulatorToken(unsigned(t, m), "demo-p", now); !errors.Is(err, c.want) {
			t.Errorf("%s token: %v, want %v", c.name, err, c.want)
		}
	}
	m := good()
	m["exp"] = now.Unix() - 299 // within the clock skew the SDK allows
	if _, err := verifyEmulatorToken(unsigned(t, m), "demo-p", now); err != nil {
		t.Errorf("a token expired 299 s ago: %v, want it taken (the SDK allows 300 s of skew)", err)
	}
	for _, bad := range []string{"", "a.b", "a.!!!.c", unsigned(t, good())[:10] + ".x.y"} {
		if _, err := verifyEmulatorToken(bad, "demo-p", now); !errors.Is(err, errTokenInvalid) {
			t.Errorf("token %q: %v, want invalid", bad, err)
		}
	}
}
