package functions

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/firelock/firelock/lock"
	"github.com/firelock/firelock/sale"
)

// SaleState is GET /SaleState?screening=ID of CONTRACT §14: the sale's
// public state for everyone, no token, from this instance's StateCache
// (sales/{id} read at most once a second per screening, concurrent misses
// sharing one read), with Cache-Control for browsers and the CDN and a
// strong ETag (304 to a matching If-None-Match). Bad input reads nothing.
func (a *API) SaleState(w http.ResponseWriter, r *http.Request) {
	if a.getOnly(w, r) {
		return
	}
	id := r.URL.Query().Get("screening")
	if err := lock.ValidateKey(id); err != nil || strings.ContainsFunc(id, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		msg := "screening must name a screening"
		if err != nil {
			msg = "screening: " + strings.TrimPrefix(err.Error(), "lock: invalid key: ")
		}
		a.writeError(w, r, "", errorf(http.StatusBadRequest, "invalid_argument", "%s", msg))
		return
	}
	if a.initErr != nil {
		a.writeError(w, r, "", fmt.Errorf("%w: %v", errNotReady, a.initErr))
		return
	}
	if a.States == nil {
		a.writeError(w, r, "", fmt.Errorf("%w: no state cache", errNotReady))
		return
	}
	ans, err := a.States.Get(r.Context(), id)
	if err != nil {
		a.writeError(w, r, "", fmt.Errorf("%w: %v", errNotReady, err))
		return
	}
	maxAge := int(ans.Refresh / time.Second)
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d, s-maxage=%d", maxAge, min(maxAge, int(sale.RefreshIdle/time.Second))))
	switch {
	case errors.Is(ans.Err, sale.ErrScreeningNotFound):
		a.writeError(w, r, "", errorf(http.StatusNotFound, "screening_not_found", "no screening %q", id))
		return
	case errors.Is(ans.Err, sale.ErrNoSale):
		a.writeError(w, r, "", errorf(http.StatusConflict, "no_sale", "the screening has no sale"))
		return
	}
	w.Header().Set("ETag", ans.ETag)
	if etagMatches(r.Header.Get("If-None-Match"), ans.ETag) {
		answered(r, http.StatusNotModified, "not_modified")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	answered(r, http.StatusOK, "ok")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(ans.Body)
	}
}

// etagMatches is If-None-Match's weak comparison (RFC 9110 13.1.2): "*",
// or any listed tag equal to etag, W/ or not.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
