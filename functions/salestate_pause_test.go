package functions_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/firelock/firelock/sale"
)

// During an operator's pause live passes go on holding and releasing
// (CONTRACT §7a), and an admitted page whose seat map waits while nothing
// is free learns of a seat coming free from SaleState (issue #51): with
// passes live a paused sale refreshes every second, as an open one does;
// with none, nothing moves, and it is kept 5 s.
func TestSaleStatePausedWithLivePassesRefreshesEverySecond(t *testing.T) {
	t.Parallel()
	e, _ := stateEnv(t)
	ctx := context.Background()
	opens := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	if _, err := e.fs.Doc("sales/s1").Set(ctx, sale.Public{State: sale.StatePaused, OpensAt: opens, Admitted: 2, Active: 2, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if b := getState(t, e, http.MethodGet, "?screening=s1", nil); b.status != http.StatusOK || b.header.Get("Cache-Control") != "public, max-age=1, s-maxage=1" ||
		!strings.Contains(b.body, `"refreshSeconds":1`) {
		t.Errorf("paused, 2 passes live: %d %v %s", b.status, b.header, b.body)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := e.fs.Doc("sales/s1").Set(ctx, sale.Public{State: sale.StatePaused, OpensAt: opens, Admitted: 2, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if b := getState(t, e, http.MethodGet, "?screening=s1", nil); b.status != http.StatusOK || b.header.Get("Cache-Control") != "public, max-age=5, s-maxage=5" ||
		!strings.Contains(b.body, `"refreshSeconds":5`) {
		t.Errorf("paused, no pass live: %d %v %s", b.status, b.header, b.body)
	}
}
