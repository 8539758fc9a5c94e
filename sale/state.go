package sale

import (
	"time"

	"cloud.google.com/go/firestore"
)

// StateOf is the state of the sale that a screening's document shows at now
// (usually its ReadTime): what Operate answers and what the admitter
// publishes next, as far as the screening tells (it knows nothing of seats,
// so never StateSoldOut). "" when the screening has no sale. Tools that show
// a sale use it until sales/{id} catches up, within 2 s of an action.
func StateOf(screening *firestore.DocumentSnapshot, now time.Time) string {
	if screening == nil || !screening.Exists() {
		return ""
	}
	cur, ok := screening.Data()["sale"].(map[string]any)
	if !ok {
		return ""
	}
	at, ok := screening.Data()["startsAt"].(time.Time)
	return stateOf(cur, controlOf(screening), ok && !now.Before(at), now)
}
