package functions_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/auth"
	"github.com/firelock/firelock/firelocktest"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
)

const appOrigin = "https://tickets.example.com"

func (e *env) raw(method, fn, origin string, header map[string]string, body string) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+"/"+fn, strings.NewReader(body))
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestCORSAllowsConfiguredOriginsOnly(t *testing.T) {
	e := newEnv(t)
	e.api.CORS = functions.NewCORS(appOrigin, "http://localhost:5173")
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}
	for _, fn := range []string{"BookSeats", "CancelBooking"} {
		r := e.raw(http.MethodOptions, fn, appOrigin, preflight, "")
		h := r.Header
		if r.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != appOrigin ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
			h.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type, X-Firebase-AppCheck" ||
			h.Get("Access-Control-Max-Age") == "" || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
			t.Fatalf("%s preflight: %d %v", fn, r.StatusCode, h)
		}
	}
	// The answers themselves, success and errors alike, name the origin and
	// let the page read Retry-After (a 503's hint when to try again).
	exposes := func(h http.Header) bool {
		for _, v := range h.Values("Access-Control-Expose-Headers") {
			for name := range strings.SplitSeq(v, ",") {
				if strings.EqualFold(strings.TrimSpace(name), "Retry-After") {
					return true
				}
			}
		}
		return false
	}
	tok := token(t, "cora")
	body := `{"screeningId": "s1", "seats": ["C3"], "requestId": "cors-1"}`
	ok := e.raw(http.MethodPost, "BookSeats", appOrigin, map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}, body)
	if ok.StatusCode != http.StatusCreated || ok.Header.Get("Access-Control-Allow-Origin") != appOrigin || !exposes(ok.Header) {
		t.Fatalf("booking from the app: %d %v", ok.StatusCode, ok.Header)
	}
	answers := map[string]*http.Response{
		"401": e.raw(http.MethodPost, "BookSeats", appOrigin, map[string]string{"Content-Type": "application/json"}, body),
		"409": e.raw(http.MethodPost, "BookSeats", appOrigin, map[string]string{"Authorization": "Bearer " + token(t, "dora"), "Content-Type": "application/json"}, `{"screeningId": "s1", "seats": ["C3"], "requestId": "cors-2"}`),
		"405": e.raw(http.MethodGet, "BookSeats", appOrigin, nil, ""),
	}
	for name, r := range answers {
		if strconv.Itoa(r.StatusCode) != name || r.Header.Get("Access-Control-Allow-Origin") != appOrigin || !exposes(r.Header) {
			t.Errorf("%s answer (HTTP %d) lacks the origin or does not expose Retry-After: %v", name, r.StatusCode, r.Header)
		}
	}
	// Another origin gets no CORS headers at all: the browser refuses it.
	for _, r := range []*http.Response{
		e.raw(http.MethodOptions, "BookSeats", "https://evil.example", preflight, ""),
		e.raw(http.MethodPost, "BookSeats", "https://evil.example", map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}, `{"screeningId": "s1", "seats": ["C4"], "requestId": "cors-3"}`),
	} {
		for k := range r.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("refused origin got %s: %v", k, r.Header)
			}
		}
	}
}

func authAdmin(t *testing.T) *auth.Client {
	t.Helper()
	app, err := firebase.NewApp(context.Background(), &firebase.Config{ProjectID: emulators.AuthProject})
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.Auth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func freshUser(t *testing.T) (tok, uid string) {
	t.Helper()
	id := strings.ToLower(strings.ReplaceAll(firelocktest.ProjectID(t), "demo-", ""))
	tok, uid, err := emulators.SignIn("u-"+id+"@example.com", "secret-"+id)
	if err != nil {
		t.Fatal(err)
	}
	return tok, uid
}

func TestRevokedAndDisabledUsersAreRefused(t *testing.T) {
	e := newEnv(t)
	admin := authAdmin(t)
	ctx := context.Background()
	book := func(tok, req string) response {
		return e.call("BookSeats", tok, map[string]any{"screeningId": "s1", "seats": []string{"H1"}, "requestId": req})
	}

	revoked, uid := freshUser(t)
	time.Sleep(1100 * time.Millisecond) // revocation counts whole seconds after the token's issue time
	if err := admin.RevokeRefreshTokens(ctx, uid); err != nil {
		t.Fatal(err)
	}
	if r := book(revoked, "rev-1"); r.Status != http.StatusUnauthorized || !strings.Contains(r.Body["error"].(map[string]any)["message"].(string), "revoked") {
		t.Fatalf("revoked token: %d %v", r.Status, r.Body)
	}

	disabled, uid := freshUser(t)
	if _, err := admin.UpdateUser(ctx, uid, (&auth.UserToUpdate{}).Disabled(true)); err != nil {
		t.Fatal(err)
	}
	if r := book(disabled, "dis-1"); r.Status != http.StatusUnauthorized || !strings.Contains(r.Body["error"].(map[string]any)["message"].(string), "disabled") {
		t.Fatalf("disabled user: %d %v", r.Status, r.Body)
	}

	// A user seen before and revoked since: refused once the cached state
	// is stale (here: no cache).
	e.api.UserCacheTTL = -1
	later, uid := freshUser(t)
	if r := book(later, "late-1"); r.Status != http.StatusCreated {
		t.Fatalf("before revocation: %d %v", r.Status, r.Body)
	}
	time.Sleep(1100 * time.Millisecond)
	if err := admin.RevokeRefreshTokens(ctx, uid); err != nil {
		t.Fatal(err)
	}
	if r := e.call("CancelBooking", later, map[string]any{"bookingId": "x"}); r.Status != http.StatusUnauthorized {
		t.Fatalf("after revocation: %d %v", r.Status, r.Body)
	}
	if st := e.state(); len(st.bookings) != 1 {
		t.Fatalf("%d bookings, want only the one made before the revocation", len(st.bookings))
	}
}

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	e := newEnv(t)
	tok := token(t, "casey")
	for i, scheme := range []string{"bearer", "BEARER", "Bearer"} {
		r := e.call("BookSeats", "", map[string]any{"screeningId": "s1", "seats": []string{"G" + string(rune('1'+i))}, "requestId": scheme},
			func(req *http.Request) { req.Header.Set("Authorization", scheme+" "+tok) })
		if r.Status != http.StatusCreated {
			t.Errorf("scheme %q: %d %v", scheme, r.Status, r.Body)
		}
	}
	if r := e.call("BookSeats", "", map[string]any{}, func(req *http.Request) { req.Header.Set("Authorization", "Basic "+tok) }); r.Status != http.StatusUnauthorized {
		t.Errorf("Basic scheme: %d", r.Status)
	}
}

// authUnreachable points the functions' Firebase Auth at a port where
// nothing listens (sign users in before): every token check fails to reach
// it, as when Auth is down.
func (e *env) authUnreachable() {
	e.t.Helper()
	port, err := emulators.FreePort()
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Setenv("FIREBASE_AUTH_EMULATOR_HOST", "127.0.0.1:"+itoa(port))
	e.api.Auth = authAdmin(e.t)
	e.api.UserCacheTTL = -1
}

// When Firebase Auth cannot be reached, the caller is not at fault: 503
// with Retry-After, not 401 or 500; nothing is written.
func TestTokenServiceDownIs503(t *testing.T) {
	e := newEnv(t)
	tok := token(t, "downey")
	e.authUnreachable()
	r := e.call("BookSeats", tok, map[string]any{"screeningId": "s1", "seats": []string{"E5"}, "requestId": "down-1"})
	if r.Status != http.StatusServiceUnavailable || r.code() != "unavailable" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("token service down: %d %v %v", r.Status, r.Body, r.Header)
	}
	if st := e.state(); len(st.bookings) != 0 || len(st.seats) != 0 {
		t.Fatal("a request refused for want of the token service wrote something")
	}
}

func TestLogsCarryTheRequestsTrace(t *testing.T) {
	e := newEnv(t)
	e.api.Project = "demo-tickets"
	e.call("BookSeats", "", map[string]any{}, func(r *http.Request) {
		r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	})
	e.call("BookSeats", "", map[string]any{}, func(r *http.Request) {
		r.Header.Set("X-Cloud-Trace-Context", "105445aa7843bc8bf206b12000100000/1;o=1")
	})
	var traces, spans []string
	for _, l := range strings.Split(strings.TrimSpace(e.log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		tr, _ := m["logging.googleapis.com/trace"].(string)
		sp, _ := m["logging.googleapis.com/spanId"].(string)
		traces, spans = append(traces, tr), append(spans, sp)
	}
	want := []string{"projects/demo-tickets/traces/4bf92f3577b34da6a3ce929d0e0e4736", "projects/demo-tickets/traces/105445aa7843bc8bf206b12000100000"}
	if len(traces) != 2 || traces[0] != want[0] || traces[1] != want[1] {
		t.Fatalf("traces %q, want %q", traces, want)
	}
	if spans[0] != "00f067aa0ba902b7" || spans[1] != "0000000000000001" {
		t.Fatalf("spans %q", spans)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// chromium is the browser of the browser tests (scripts/deps.sh installs
// it; CHROMIUM_PATH names another).
func chromium(t *testing.T) string {
	t.Helper()
	path := cmp.Or(os.Getenv("CHROMIUM_PATH"), "/usr/bin/chromium")
	if _, err := exec.LookPath(path); err != nil {
		t.Fatalf("no Chromium at %s (run scripts/deps.sh, or set CHROMIUM_PATH): %v", path, err)
	}
	return path
}

// A page reads a header of a cross-origin answer only if the answer exposes
// it: without Access-Control-Expose-Headers, the web client's
// res.headers.get("Retry-After") (web/src/app/api.ts) is null. Chromium
// loads a page from another origin, which calls BookSeats while Firebase
// Auth is down and reports what it read.
func TestBrowserReadsRetryAfterAcrossOrigins(t *testing.T) {
	browser := chromium(t)
	e := newEnv(t)
	tok := token(t, "rhea")
	reports := make(chan string, 1)
	var fnURL string
	page := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/report" {
			b, _ := io.ReadAll(r.Body)
			select {
			case reports <- string(b):
			default:
			}
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><script type="module">
let report;
try {
  const res = await fetch(%q, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + %q },
    body: JSON.stringify({ screeningId: "s1", seats: ["A1"], requestId: "rhea-1" }),
  });
  report = { status: res.status, retryAfter: res.headers.get("Retry-After") };
} catch (err) {
  report = { error: String(err) };
}
await fetch("/report", { method: "POST", body: JSON.stringify(report) });
</script>`, fnURL, tok)
	}))
	t.Cleanup(page.Close)
	// Configured before its server starts: Chromium's requests carry no
	// happens-before edge from this goroutine.
	e.api.CORS = functions.NewCORS("http://" + page.Listener.Addr().String()) // another port: another origin
	e.authUnreachable()
	fn := httptest.NewServer(http.HandlerFunc(e.api.BookSeats))
	t.Cleanup(fn.Close)
	fnURL = fn.URL
	page.Start()

	var stderr bytes.Buffer
	cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--user-data-dir="+t.TempDir(), page.URL)
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its renderers too end with it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	var got struct {
		Status     int     `json:"status"`
		RetryAfter *string `json:"retryAfter"`
		Error      string  `json:"error"`
	}
	select {
	case r := <-reports:
		if err := json.Unmarshal([]byte(r), &got); err != nil {
			t.Fatalf("report %q: %v", r, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the page reported nothing within 60 s; Chromium said:\n%s", stderr.String())
	}
	if got.Status != http.StatusServiceUnavailable || got.RetryAfter == nil || *got.RetryAfter != "1" {
		ra := "null"
		if got.RetryAfter != nil {
			ra = strconv.Quote(*got.RetryAfter)
		}
		t.Fatalf("the page read HTTP %d, Retry-After %s (%s); want 503 and \"1\"", got.Status, ra, got.Error)
	}
}
