package firelock

// The security rules matrix: every case signs a request as a user (or as
// nobody) the way a mobile or web SDK would reach the emulator, and asserts
// that firestore.rules allows or denies it. Cases are named for the attack
// they stop. Run with `make test`; the emulator loads firestore.rules.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/lock"
	"github.com/firelock/firelock/sale"
	"github.com/firelock/firelock/ticket"
)

func TestMain(m *testing.M) { os.Exit(firelocktest.Main(m)) }

var errDenied = errors.New("permission denied")

// user is a client SDK signed in as uid ("" for nobody), with the custom
// claims of its ID token.
type user struct {
	t       *testing.T
	project string
	uid     string
	claims  map[string]any
}

// idToken is an unsigned Firebase ID token: the emulator accepts alg "none".
func (u user) idToken() string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now().Unix()
	payload := map[string]any{
		"iss": "https://securetoken.google.com/" + u.project, "aud": u.project,
		"sub": u.uid, "user_id": u.uid, "iat": now, "exp": now + 3600, "auth_time": now,
		"firebase": map[string]any{"sign_in_provider": "custom", "identities": map[string]any{}},
	}
	for k, v := range u.claims {
		payload[k] = v
	}
	return enc(map[string]any{"alg": "none", "typ": "JWT"}) + "." + enc(payload) + "."
}

func (u user) docName(path string) string {
	return fmt.Sprintf("projects/%s/databases/(default)/documents/%s", u.project, path)
}

// do sends one REST request and maps 403 to errDenied.
func (u user) do(method, url string, body any) error {
	u.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			u.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+os.Getenv("FIRESTORE_EMULATOR_HOST")+"/v1/"+url, r)
	if err != nil {
		u.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if u.uid != "" {
		req.Header.Set("Authorization", "Bearer "+u.idToken())
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusForbidden:
		return errDenied
	}
	return fmt.Errorf("HTTP %d: %s", resp.StatusCode, out)
}

// commit writes atomically, as a client batch does.
func (u user) commit(writes ...map[string]any) error {
	return u.do("POST", fmt.Sprintf("projects/%s/databases/(default)/documents:commit", u.project), map[string]any{"writes": writes})
}

func (u user) get(path string) error { return u.do("GET", u.docName(path), nil) }

// query runs a structured query on collection, filtered by uid == uid when
// uid is not empty, as a client's query by uid does.
func (u user) query(collection, uid string) error {
	q := map[string]any{"from": []map[string]any{{"collectionId": collection}}}
	if uid != "" {
		q["where"] = map[string]any{"fieldFilter": map[string]any{
			"field": map[string]any{"fieldPath": "uid"}, "op": "EQUAL", "value": value(uid)}}
	}
	return u.do("POST", fmt.Sprintf("projects/%s/databases/(default)/documents:runQuery", u.project), map[string]any{"structuredQuery": q})
}

// value encodes a Go value the REST way.
func value(v any) map[string]any {
	switch x := v.(type) {
	case string:
		return map[string]any{"stringValue": x}
	case int:
		return map[string]any{"integerValue": strconv.Itoa(x)}
	case float64:
		return map[string]any{"doubleValue": x}
	case time.Time:
		return map[string]any{"timestampValue": x.UTC().Format(time.RFC3339Nano)}
	case bool:
		return map[string]any{"booleanValue": x}
	}
	panic(fmt.Sprintf("value %T", v))
}

// set is a write of fields to path; stamp lists fields set to the server's
// request time; pre is an optional precondition.
func (u user) set(path string, fields map[string]any, stamp []string, mask []string) map[string]any {
	f := map[string]any{}
	for k, v := range fields {
		f[k] = value(v)
	}
	w := map[string]any{"update": map[string]any{"name": u.docName(path), "fields": f}}
	if len(stamp) > 0 {
		var ts []map[string]any
		for _, s := range stamp {
			ts = append(ts, map[string]any{"fieldPath": s, "setToServerValue": "REQUEST_TIME"})
		}
		w["updateTransforms"] = ts
	}
	if mask != nil {
		w["updateMask"] = map[string]any{"fieldPaths": mask}
	}
	return w
}

func (u user) del(path string) map[string]any { return map[string]any{"delete": u.docName(path)} }

// grant is the client protocol's grant: §1 fields, both times stamped by the server.
func (u user) grant(path string, leaseSeconds int) map[string]any {
	return u.set(path, map[string]any{"owner": u.uid, "leaseSeconds": leaseSeconds,
		"expireAt": time.Now().Add(24 * time.Hour)}, []string{"acquiredAt", "renewedAt"}, nil)
}

// renew moves renewedAt to the server's time, nothing else.
func (u user) renew(path string) map[string]any {
	return u.set(path, nil, []string{"renewedAt"}, []string{"renewedAt"})
}

var seq atomic.Int64

func uniq(prefix string) string { return fmt.Sprintf("%s%d", prefix, seq.Add(1)) }

// rulesCase is one row of the matrix.
type rulesCase struct {
	name  string
	allow bool
	// run sets up state (as allowed requests or with the admin client) and
	// returns the request under test's error.
	run func(t *testing.T, env rulesEnv) error
}

type rulesEnv struct {
	alice, bob, nobody user
	// olive is an operator (operator: true); otto's claim is false, and
	// sly's is the string "true", which is no operator either.
	olive, otto, sly user
	// sam is a scanner (scanner: true, CONTRACT §13); sid's claim is the
	// string "true", which is no scanner.
	sam, sid user
	admin    *firestore.Client
}

// ended waits past a 1-second lease taken just now.
func ended() { time.Sleep(1300 * time.Millisecond) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
}

func mutexAndData() (string, string) {
	id := uniq("d")
	return "mutex_critical_data/" + id, "critical_data/" + id
}

func rulesMatrix() []rulesCase {
	now := time.Now()
	return []rulesCase{
		// Taking a mutex.
		{"create mutex as self", true, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.grant(m, 30))
		}},
		{"unauthenticated client takes a mutex", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			w := e.nobody.grant(m, 30)
			return e.nobody.commit(w)
		}},
		{"forge another user as owner", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.set(m, map[string]any{"owner": "bob", "leaseSeconds": 30}, []string{"acquiredAt", "renewedAt"}, nil))
		}},
		{"back-date with client timestamps", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			past := now.Add(-time.Minute)
			return e.alice.commit(e.alice.set(m, map[string]any{"owner": "alice", "leaseSeconds": 30, "acquiredAt": past, "renewedAt": past}, nil, nil))
		}},
		{"forward-date renewedAt with a client timestamp", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.set(m, map[string]any{"owner": "alice", "leaseSeconds": 30, "renewedAt": now.Add(time.Hour)}, []string{"acquiredAt"}, nil))
		}},
		{"lease of 0 seconds", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.grant(m, 0))
		}},
		{"lease of 301 seconds (over the cap)", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.grant(m, 301))
		}},
		{"negative lease", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.grant(m, -5))
		}},
		{"non-integer lease", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.set(m, map[string]any{"owner": "alice", "leaseSeconds": 30.5}, []string{"acquiredAt", "renewedAt"}, nil))
		}},
		{"lease of 300 seconds (the cap)", true, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.grant(m, 300))
		}},
		{"smuggle an extra field into the lease", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.set(m, map[string]any{"owner": "alice", "leaseSeconds": 30, "admin": "yes"}, []string{"acquiredAt", "renewedAt"}, nil))
		}},
		{"lease without acquiredAt", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.set(m, map[string]any{"owner": "alice", "leaseSeconds": 30}, []string{"renewedAt"}, nil))
		}},
		{"expireAt before the lease end (TTL collects a live lease)", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.set(m, map[string]any{"owner": "alice", "leaseSeconds": 60, "expireAt": now.Add(10 * time.Second)}, []string{"acquiredAt", "renewedAt"}, nil))
		}},
		// Takeover.
		{"steal a live lease", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.bob.commit(e.bob.grant(m, 30))
		}},
		{"expireAt less than an hour past the lease end", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			return e.alice.commit(e.alice.set(m, map[string]any{"owner": "alice", "leaseSeconds": 60, "expireAt": time.Now().Add(30 * time.Minute)}, []string{"acquiredAt", "renewedAt"}, nil))
		}},
		{"revive own ended lease by renewing it", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 1)))
			ended()
			return e.alice.commit(e.alice.renew(m))
		}},
		{"take over an ended lease", true, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 1)))
			ended()
			return e.bob.commit(e.bob.grant(m, 30))
		}},
		{"take over an ended lease in someone else's name", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 1)))
			ended()
			return e.bob.commit(e.bob.set(m, map[string]any{"owner": "carol", "leaseSeconds": 30}, []string{"acquiredAt", "renewedAt"}, nil))
		}},
		{"take over an ended lease keeping the old acquiredAt (reuse a fencing token)", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 1)))
			ended()
			return e.bob.commit(e.bob.set(m, map[string]any{"owner": "bob", "leaseSeconds": 30}, []string{"renewedAt"}, []string{"owner", "leaseSeconds", "renewedAt"}))
		}},
		// Renewal.
		{"renew own lease", true, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.alice.commit(e.alice.renew(m))
		}},
		{"renew someone else's lease", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.bob.commit(e.bob.renew(m))
		}},
		{"move acquiredAt on renew", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.alice.commit(e.alice.set(m, nil, []string{"renewedAt", "acquiredAt"}, []string{"renewedAt", "acquiredAt"}))
		}},
		{"stretch the lease past 300 seconds on renew", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.alice.commit(e.alice.set(m, map[string]any{"leaseSeconds": 3600}, []string{"renewedAt"}, []string{"renewedAt", "leaseSeconds"}))
		}},
		{"renew with a client timestamp", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.alice.commit(e.alice.set(m, map[string]any{"renewedAt": now.Add(time.Hour)}, nil, []string{"renewedAt"}))
		}},
		{"hand the lease to another user on renew", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.alice.commit(e.alice.set(m, map[string]any{"owner": "bob"}, []string{"renewedAt"}, []string{"renewedAt", "owner"}))
		}},
		// Release.
		{"release own lease", true, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.alice.commit(e.alice.del(m))
		}},
		{"delete someone else's live lease", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.bob.commit(e.bob.del(m))
		}},
		{"clear someone else's ended lease", true, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 1)))
			ended()
			return e.bob.commit(e.bob.del(m))
		}},
		{"unauthenticated client clears an ended lease", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 1)))
			ended()
			return e.nobody.commit(e.nobody.del(m))
		}},
		// The guarded data.
		{"write guarded data without the mutex", false, func(t *testing.T, e rulesEnv) error {
			_, d := mutexAndData()
			return e.alice.commit(e.alice.set(d, map[string]any{"v": 1}, nil, nil))
		}},
		{"write guarded data under someone else's mutex", false, func(t *testing.T, e rulesEnv) error {
			m, d := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.bob.commit(e.bob.set(d, map[string]any{"v": 1}, nil, nil))
		}},
		{"write guarded data holding the mutex", true, func(t *testing.T, e rulesEnv) error {
			m, d := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.alice.commit(e.alice.set(d, map[string]any{"v": 1}, nil, nil))
		}},
		{"delete guarded data holding the mutex", true, func(t *testing.T, e rulesEnv) error {
			m, d := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30), e.alice.set(d, map[string]any{"v": 1}, nil, nil)))
			return e.alice.commit(e.alice.del(d))
		}},
		{"write guarded data after own mutex ended", false, func(t *testing.T, e rulesEnv) error {
			m, d := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 1)))
			ended()
			return e.alice.commit(e.alice.set(d, map[string]any{"v": 1}, nil, nil))
		}},
		{"take the mutex and write the data in one batch", true, func(t *testing.T, e rulesEnv) error {
			m, d := mutexAndData()
			return e.alice.commit(e.alice.grant(m, 30), e.alice.set(d, map[string]any{"v": 1}, nil, nil))
		}},
		{"write the data and release the mutex in one batch", true, func(t *testing.T, e rulesEnv) error {
			m, d := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.alice.commit(e.alice.set(d, map[string]any{"v": 2}, nil, nil), e.alice.del(m))
		}},
		{"steal the mutex and write the data in one batch", false, func(t *testing.T, e rulesEnv) error {
			m, d := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.bob.commit(e.bob.grant(m, 30), e.bob.set(d, map[string]any{"v": 1}, nil, nil))
		}},
		{"unauthenticated write of guarded data", false, func(t *testing.T, e rulesEnv) error {
			_, d := mutexAndData()
			return e.nobody.commit(e.nobody.set(d, map[string]any{"v": 1}, nil, nil))
		}},
		// Optimistic versions.
		{"create a versioned note at version 1", true, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set(uniq("versioned_notes/n"), map[string]any{"text": "a", "version": 1}, nil, nil))
		}},
		{"update a versioned note by one version", true, func(t *testing.T, e rulesEnv) error {
			n := uniq("versioned_notes/n")
			must(t, e.alice.commit(e.alice.set(n, map[string]any{"text": "a", "version": 1}, nil, nil)))
			return e.bob.commit(e.bob.set(n, map[string]any{"text": "b", "version": 2}, nil, nil))
		}},
		{"overwrite a newer version from a stale copy", false, func(t *testing.T, e rulesEnv) error {
			n := uniq("versioned_notes/n")
			must(t, e.alice.commit(e.alice.set(n, map[string]any{"text": "a", "version": 1}, nil, nil)))
			must(t, e.alice.commit(e.alice.set(n, map[string]any{"text": "b", "version": 2}, nil, nil)))
			return e.bob.commit(e.bob.set(n, map[string]any{"text": "stale", "version": 2}, nil, nil))
		}},
		{"skip versions", false, func(t *testing.T, e rulesEnv) error {
			n := uniq("versioned_notes/n")
			must(t, e.alice.commit(e.alice.set(n, map[string]any{"text": "a", "version": 1}, nil, nil)))
			return e.alice.commit(e.alice.set(n, map[string]any{"text": "b", "version": 7}, nil, nil))
		}},
		{"write a versioned note without a version", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set(uniq("versioned_notes/n"), map[string]any{"text": "a"}, nil, nil))
		}},
		{"create a versioned note with the longest text (10,000 characters)", true, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set(uniq("versioned_notes/n"), map[string]any{"text": strings.Repeat("é", 10000), "version": 1}, nil, nil))
		}},
		{"smuggle an extra field into a versioned note", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set(uniq("versioned_notes/n"), map[string]any{"text": "a", "version": 1, "admin": "yes"}, nil, nil))
		}},
		{"add an extra field to a versioned note on update", false, func(t *testing.T, e rulesEnv) error {
			n := uniq("versioned_notes/n")
			must(t, e.alice.commit(e.alice.set(n, map[string]any{"text": "a", "version": 1}, nil, nil)))
			return e.bob.commit(e.bob.set(n, map[string]any{"text": "b", "version": 2, "blob": strings.Repeat("x", 500_000)}, nil, nil))
		}},
		{"versioned note text over 10,000 characters", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set(uniq("versioned_notes/n"), map[string]any{"text": strings.Repeat("a", 10001), "version": 1}, nil, nil))
		}},
		{"versioned note text that is not a string", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set(uniq("versioned_notes/n"), map[string]any{"text": 42, "version": 1}, nil, nil))
		}},
		{"versioned note version that is not an integer", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set(uniq("versioned_notes/n"), map[string]any{"text": "a", "version": 1.0}, nil, nil))
		}},
		{"delete a versioned note", false, func(t *testing.T, e rulesEnv) error {
			n := uniq("versioned_notes/n")
			must(t, e.alice.commit(e.alice.set(n, map[string]any{"text": "a", "version": 1}, nil, nil)))
			return e.alice.commit(e.alice.del(n))
		}},
		{"write a versioned note signed out", false, func(t *testing.T, e rulesEnv) error {
			return e.nobody.commit(e.nobody.set(uniq("versioned_notes/n"), map[string]any{"text": "a", "version": 1}, nil, nil))
		}},
		// Public profiles: the name a user shows others (the mutex page's holder).
		{"write own profile", true, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set("profiles/"+e.alice.uid, map[string]any{"displayName": "Alice Liddell"}, nil, nil))
		}},
		{"rename own profile, to the longest name (64 characters)", true, func(t *testing.T, e rulesEnv) error {
			must(t, e.bob.commit(e.bob.set("profiles/"+e.bob.uid, map[string]any{"displayName": "Bob"}, nil, nil)))
			return e.bob.commit(e.bob.set("profiles/"+e.bob.uid, map[string]any{"displayName": strings.Repeat("ß", 64)}, nil, nil))
		}},
		{"write another user's profile", false, func(t *testing.T, e rulesEnv) error {
			return e.bob.commit(e.bob.set("profiles/"+e.alice.uid, map[string]any{"displayName": "Alice (really Bob)"}, nil, nil))
		}},
		{"unauthenticated profile write", false, func(t *testing.T, e rulesEnv) error {
			return e.nobody.commit(e.nobody.set("profiles/"+e.alice.uid, map[string]any{"displayName": "x"}, nil, nil))
		}},
		{"smuggle an extra field into a profile", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set("profiles/"+e.alice.uid, map[string]any{"displayName": "Alice", "email": "alice@example.com"}, nil, nil))
		}},
		{"profile name over 64 characters", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set("profiles/"+e.alice.uid, map[string]any{"displayName": strings.Repeat("a", 65)}, nil, nil))
		}},
		{"empty profile name", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set("profiles/"+e.alice.uid, map[string]any{"displayName": ""}, nil, nil))
		}},
		{"profile name that is not a string", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set("profiles/"+e.alice.uid, map[string]any{"displayName": 7}, nil, nil))
		}},
		{"profile without a name", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set("profiles/"+e.alice.uid, map[string]any{}, nil, nil))
		}},
		{"read a profile signed in", true, func(t *testing.T, e rulesEnv) error {
			p := uniq("profiles/u")
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"displayName": "Carol"})
			must(t, err)
			return e.bob.get(p)
		}},
		{"read a profile signed out", false, func(t *testing.T, e rulesEnv) error {
			p := uniq("profiles/u")
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"displayName": "Carol"})
			must(t, err)
			return e.nobody.get(p)
		}},
		{"list everybody's profiles", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.query("profiles", "")
		}},
		{"delete own profile", true, func(t *testing.T, e rulesEnv) error {
			p := "profiles/" + uniq("dan")
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"displayName": "Dan"})
			must(t, err)
			dan := user{t: t, project: e.alice.project, uid: p[len("profiles/"):]}
			return dan.commit(dan.del(p))
		}},
		{"delete another user's profile", false, func(t *testing.T, e rulesEnv) error {
			p := uniq("profiles/u")
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"displayName": "Carol"})
			must(t, err)
			return e.alice.commit(e.alice.del(p))
		}},
		// Reads the contract allows and denies.
		{"read a screening signed out", true, func(t *testing.T, e rulesEnv) error {
			_, err := e.admin.Doc("screenings/s1").Set(context.Background(), map[string]any{"title": "x"})
			must(t, err)
			return e.nobody.get("screenings/s1")
		}},
		{"read the seat map", true, func(t *testing.T, e rulesEnv) error {
			_, err := e.admin.Doc("screenings/s1/seats/A1").Set(context.Background(), map[string]any{"status": "booked", "bookingId": "b1"})
			must(t, err)
			return e.alice.get("screenings/s1/seats/A1")
		}},
		{"read own booking", true, func(t *testing.T, e rulesEnv) error {
			b := uniq("bookings/b")
			_, err := e.admin.Doc(b).Set(context.Background(), map[string]any{"uid": "alice"})
			must(t, err)
			return e.alice.get(b)
		}},
		{"read another user's booking", false, func(t *testing.T, e rulesEnv) error {
			b := uniq("bookings/b")
			_, err := e.admin.Doc(b).Set(context.Background(), map[string]any{"uid": "alice"})
			must(t, err)
			return e.bob.get(b)
		}},
		{"read a booking signed out", false, func(t *testing.T, e rulesEnv) error {
			b := uniq("bookings/b")
			_, err := e.admin.Doc(b).Set(context.Background(), map[string]any{"uid": "alice"})
			must(t, err)
			return e.nobody.get(b)
		}},
		{"query own bookings by uid", true, func(t *testing.T, e rulesEnv) error {
			return e.alice.query("bookings", "alice")
		}},
		{"query everybody's bookings", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.query("bookings", "")
		}},
		{"query another user's bookings by uid", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.query("bookings", "bob")
		}},
		{"read own hold", true, func(t *testing.T, e rulesEnv) error {
			h := uniq("holds/h")
			_, err := e.admin.Doc(h).Set(context.Background(), map[string]any{"uid": "alice", "status": "held"})
			must(t, err)
			return e.alice.get(h)
		}},
		{"read another user's hold", false, func(t *testing.T, e rulesEnv) error {
			h := uniq("holds/h")
			_, err := e.admin.Doc(h).Set(context.Background(), map[string]any{"uid": "alice", "status": "held"})
			must(t, err)
			return e.bob.get(h)
		}},
		{"query own holds by uid", true, func(t *testing.T, e rulesEnv) error {
			return e.alice.query("holds", "alice")
		}},
		{"query everybody's holds", false, func(t *testing.T, e rulesEnv) error {
			return e.bob.query("holds", "")
		}},
		{"read a counter total", true, func(t *testing.T, e rulesEnv) error {
			_, err := e.admin.Doc("counters/c1").Set(context.Background(), map[string]any{"numShards": 3, "total": 5})
			must(t, err)
			return e.nobody.get("counters/c1")
		}},
		{"read a counter shard", false, func(t *testing.T, e rulesEnv) error {
			_, err := e.admin.Doc("counters/c1/shards/0").Set(context.Background(), map[string]any{"count": 5})
			must(t, err)
			return e.alice.get("counters/c1/shards/0")
		}},
		{"read own payment", true, func(t *testing.T, e rulesEnv) error {
			p := uniq("payments/h")
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"uid": "alice", "status": "open", "amount": 1250})
			must(t, err)
			return e.alice.get(p)
		}},
		{"read another user's payment", false, func(t *testing.T, e rulesEnv) error {
			p := uniq("payments/h")
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"uid": "alice", "status": "open", "amount": 1250})
			must(t, err)
			return e.bob.get(p)
		}},
		{"read a payment signed out", false, func(t *testing.T, e rulesEnv) error {
			p := uniq("payments/h")
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"uid": "alice", "status": "open"})
			must(t, err)
			return e.nobody.get(p)
		}},
		{"query own payments by uid", true, func(t *testing.T, e rulesEnv) error {
			return e.alice.query("payments", "alice")
		}},
		{"query everybody's payments", false, func(t *testing.T, e rulesEnv) error {
			return e.bob.query("payments", "")
		}},
		{"operator reads a payment", true, func(t *testing.T, e rulesEnv) error {
			p := uniq("payments/h")
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"uid": "alice", "status": "paid"})
			must(t, err)
			return e.olive.get(p)
		}},
		{"a false operator claim reads a payment", false, func(t *testing.T, e rulesEnv) error {
			p := uniq("payments/h")
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"uid": "alice", "status": "paid"})
			must(t, err)
			return e.sly.get(p)
		}},
		{"read a Stripe event's lease", false, func(t *testing.T, e rulesEnv) error {
			_, err := e.admin.Doc("stripeEvents/evt_1").Set(context.Background(), map[string]any{"state": "done", "holdId": "h"})
			must(t, err)
			return e.olive.get("stripeEvents/evt_1")
		}},
		{"read a job run", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.get("jobRuns/x")
		}},
		{"read a server lock", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.get("locks/x")
		}},
		{"read a mutex signed in", true, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.bob.get(m)
		}},
		{"read a mutex signed out", false, func(t *testing.T, e rulesEnv) error {
			m, _ := mutexAndData()
			must(t, e.alice.commit(e.alice.grant(m, 30)))
			return e.nobody.get(m)
		}},
	}
}

// Server-only collections: no client write, whatever it claims.
func serverOnlyCases() []rulesCase {
	paths := []string{
		"screenings/s1", "screenings/s1/seats/A1", "bookings/b1", "holds/h1", "counters/c1",
		"counters/c1/shards/0", "jobRuns/e1", "jobRuns/e1/deliveries/x1", "locks/k1",
		"seatLocks/s1_A1", "payments/h1", "stripeEvents/evt_1", "stripeEvents/evt_1/deliveries/x1", "somethingElse/x",
		"tickets/t1", "checkins/t1", "screenings/s1/scans/nonce-0123456789abcdef",
	}
	var cs []rulesCase
	for _, p := range paths {
		cs = append(cs, rulesCase{"client writes server-only " + p, false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set(p, map[string]any{"uid": "alice", "status": "booked", "count": 1000}, nil, nil))
		}})
		cs = append(cs, rulesCase{"client deletes server-only " + p, false, func(t *testing.T, e rulesEnv) error {
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"uid": "alice"})
			must(t, err)
			return e.alice.commit(e.alice.del(p))
		}})
	}
	return cs
}

// CONTRACT §7: places, sales and the gated seat map.

// queryUnder lists collection under the document parent, as a client's
// query on a subcollection does.
func (u user) queryUnder(parent, collection string) error {
	q := map[string]any{"from": []map[string]any{{"collectionId": collection}}}
	return u.do("POST", u.docName(parent)+":runQuery", map[string]any{"structuredQuery": q})
}

// onSale writes a screening with a sale, one booked seat, its public
// document in state (none if ""), and passes: uid -> {status, passUntil}.
func onSale(t *testing.T, e rulesEnv, state string, passes map[string]map[string]any) string {
	t.Helper()
	ctx := context.Background()
	id := uniq("sale")
	_, err := e.admin.Doc("screenings/"+id).Set(ctx, map[string]any{"title": "x", "startsAt": time.Now().Add(time.Hour),
		"rows": []string{"A"}, "seatsPerRow": 2, "sale": map[string]any{"opensAt": time.Now(), "admitPerMinute": 10, "maxActive": 10}})
	must(t, err)
	_, err = e.admin.Doc("screenings/"+id+"/seats/A1").Set(ctx, map[string]any{"status": "booked", "bookingId": "b1"})
	must(t, err)
	if state != "" {
		_, err = e.admin.Doc("sales/"+id).Set(ctx, map[string]any{"state": state, "seatsLeft": 1})
		must(t, err)
	}
	for uid, p := range passes {
		doc := map[string]any{"uid": uid, "screeningId": id, "joinedAt": time.Now(), "shard": 0}
		for k, v := range p {
			doc[k] = v
		}
		if doc["screeningId"] == "" { // a pass for another screening
			doc["screeningId"] = id + "-other"
			_, err = e.admin.Doc("queue/"+sale.QueueID(id+"-other", uid)).Set(ctx, doc)
		} else {
			_, err = e.admin.Doc("queue/"+sale.QueueID(id, uid)).Set(ctx, doc)
		}
		must(t, err)
	}
	return id
}

func livePass() map[string]any {
	return map[string]any{"status": "admitted", "passUntil": time.Now().Add(time.Hour)}
}

func saleCases() []rulesCase {
	cs := []rulesCase{
		{"read own place in the queue", true, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": {"status": "waiting"}})
			return e.alice.get("queue/" + sale.QueueID(id, "alice"))
		}},
		{"read another user's place in the queue", false, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": {"status": "waiting"}})
			return e.bob.get("queue/" + sale.QueueID(id, "alice"))
		}},
		{"read a place in the queue signed out", false, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": {"status": "waiting"}})
			return e.nobody.get("queue/" + sale.QueueID(id, "alice"))
		}},
		{"query everybody's places to learn the line", false, func(t *testing.T, e rulesEnv) error {
			onSale(t, e, "open", map[string]map[string]any{"alice": {"status": "waiting"}})
			return e.alice.query("queue", "")
		}},
		{"read an early joiner's secret draw", false, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "scheduled", nil)
			q := sale.QueueID(id, "alice")
			_, err := e.admin.Doc("queueDraws/"+q).Set(context.Background(), map[string]any{"screeningId": id, "draw": "ab"})
			must(t, err)
			return e.alice.get("queueDraws/" + q)
		}},
		{"read the admitter's private state", false, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", nil)
			_, err := e.admin.Doc("saleStates/"+id).Set(context.Background(), map[string]any{"admitted": 1})
			must(t, err)
			return e.alice.get("saleStates/" + id)
		}},
		{"read a sale's public document signed out", true, func(t *testing.T, e rulesEnv) error {
			return e.nobody.get("sales/" + onSale(t, e, "open", nil))
		}},
		{"read the seat map of an open sale with a live pass", true, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": livePass()})
			return e.alice.get("screenings/" + id + "/seats/A1")
		}},
		{"listen to the seat map of an open sale with a live pass", true, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": livePass()})
			return e.alice.queryUnder("screenings/"+id, "seats")
		}},
		{"read the seat map of a sold-out sale without a pass", true, func(t *testing.T, e rulesEnv) error {
			return e.nobody.get("screenings/" + onSale(t, e, "soldout", nil) + "/seats/A1")
		}},
		{"read the seat map of a closed sale without a pass", true, func(t *testing.T, e rulesEnv) error {
			return e.bob.queryUnder("screenings/"+onSale(t, e, "closed", nil), "seats")
		}},
		{"read the seat map of an open sale while waiting", false, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": {"status": "waiting"}})
			return e.alice.get("screenings/" + id + "/seats/A1")
		}},
		{"listen to the seat map of an open sale while waiting", false, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": {"status": "waiting"}})
			return e.alice.queryUnder("screenings/"+id, "seats")
		}},
		{"read the seat map of a scheduled sale", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.get("screenings/" + onSale(t, e, "scheduled", nil) + "/seats/A1")
		}},
		{"read the seat map of a sale not yet published", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.get("screenings/" + onSale(t, e, "", nil) + "/seats/A1")
		}},
		{"read the seat map signed out during a sale", false, func(t *testing.T, e rulesEnv) error {
			return e.nobody.queryUnder("screenings/"+onSale(t, e, "open", nil), "seats")
		}},
		{"read the seat map of a screening whose sale is null", true, func(t *testing.T, e rulesEnv) error {
			// null is no sale to the server (no gate, JoinQueue no_sale):
			// the map is as public as any unsold screening's.
			id := onSale(t, e, "", nil)
			_, err := e.admin.Doc("screenings/"+id).Update(context.Background(), []firestore.Update{{Path: "sale", Value: nil}})
			must(t, err)
			return e.bob.get("screenings/" + id + "/seats/A1")
		}},
		{"read the seat map with a pass that has ended", false, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": {"status": "admitted", "passUntil": time.Now().Add(-time.Second)}})
			return e.alice.get("screenings/" + id + "/seats/A1")
		}},
		{"read the seat map with a pass marked done", false, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": {"status": "done", "passUntil": time.Now().Add(time.Hour)}})
			return e.alice.get("screenings/" + id + "/seats/A1")
		}},
		{"read the seat map with another screening's pass", false, func(t *testing.T, e rulesEnv) error {
			pass := livePass()
			pass["screeningId"] = ""
			id := onSale(t, e, "open", map[string]map[string]any{"alice": pass})
			return e.alice.get("screenings/" + id + "/seats/A1")
		}},
		{"read the seat map with someone else's pass", false, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": livePass()})
			return e.bob.get("screenings/" + id + "/seats/A1")
		}},
	}
	for _, p := range []string{"queue/q1", "sales/s1", "queueDraws/q1", "saleStates/s1", "saleRankings/s1"} {
		cs = append(cs, rulesCase{"client writes server-only " + p, false, func(t *testing.T, e rulesEnv) error {
			return e.alice.commit(e.alice.set(p, map[string]any{"uid": "alice", "status": "admitted", "state": "open"}, nil, nil))
		}})
		cs = append(cs, rulesCase{"client deletes server-only " + p, false, func(t *testing.T, e rulesEnv) error {
			_, err := e.admin.Doc(p).Set(context.Background(), map[string]any{"uid": "alice"})
			must(t, err)
			return e.alice.commit(e.alice.del(p))
		}})
	}
	return cs
}

// CONTRACT §8: operators read the log, the minute figures, every place and
// the seat map of a sale; nobody else reads the log or the figures; no
// client writes any of them.
func operatorCases() []rulesCase {
	ctx := context.Background()
	withLog := func(t *testing.T, e rulesEnv) string {
		id := onSale(t, e, "open", map[string]map[string]any{"alice": {"status": "waiting"}})
		_, err := e.admin.Doc("saleLog/"+id+"/entries/e1").Set(ctx, map[string]any{"action": "pause", "uid": "olive", "email": "olive@example.com"})
		must(t, err)
		_, err = e.admin.Doc("saleStats/"+id+"/minutes/202611241200").Set(ctx, map[string]any{"waiting": 3, "admissions": 1})
		must(t, err)
		_, err = e.admin.Doc("seatMaps/"+id).Set(ctx, map[string]any{"seats": "b.", "updatedAt": time.Now()})
		must(t, err)
		return id
	}
	cs := []rulesCase{
		{"operator reads a sale's log", true, func(t *testing.T, e rulesEnv) error { return e.olive.get("saleLog/" + withLog(t, e) + "/entries/e1") }},
		{"operator lists a sale's log", true, func(t *testing.T, e rulesEnv) error { return e.olive.queryUnder("saleLog/"+withLog(t, e), "entries") }},
		{"operator lists a sale's minute figures", true, func(t *testing.T, e rulesEnv) error {
			return e.olive.queryUnder("saleStats/"+withLog(t, e), "minutes")
		}},
		{"operator reads someone's place", true, func(t *testing.T, e rulesEnv) error {
			return e.olive.get("queue/" + sale.QueueID(withLog(t, e), "alice"))
		}},
		{"operator lists the queue", true, func(t *testing.T, e rulesEnv) error { withLog(t, e); return e.olive.query("queue", "") }},
		{"operator reads someone's hold", true, func(t *testing.T, e rulesEnv) error {
			h := uniq("holds/h")
			must(t, func() error {
				_, err := e.admin.Doc(h).Set(ctx, map[string]any{"uid": "alice", "status": "held"})
				return err
			}())
			return e.olive.get(h)
		}},
		{"operator reads someone's booking", true, func(t *testing.T, e rulesEnv) error {
			b := uniq("bookings/b")
			must(t, func() error {
				_, err := e.admin.Doc(b).Set(ctx, map[string]any{"uid": "alice", "status": "confirmed"})
				return err
			}())
			return e.olive.get(b)
		}},
		{"operator queries someone's holds by uid", true, func(t *testing.T, e rulesEnv) error { return e.olive.query("holds", "alice") }},
		{"operator queries someone's bookings by uid", true, func(t *testing.T, e rulesEnv) error { return e.olive.query("bookings", "alice") }},
		{"operator reads the sale's seat map without a pass", true, func(t *testing.T, e rulesEnv) error { return e.olive.get("seatMaps/" + withLog(t, e)) }},
		{"user with a live pass reads the sale's seat map", true, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "open", map[string]map[string]any{"alice": livePass()})
			_, err := e.admin.Doc("seatMaps/"+id).Set(ctx, map[string]any{"seats": "b.", "updatedAt": time.Now()})
			must(t, err)
			return e.alice.get("seatMaps/" + id)
		}},
		{"waiting user reads the sale's seat map", false, func(t *testing.T, e rulesEnv) error { return e.alice.get("seatMaps/" + withLog(t, e)) }},
		{"anyone reads the seat map of a closed sale", true, func(t *testing.T, e rulesEnv) error {
			id := onSale(t, e, "closed", nil)
			_, err := e.admin.Doc("seatMaps/"+id).Set(ctx, map[string]any{"seats": "b.", "updatedAt": time.Now()})
			must(t, err)
			return e.nobody.get("seatMaps/" + id)
		}},
	}
	for _, who := range []struct {
		name string
		u    func(e rulesEnv) user
	}{
		{"user", func(e rulesEnv) user { return e.alice }},
		{"user whose operator claim is false", func(e rulesEnv) user { return e.otto }},
		{"user whose operator claim is the string \"true\"", func(e rulesEnv) user { return e.sly }},
		{"signed-out client", func(e rulesEnv) user { return e.nobody }},
	} {
		cs = append(cs,
			rulesCase{who.name + " reads a sale's log", false, func(t *testing.T, e rulesEnv) error { return who.u(e).get("saleLog/" + withLog(t, e) + "/entries/e1") }},
			rulesCase{who.name + " lists a sale's log", false, func(t *testing.T, e rulesEnv) error { return who.u(e).queryUnder("saleLog/"+withLog(t, e), "entries") }},
			rulesCase{who.name + " reads a sale's minute figures", false, func(t *testing.T, e rulesEnv) error {
				return who.u(e).get("saleStats/" + withLog(t, e) + "/minutes/202611241200")
			}},
			rulesCase{who.name + " reads bob's hold", false, func(t *testing.T, e rulesEnv) error {
				h := uniq("holds/h")
				must(t, func() error {
					_, err := e.admin.Doc(h).Set(ctx, map[string]any{"uid": "bob", "status": "held"})
					return err
				}())
				return who.u(e).get(h)
			}},
			rulesCase{who.name + " reads bob's booking", false, func(t *testing.T, e rulesEnv) error {
				b := uniq("bookings/b")
				must(t, func() error {
					_, err := e.admin.Doc(b).Set(ctx, map[string]any{"uid": "bob", "status": "confirmed"})
					return err
				}())
				return who.u(e).get(b)
			}},
			rulesCase{who.name + " queries bob's holds", false, func(t *testing.T, e rulesEnv) error { return who.u(e).query("holds", "bob") }},
			rulesCase{who.name + " queries bob's bookings", false, func(t *testing.T, e rulesEnv) error { return who.u(e).query("bookings", "bob") }},
		)
	}
	for _, p := range []string{"saleLog/s1/entries/e1", "saleStats/s1/minutes/202611241200", "seatMaps/s1", "sales/s1", "queue/q1", "screenings/s1", "holds/h1", "bookings/b1"} {
		cs = append(cs,
			rulesCase{"operator writes server-only " + p, false, func(t *testing.T, e rulesEnv) error {
				return e.olive.commit(e.olive.set(p, map[string]any{"state": "open", "action": "close", "seats": "..."}, nil, nil))
			}},
			rulesCase{"client writes server-only " + p, false, func(t *testing.T, e rulesEnv) error {
				return e.alice.commit(e.alice.set(p, map[string]any{"state": "open", "action": "close", "seats": "..."}, nil, nil))
			}},
		)
	}
	return cs
}

func TestSecurityRulesMatrix(t *testing.T) {
	project := firelocktest.ProjectID(t)
	env := rulesEnv{
		alice:  user{t: t, project: project, uid: "alice"},
		bob:    user{t: t, project: project, uid: "bob"},
		nobody: user{t: t, project: project},
		admin:  firelocktest.NewClientFor(t, project),
	}
	env.olive = user{t: t, project: project, uid: "olive", claims: map[string]any{"operator": true}}
	env.otto = user{t: t, project: project, uid: "otto", claims: map[string]any{"operator": false}}
	env.sly = user{t: t, project: project, uid: "sly", claims: map[string]any{"operator": "true"}}
	env.sam = user{t: t, project: project, uid: "sam", claims: map[string]any{"scanner": true}}
	env.sid = user{t: t, project: project, uid: "sid", claims: map[string]any{"scanner": "true"}}
	cases := append(append(append(append(rulesMatrix(), serverOnlyCases()...), saleCases()...), operatorCases()...), doorCases()...)
	var allowed, denied int
	for _, c := range cases {
		if c.allow {
			allowed++
		} else {
			denied++
		}
	}
	t.Logf("rules matrix: %d cases, %d allowed, %d denied", len(cases), allowed, denied)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := env
			e.alice.t, e.bob.t, e.nobody.t, e.olive.t, e.otto.t, e.sly.t, e.sam.t, e.sid.t = t, t, t, t, t, t, t, t
			err := c.run(t, e)
			switch {
			case c.allow && err != nil:
				t.Fatalf("want allowed, got %v", err)
			case !c.allow && !errors.Is(err, errDenied):
				t.Fatalf("want denied, got %v", err)
			}
		})
	}
}

// Protocol parity: a lease taken by the Go library is refused to a client
// until it ends, and a client's lease is honoured by the Go library.
func TestLeaseParityWithGoLibrary(t *testing.T) {
	project := firelocktest.ProjectID(t)
	admin := firelocktest.NewClientFor(t, project)
	alice := user{t: t, project: project, uid: "alice"}
	ctx := context.Background()

	server, err := lock.New(admin, "mutex_critical_data", lock.WithLeaseDuration(time.Second), lock.SharedWithClients())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.TryAcquire(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if err := alice.commit(alice.grant("mutex_critical_data/p1", 30)); !errors.Is(err, errDenied) {
		t.Fatalf("client took a live server lease: %v", err)
	}
	if err := alice.commit(alice.set("critical_data/p1", map[string]any{"v": 1}, nil, nil)); !errors.Is(err, errDenied) {
		t.Fatalf("client wrote data guarded by a server lease: %v", err)
	}
	ended()
	if err := alice.commit(alice.grant("mutex_critical_data/p1", 1)); err != nil {
		t.Fatalf("client could not take over an ended server lease: %v", err)
	}

	// The client's lease (1s) now holds p1: the library must wait for it.
	_, err = server.TryAcquire(ctx, "p1")
	var held *lock.HeldError
	if !errors.As(err, &held) || held.Holders[0].Owner != "alice" {
		t.Fatalf("library ignored a client lease: %v", err)
	}
	ended()
	lease, err := server.TryAcquire(ctx, "p1")
	if err != nil {
		t.Fatalf("library could not take over an ended client lease: %v", err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// CONTRACT §13: tickets and the door. A scanner's own check-in is one
// batched write of checkins/{ticketId} and screenings/{id}/scans/{nonce},
// held by the rules to the state machine of door.Service.CheckIn.

// queryWhere runs a structured query on collection filtered by field ==
// value, as a client's query does.
func (u user) queryWhere(collection, field, v string) error {
	q := map[string]any{"from": []map[string]any{{"collectionId": collection}}, "where": map[string]any{"fieldFilter": map[string]any{
		"field": map[string]any{"fieldPath": field}, "op": "EQUAL", "value": value(v)}}}
	return u.do("POST", fmt.Sprintf("projects/%s/databases/(default)/documents:runQuery", u.project), map[string]any{"structuredQuery": q})
}

// doorScene is a screening with a door and a ticket of alice's, written
// by the admin: the state a check-in starts from.
type doorScene struct {
	screening, ticket string
}

// doorOptions shape a scene: the door (nil: none), the ticket's version
// and status, and a check-in to start from (nil: none).
type doorOptions struct {
	door    map[string]any
	version int
	status  string
	checkIn map[string]any
}

func openDoor(reentry bool) map[string]any {
	return map[string]any{"opensAt": time.Now().Add(-time.Minute), "gates": []any{"A", "B"}, "reentry": reentry}
}

func newDoorScene(t *testing.T, e rulesEnv, o doorOptions) doorScene {
	t.Helper()
	ctx := context.Background()
	sc := doorScene{screening: uniq("door"), ticket: uniq("ticket0000000000000")}
	doc := map[string]any{"title": "x", "startsAt": time.Now().Add(time.Hour), "rows": []string{"A"}, "seatsPerRow": 2}
	if o.door != nil {
		doc["door"] = o.door
	}
	_, err := e.admin.Doc("screenings/"+sc.screening).Set(ctx, doc)
	must(t, err)
	if o.version == 0 {
		o.version = 1
	}
	if o.status == "" {
		o.status = "valid"
	}
	_, err = e.admin.Doc("tickets/"+sc.ticket).Set(ctx, map[string]any{"uid": "alice", "screeningId": sc.screening, "seatId": "A1",
		"bookingId": "b1", "status": o.status, "version": o.version, "code": "FLT1.x.y", "issuedAt": time.Now()})
	must(t, err)
	if o.checkIn != nil {
		c := map[string]any{"screeningId": sc.screening, "version": o.version, "state": "in", "seq": 1, "gate": "A",
			"at": time.Now().Add(-time.Second), "scannedAt": time.Now().Add(-time.Second), "by": "sam", "nonce": uniq("nonce-earlier-0000"), "offline": false}
		for k, v := range o.checkIn {
			c[k] = v
		}
		_, err = e.admin.Doc("checkins/"+sc.ticket).Set(ctx, c)
		must(t, err)
	}
	return sc
}

// move is one check-in as the scanner app writes it: the check-in and its
// scan, both stamped with the server's time (at), in one batch. change
// alters the check-in's fields and scan the scan's before they are sent;
// a nil field is left out; "at" set to a time is sent as that time instead
// of the server's.
type move struct {
	state   string // in or out
	seq     int
	version int
	gate    string
	nonce   string
	change  map[string]any
	scan    map[string]any
	noScan  bool
	noCheck bool
}

func (u user) checkInBatch(sc doorScene, m move) error {
	if m.gate == "" {
		m.gate = "A"
	}
	if m.nonce == "" {
		m.nonce = uniq("nonce-0123456789-")
	}
	if m.version == 0 {
		m.version = 1
	}
	result := map[string]string{"in": "admitted", "out": "exited"}[m.state]
	c := map[string]any{"screeningId": sc.screening, "version": m.version, "state": m.state, "seq": m.seq, "gate": m.gate,
		"scannedAt": time.Now().Add(-time.Second), "by": u.uid, "nonce": m.nonce, "offline": false}
	s := map[string]any{"ticketId": sc.ticket, "gate": m.gate, "by": u.uid, "direction": m.state, "result": result,
		"scannedAt": time.Now().Add(-time.Second), "offline": false}
	write := func(path string, fields, change map[string]any) map[string]any {
		stamp := []string{"at"}
		for k, v := range change {
			if v == nil {
				delete(fields, k)
				continue
			}
			fields[k] = v
			if k == "at" {
				stamp = nil
			}
		}
		return u.set(path, fields, stamp, nil)
	}
	var writes []map[string]any
	if !m.noCheck {
		writes = append(writes, write("checkins/"+sc.ticket, c, m.change))
	}
	if !m.noScan {
		writes = append(writes, write("screenings/"+sc.screening+"/scans/"+m.nonce, s, m.scan))
	}
	return u.commit(writes...)
}

func doorCases() []rulesCase {
	first := move{state: "in", seq: 1}
	scene := func(o doorOptions) func(t *testing.T, e rulesEnv) doorScene {
		return func(t *testing.T, e rulesEnv) doorScene { return newDoorScene(t, e, o) }
	}
	open := scene(doorOptions{door: openDoor(false)})
	reentry := scene(doorOptions{door: openDoor(true), checkIn: map[string]any{}})
	cs := []rulesCase{}
	write := func(name string, allow bool, who func(rulesEnv) user, at func(*testing.T, rulesEnv) doorScene, m move) {
		cs = append(cs, rulesCase{name, allow, func(t *testing.T, e rulesEnv) error { return who(e).checkInBatch(at(t, e), m) }})
	}
	sam := func(e rulesEnv) user { return e.sam }
	write("scanner checks a valid ticket in (check-in and scan in one batch)", true, sam, open, first)
	write("operator checks a valid ticket in", true, func(e rulesEnv) user { return e.olive }, open, first)
	write("scanner uploads an offline entry (offline, scanned a minute ago)", true, sam, open,
		move{state: "in", seq: 1, change: map[string]any{"offline": true, "scannedAt": time.Now().Add(-time.Minute)}, scan: map[string]any{"offline": true}})
	write("buyer writes their own check-in", false, func(e rulesEnv) user { return e.alice }, open, first)
	write("non-scanner (claim scanner: \"true\") writes a check-in", false, func(e rulesEnv) user { return e.sid }, open, first)
	write("user whose operator claim is false writes a check-in", false, func(e rulesEnv) user { return e.otto }, open, first)
	write("signed-out client writes a check-in", false, func(e rulesEnv) user { return e.nobody }, open, first)
	write("scanner forges by (another scanner's uid)", false, sam, open, move{state: "in", seq: 1, change: map[string]any{"by": "sue"}, scan: map[string]any{"by": "sue"}})
	write("scanner back-dates at", false, sam, open, move{state: "in", seq: 1, change: map[string]any{"at": time.Now().Add(-time.Hour)}, scan: map[string]any{"at": time.Now().Add(-time.Hour)}})
	write("scanner sends scannedAt an hour ahead", false, sam, open, move{state: "in", seq: 1, change: map[string]any{"scannedAt": time.Now().Add(time.Hour)}, scan: map[string]any{"scannedAt": time.Now().Add(time.Hour)}})
	write("scanner writes a check-in without its scan", false, sam, open, move{state: "in", seq: 1, noScan: true})
	write("scanner's scan names another gate than its check-in", false, sam, open, move{state: "in", seq: 1, scan: map[string]any{"gate": "B"}})
	write("scanner's scan of an entry says already_in", false, sam, open, move{state: "in", seq: 1, scan: map[string]any{"result": "already_in"}})
	write("scanner's first entry skips to seq 2", false, sam, open, move{state: "in", seq: 2})
	write("scanner's first entry is an exit", false, sam, scene(doorOptions{door: openDoor(true)}), move{state: "out", seq: 1})
	write("scanner names a stale version (the ticket was transferred)", false, sam, scene(doorOptions{door: openDoor(false), version: 2}), move{state: "in", seq: 1, version: 1})
	write("scanner names the ticket's current version 2", true, sam, scene(doorOptions{door: openDoor(false), version: 2}), move{state: "in", seq: 1, version: 2})
	write("scanner checks a cancelled ticket in", false, sam, scene(doorOptions{door: openDoor(false), status: "cancelled"}), first)
	write("scanner checks in before the door opens", false, sam, scene(doorOptions{door: map[string]any{"opensAt": time.Now().Add(time.Hour), "gates": []any{"A"}}}), first)
	write("scanner checks in where there is no door", false, sam, scene(doorOptions{}), first)
	write("scanner checks in at a gate not of the door", false, sam, open, move{state: "in", seq: 1, gate: "C"})
	write("scanner writes a check-in with a field more", false, sam, open, move{state: "in", seq: 1, change: map[string]any{"note": "vip"}})
	write("scanner's nonce is 15 characters", false, sam, open, move{state: "in", seq: 1, nonce: "nonce-123456789"})
	write("an entry queued offline reaches a ticket already in (seq 1 again)", false, sam, scene(doorOptions{door: openDoor(false), checkIn: map[string]any{}}), first)
	write("an entry queued offline reaches a ticket already in (seq 2, reentry)", false, sam, reentry, move{state: "in", seq: 2})
	write("with reentry: an exit after the entry (out, seq 2)", true, sam, reentry, move{state: "out", seq: 2})
	write("with reentry: an entry after the exit (in, seq 3)", true, sam, scene(doorOptions{door: openDoor(true), checkIn: map[string]any{"state": "out", "seq": 2}}), move{state: "in", seq: 3})
	write("without reentry: an exit", false, sam, scene(doorOptions{door: openDoor(false), checkIn: map[string]any{}}), move{state: "out", seq: 2})
	write("with reentry: an exit that skips a seq", false, sam, reentry, move{state: "out", seq: 3})
	write("with reentry: an exit that goes back a seq", false, sam, reentry, move{state: "out", seq: 1})
	write("with reentry: an exit of a ticket cancelled since", false, sam, scene(doorOptions{door: openDoor(true), status: "cancelled", checkIn: map[string]any{}}), move{state: "out", seq: 2})
	write("with reentry: the exit's check-in moves it to another screening", false, sam, reentry, move{state: "out", seq: 2, change: map[string]any{"screeningId": "elsewhere"}})
	write("scanner records an admission without a check-in", false, sam, open, move{state: "in", seq: 1, noCheck: true})
	cs = append(cs,
		rulesCase{"scanner deletes a check-in", false, func(t *testing.T, e rulesEnv) error {
			sc := newDoorScene(t, e, doorOptions{door: openDoor(true), checkIn: map[string]any{}})
			return e.sam.commit(e.sam.del("checkins/" + sc.ticket))
		}},
		rulesCase{"scanner records a refusal (already_in) alone", true, func(t *testing.T, e rulesEnv) error {
			return e.sam.checkInBatch(newDoorScene(t, e, doorOptions{door: openDoor(false), checkIn: map[string]any{}}), move{state: "in", noCheck: true, scan: map[string]any{"result": "already_in"}})
		}},
		rulesCase{"scanner records a conflict (its queued entry was refused)", true, func(t *testing.T, e rulesEnv) error {
			return e.sam.checkInBatch(newDoorScene(t, e, doorOptions{door: openDoor(false), checkIn: map[string]any{}}), move{state: "in", noCheck: true, scan: map[string]any{"result": "conflict", "offline": true}})
		}},
		rulesCase{"scanner records already_in with where and when it went in", true, func(t *testing.T, e rulesEnv) error {
			return e.sam.checkInBatch(newDoorScene(t, e, doorOptions{door: openDoor(false), checkIn: map[string]any{}}),
				move{state: "in", gate: "B", noCheck: true, scan: map[string]any{"result": "already_in", "entryGate": "A", "entryAt": time.Now().Add(-time.Minute)}})
		}},
		rulesCase{"scanner records an entry gate on a refusal that is not already_in", false, func(t *testing.T, e rulesEnv) error {
			return e.sam.checkInBatch(newDoorScene(t, e, doorOptions{door: openDoor(false)}),
				move{state: "in", noCheck: true, scan: map[string]any{"result": "not_in", "entryGate": "A"}})
		}},
		rulesCase{"scanner records door_closed where there is no door", true, func(t *testing.T, e rulesEnv) error {
			return e.sam.checkInBatch(newDoorScene(t, e, doorOptions{}), move{state: "in", noCheck: true, scan: map[string]any{"result": "door_closed"}})
		}},
		rulesCase{"scanner records an invalid code (no ticketId)", true, func(t *testing.T, e rulesEnv) error {
			return e.sam.checkInBatch(newDoorScene(t, e, doorOptions{door: openDoor(false)}), move{state: "in", noCheck: true, scan: map[string]any{"result": "invalid", "ticketId": nil}})
		}},
		rulesCase{"scanner records a refusal at a gate not of the door", false, func(t *testing.T, e rulesEnv) error {
			return e.sam.checkInBatch(newDoorScene(t, e, doorOptions{door: openDoor(false)}), move{state: "in", gate: "Z", noCheck: true, scan: map[string]any{"result": "not_in"}})
		}},
		rulesCase{"scanner records a result that is no result", false, func(t *testing.T, e rulesEnv) error {
			return e.sam.checkInBatch(newDoorScene(t, e, doorOptions{door: openDoor(false)}), move{state: "in", noCheck: true, scan: map[string]any{"result": "vip"}})
		}},
		rulesCase{"buyer records a scan", false, func(t *testing.T, e rulesEnv) error {
			return e.alice.checkInBatch(newDoorScene(t, e, doorOptions{door: openDoor(false)}), move{state: "in", noCheck: true, scan: map[string]any{"result": "not_in", "by": "alice"}})
		}},
		rulesCase{"scanner rewrites a recorded scan", false, func(t *testing.T, e rulesEnv) error {
			sc := newDoorScene(t, e, doorOptions{door: openDoor(false)})
			n := uniq("nonce-0123456789-")
			must(t, e.sam.checkInBatch(sc, move{state: "in", seq: 1, nonce: n}))
			return e.sam.commit(e.sam.set("screenings/"+sc.screening+"/scans/"+n, map[string]any{"result": "invalid"}, nil, []string{"result"}))
		}},
		rulesCase{"scanner deletes a recorded scan", false, func(t *testing.T, e rulesEnv) error {
			sc := newDoorScene(t, e, doorOptions{door: openDoor(false)})
			n := uniq("nonce-0123456789-")
			must(t, e.sam.checkInBatch(sc, move{state: "in", seq: 1, nonce: n}))
			return e.sam.commit(e.sam.del("screenings/" + sc.screening + "/scans/" + n))
		}},
	)
	// Reads.
	read := func(name string, allow bool, f func(t *testing.T, e rulesEnv, sc doorScene) error) {
		cs = append(cs, rulesCase{name, allow, func(t *testing.T, e rulesEnv) error {
			return f(t, e, newDoorScene(t, e, doorOptions{door: openDoor(false), checkIn: map[string]any{}}))
		}})
	}
	read("buyer reads their ticket", true, func(t *testing.T, e rulesEnv, sc doorScene) error { return e.alice.get("tickets/" + sc.ticket) })
	read("buyer queries their tickets by uid", true, func(t *testing.T, e rulesEnv, sc doorScene) error { return e.alice.query("tickets", "alice") })
	read("bob reads alice's ticket", false, func(t *testing.T, e rulesEnv, sc doorScene) error { return e.bob.get("tickets/" + sc.ticket) })
	read("bob queries alice's tickets", false, func(t *testing.T, e rulesEnv, sc doorScene) error { return e.bob.query("tickets", "alice") })
	read("signed-out client reads a ticket", false, func(t *testing.T, e rulesEnv, sc doorScene) error { return e.nobody.get("tickets/" + sc.ticket) })
	read("scanner reads a ticket", true, func(t *testing.T, e rulesEnv, sc doorScene) error { return e.sam.get("tickets/" + sc.ticket) })
	read("scanner queries a screening's tickets", true, func(t *testing.T, e rulesEnv, sc doorScene) error {
		return e.sam.queryWhere("tickets", "screeningId", sc.screening)
	})
	read("operator queries a screening's tickets", true, func(t *testing.T, e rulesEnv, sc doorScene) error {
		return e.olive.queryWhere("tickets", "screeningId", sc.screening)
	})
	read("non-scanner queries a screening's tickets", false, func(t *testing.T, e rulesEnv, sc doorScene) error {
		return e.sid.queryWhere("tickets", "screeningId", sc.screening)
	})
	read("buyer reads their ticket's check-in", true, func(t *testing.T, e rulesEnv, sc doorScene) error { return e.alice.get("checkins/" + sc.ticket) })
	read("bob reads alice's check-in", false, func(t *testing.T, e rulesEnv, sc doorScene) error { return e.bob.get("checkins/" + sc.ticket) })
	read("buyer lists check-ins", false, func(t *testing.T, e rulesEnv, sc doorScene) error {
		return e.alice.queryWhere("checkins", "screeningId", sc.screening)
	})
	read("scanner lists a screening's check-ins", true, func(t *testing.T, e rulesEnv, sc doorScene) error {
		return e.sam.queryWhere("checkins", "screeningId", sc.screening)
	})
	read("scanner lists a screening's scans", true, func(t *testing.T, e rulesEnv, sc doorScene) error {
		return e.sam.queryUnder("screenings/"+sc.screening, "scans")
	})
	read("operator lists a screening's scans", true, func(t *testing.T, e rulesEnv, sc doorScene) error {
		return e.olive.queryUnder("screenings/"+sc.screening, "scans")
	})
	read("buyer lists a screening's scans", false, func(t *testing.T, e rulesEnv, sc doorScene) error {
		return e.alice.queryUnder("screenings/"+sc.screening, "scans")
	})
	cs = append(cs, rulesCase{"buyer reads the check-in of a ticket not yet in (a listener before the entry)", true, func(t *testing.T, e rulesEnv) error {
		err := e.alice.get("checkins/" + newDoorScene(t, e, doorOptions{door: openDoor(false)}).ticket)
		if err != nil && strings.Contains(err.Error(), "HTTP 404") {
			return nil // allowed: there is nothing to read yet
		}
		return err
	}})
	// No client writes a ticket.
	for _, who := range []struct {
		name string
		u    func(rulesEnv) user
	}{{"buyer", func(e rulesEnv) user { return e.alice }}, {"scanner", sam}, {"operator", func(e rulesEnv) user { return e.olive }}} {
		cs = append(cs, rulesCase{who.name + " rewrites a ticket (a new version, or valid again)", false, func(t *testing.T, e rulesEnv) error {
			sc := newDoorScene(t, e, doorOptions{door: openDoor(false), status: "cancelled"})
			u := who.u(e)
			return u.commit(u.set("tickets/"+sc.ticket, map[string]any{"status": "valid", "version": 2}, nil, []string{"status", "version"}))
		}})
	}
	return cs
}

// Two ways in, one protocol (CONTRACT §13): scanners racing to write the
// first entry of one ticket with their own batches, through the rules: one
// commit lands, every other is refused (the check-in exists, and a second
// seq 1 is no next move), and Firestore holds one check-in and one
// admitted scan.
func TestScannersRacingThroughTheRulesAdmitOnce(t *testing.T) {
	project := firelocktest.ProjectID(t)
	e := rulesEnv{admin: firelocktest.NewClientFor(t, project)}
	const scanners = 8
	for round := range 3 {
		sc := newDoorScene(t, e, doorOptions{door: openDoor(false)})
		errs := make([]error, scanners)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range scanners {
			u := user{t: t, project: project, uid: fmt.Sprintf("scanner%d", i), claims: map[string]any{"scanner": true}}
			wg.Go(func() {
				<-start
				errs[i] = u.checkInBatch(sc, move{state: "in", seq: 1, gate: []string{"A", "B"}[i%2]})
			})
		}
		close(start)
		wg.Wait()
		admitted := 0
		for i, err := range errs {
			switch {
			case err == nil:
				admitted++
			case errors.Is(err, errDenied), strings.Contains(err.Error(), "ABORTED"), strings.Contains(err.Error(), "HTTP 409"):
			default:
				t.Errorf("round %d, scanner %d: %v", round, i, err)
			}
		}
		scans, err := e.admin.Collection("screenings/"+sc.screening+"/scans").Where("result", "==", "admitted").Documents(context.Background()).GetAll()
		must(t, err)
		if admitted != 1 || len(scans) != 1 {
			t.Fatalf("round %d: %d of %d scanners admitted the ticket, %d admitted scans recorded; want exactly one: %v", round, admitted, scanners, len(scans), errs)
		}
	}
}

// The scanner app's writes and the function CheckIn share the ticket's
// check-in: a ticket the app admitted is already_in at CheckIn (with the
// app's gate), and a ticket CheckIn admitted is refused to the app.
func TestCheckInParityBetweenTheRulesAndTheDoorService(t *testing.T) {
	project := firelocktest.ProjectID(t)
	e := rulesEnv{admin: firelocktest.NewClientFor(t, project)}
	sam := user{t: t, project: project, uid: "sam", claims: map[string]any{"scanner": true}}
	ctx := context.Background()
	keys, err := ticket.GenerateKeys("parity")
	must(t, err)
	svc := door.New(e.admin, keys)
	codeOf := func(sc doorScene) string {
		code, err := keys.Sign(ticket.Payload{TicketID: sc.ticket, ScreeningID: sc.screening, Seat: "A1", Version: 1})
		must(t, err)
		return code
	}
	byApp := newDoorScene(t, e, doorOptions{door: openDoor(false)})
	if err := sam.checkInBatch(byApp, move{state: "in", seq: 1, gate: "B"}); err != nil {
		t.Fatalf("the app's entry: %v", err)
	}
	_, err = svc.CheckIn(ctx, door.Request{Scanner: "sue", ScreeningID: byApp.screening, Gate: "A", Code: codeOf(byApp), Nonce: uniq("nonce-parity-0000000")})
	var refused *door.Refusal
	if !errors.As(err, &refused) || refused.Result != door.ResultAlreadyIn || refused.Gate != "B" {
		t.Fatalf("CheckIn of a ticket the app admitted at B: %v, want already_in at B", err)
	}
	byServer := newDoorScene(t, e, doorOptions{door: openDoor(false)})
	if got, err := svc.CheckIn(ctx, door.Request{Scanner: "sue", ScreeningID: byServer.screening, Gate: "A", Code: codeOf(byServer), Nonce: uniq("nonce-parity-0000000")}); err != nil || got.Result != door.ResultAdmitted {
		t.Fatalf("CheckIn: %+v %v", got, err)
	}
	if err := sam.checkInBatch(byServer, move{state: "in", seq: 1, gate: "B"}); !errors.Is(err, errDenied) {
		t.Fatalf("the app's entry of a ticket CheckIn admitted: %v, want denied", err)
	}
	// Both at once: one wins.
	both := newDoorScene(t, e, doorOptions{door: openDoor(false)})
	var appErr, srvErr error
	var wg sync.WaitGroup
	start := make(chan struct{})
	wg.Go(func() { <-start; appErr = sam.checkInBatch(both, move{state: "in", seq: 1, gate: "B"}) })
	wg.Go(func() {
		<-start
		_, srvErr = svc.CheckIn(ctx, door.Request{Scanner: "sue", ScreeningID: both.screening, Gate: "A", Code: codeOf(both), Nonce: uniq("nonce-parity-0000000")})
	})
	close(start)
	wg.Wait()
	if (appErr == nil) == (srvErr == nil) {
		t.Fatalf("the app (%v) and CheckIn (%v) at once: want exactly one to admit", appErr, srvErr)
	}
}
