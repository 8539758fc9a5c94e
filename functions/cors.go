package functions

import (
	"net/http"
	"os"
	"strings"
)

// AllowedOriginsEnv names the browser origins allowed to call the HTTP
// functions: comma-separated, e.g. "https://tickets.example.com,
// http://localhost:5173". deploy.sh sets it from --allowed-origins.
const AllowedOriginsEnv = "FIRELOCK_ALLOWED_ORIGINS"

// CORS answers browsers (CONTRACT §3): the preflight (OPTIONS) gets 204,
// and an allowed origin gets Access-Control-Allow-Origin naming it (never
// "*") and Retry-After exposed to its scripts, on every answer, errors
// included. Other origins get no CORS headers, so the browser refuses them
// the answer.
type CORS struct {
	allowed map[string]bool
}

// NewCORS allows the given origins (scheme://host[:port], no path).
func NewCORS(origins ...string) *CORS {
	c := &CORS{allowed: map[string]bool{}}
	for _, o := range origins {
		if o = strings.TrimRight(strings.TrimSpace(o), "/"); o != "" {
			c.allowed[o] = true
		}
	}
	return c
}

// CORSFromEnv allows the origins of FIRELOCK_ALLOWED_ORIGINS.
func CORSFromEnv() *CORS { return NewCORS(strings.Split(os.Getenv(AllowedOriginsEnv), ",")...) }

// allows says whether origin may call the functions from a browser.
func (c *CORS) allows(origin string) bool { return c != nil && c.allowed[origin] }

// apply sets the CORS headers of r's answer and reports whether r was a
// preflight, which it has answered.
func (c *CORS) apply(w http.ResponseWriter, r *http.Request) (answered bool) {
	return c.applyMethods(w, r, "POST, OPTIONS")
}

// applyRead is apply for a function that browsers GET (TicketKeys).
func (c *CORS) applyRead(w http.ResponseWriter, r *http.Request) (answered bool) {
	return c.applyMethods(w, r, "GET, HEAD, OPTIONS")
}

// getOnly opens a function that browsers GET (TicketKeys, SaleState): it
// answers a CORS preflight, and a method other than GET or HEAD with 405
// method_not_allowed. done: the request has its answer.
func (a *API) getOnly(w http.ResponseWriter, r *http.Request) (done bool) {
	if a.CORS.applyRead(w, r) {
		return true
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD, OPTIONS")
		answered(r, http.StatusMethodNotAllowed, "method_not_allowed")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": errorf(http.StatusMethodNotAllowed, "method_not_allowed", "use GET")})
		return true
	}
	return false
}

func (c *CORS) applyMethods(w http.ResponseWriter, r *http.Request, methods string) (answered bool) {
	h := w.Header()
	h.Add("Vary", "Origin") // the answer differs by origin: caches must keep them apart
	origin := r.Header.Get("Origin")
	allowed := c != nil && origin != "" && c.allowed[origin]
	if allowed {
		h.Set("Access-Control-Allow-Origin", origin)
		// A page may read only the safelisted headers of a cross-origin
		// answer; a 503's Retry-After is not one of them.
		expose := "Retry-After"
		if strings.HasPrefix(methods, "GET") {
			expose += ", ETag" // SaleState's polls send it back as If-None-Match (CONTRACT §14)
		}
		h.Set("Access-Control-Expose-Headers", expose)
	}
	if r.Method != http.MethodOptions {
		return false
	}
	if allowed {
		h.Set("Access-Control-Allow-Methods", methods)
		allow := "Authorization, Content-Type, X-Firebase-AppCheck"
		if strings.HasPrefix(methods, "GET") {
			allow += ", If-None-Match"
		}
		h.Set("Access-Control-Allow-Headers", allow)
		h.Set("Access-Control-Max-Age", "3600")
	}
	w.WriteHeader(http.StatusNoContent)
	return true
}
