// Package functions holds the Cloud Functions of firelock: thin adapters
// that decode a request, call a domain package and encode the answer.
// Importing the package registers them with the Functions Framework.
package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"
	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/firelock/firelock/booking"
	"github.com/firelock/firelock/door"
	"github.com/firelock/firelock/jobs"
	"github.com/firelock/firelock/lock"
	"github.com/firelock/firelock/payment"
	"github.com/firelock/firelock/sale"
	"github.com/firelock/firelock/ticket"
	"golang.org/x/oauth2/google"
)

// The functions, each under the local run's cap on requests in flight
// (LimitInFlight; none when deployed).
func init() {
	functions.HTTP("BookSeats", limited("BookSeats", func(a *API) http.HandlerFunc { return a.BookSeats }))
	functions.HTTP("CancelBooking", limited("CancelBooking", func(a *API) http.HandlerFunc { return a.CancelBooking }))
	functions.HTTP("HoldSeats", limited("HoldSeats", func(a *API) http.HandlerFunc { return a.HoldSeats }))
	functions.HTTP("ExtendHold", limited("ExtendHold", func(a *API) http.HandlerFunc { return a.ExtendHold }))
	functions.HTTP("ConfirmHold", limited("ConfirmHold", func(a *API) http.HandlerFunc { return a.ConfirmHold }))
	functions.HTTP("ReleaseHold", limited("ReleaseHold", func(a *API) http.HandlerFunc { return a.ReleaseHold }))
	functions.HTTP("JoinQueue", limited("JoinQueue", func(a *API) http.HandlerFunc { return a.JoinQueue }))
	functions.HTTP("OperateSale", limited("OperateSale", func(a *API) http.HandlerFunc { return a.OperateSale }))
	functions.HTTP("CheckoutHold", limited("CheckoutHold", func(a *API) http.HandlerFunc { return a.CheckoutHold }))
	functions.HTTP("StripeWebhook", limited("StripeWebhook", func(a *API) http.HandlerFunc { return a.StripeWebhook }))
	functions.HTTP("CheckIn", limited("CheckIn", func(a *API) http.HandlerFunc { return a.CheckIn }))
	functions.HTTP("TransferTicket", limited("TransferTicket", func(a *API) http.HandlerFunc { return a.TransferTicket }))
	functions.HTTP("TicketKeys", limited("TicketKeys", func(a *API) http.HandlerFunc { return a.TicketKeys }))
	functions.HTTP("SaleState", limited("SaleState", func(a *API) http.HandlerFunc { return a.SaleState }))
}

// HTTPFunctions names every HTTP function (CONTRACT §3, §7, §8, §10, §13),
// for deploy.sh and the local run.
var HTTPFunctions = []string{"BookSeats", "CancelBooking", "HoldSeats", "ExtendHold", "ConfirmHold", "ReleaseHold", "JoinQueue", "OperateSale", "CheckoutHold", "StripeWebhook",
	"CheckIn", "TransferTicket", "TicketKeys", "SaleState"}

// MaxBody bounds request bodies.
const MaxBody = 16 << 10

// API serves the functions of CONTRACT §3, §4, §7, §8, §10 and §13.
type API struct {
	Bookings *booking.Service
	Sales    *sale.Service
	Payments *payment.Service
	Tickets  *ticket.Service
	Door     *door.Service
	// TicketKeySet is what GET /TicketKeys serves the public half of
	// (NewAPI: ticket.KeysFromEnv).
	TicketKeySet *ticket.Keys
	// States answers GET /SaleState (CONTRACT §14; NewAPI: one per
	// instance).
	States *sale.StateCache
	Jobs   *jobs.Runner
	Auth   Users
	// Accounts finds the account a ticket is transferred to (NewAPI:
	// Firebase Auth's GetUserByEmail).
	Accounts ticket.Users
	Log      *slog.Logger
	CORS     *CORS // browser origins allowed to call (NewAPI: FIRELOCK_ALLOWED_ORIGINS)
	// AppCheck guards JoinQueue, HoldSeats, BookSeats and CheckoutHold
	// (CONTRACT §12; NewAPI: FIRELOCK_APPCHECK). nil: off.
	AppCheck *AppCheck
	Project  string // qualifies trace IDs in logs
	// UserCacheTTL overrides DefaultUserCacheTTL; negative: no cache.
	UserCacheTTL time.Duration

	users   userStates
	initErr error // the clients could not be built: 503, and the next request tries again
}

// lazyAPI builds an API on first use; a failed build is tried again by the
// next request (after a cold start hit a passing fault, the instance must
// not answer errors for the rest of its life).
type lazyAPI struct {
	build func() (*API, error)
	mu    sync.Mutex
	api   *API
}

func (l *lazyAPI) get() *API {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.api != nil {
		return l.api
	}
	api, err := l.build()
	if err != nil {
		return &API{Log: NewLogger(os.Stdout), CORS: CORSFromEnv(), initErr: err}
	}
	l.api = api
	return api
}

// deployed is the API of a deployed function (or of the local run), built
// from the environment: GOOGLE_CLOUD_PROJECT, the emulator variables.
var deployed = &lazyAPI{build: func() (*API, error) {
	ctx := context.Background()
	project := ProjectID()
	if project == "" {
		project = credentialsProject(ctx)
	}
	fsProject := project
	if fsProject == "" {
		fsProject = firestore.DetectProjectID // its own lookup, which fails saying so
	}
	fs, err := firestore.NewClient(ctx, fsProject)
	if err != nil {
		return nil, err
	}
	api, err := NewAPI(ctx, fs, project)
	if err != nil {
		fs.Close()
	}
	return api, err
}}

func defaultAPI() *API { return deployed.get() }

// ProjectID is the project of a deployed function, or of the local run,
// as the environment names it: GOOGLE_CLOUD_PROJECT (deploy.sh sets it on
// every function, as Cloud Run sets no project variable for newer
// runtimes), GCLOUD_PROJECT or GCP_PROJECT; "" when none does. Never a
// placeholder: the Admin SDK checks ID tokens' and App Check tokens'
// audience against the project it is given (issue #53).
func ProjectID() string {
	for _, v := range []string{"GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GCP_PROJECT"} {
		if p := os.Getenv(v); p != "" {
			return p
		}
	}
	return ""
}

// credentialsProject is the project of Application Default Credentials (a
// deployed function's: the metadata server's project), as the Admin SDK
// and the Firestore client would find it themselves; "" when they name
// none.
func credentialsProject(ctx context.Context) string {
	creds, err := google.FindDefaultCredentials(ctx, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		return ""
	}
	return creds.ProjectID
}

// NewAPI wires the API to a Firestore client and the Firebase Auth of
// authProject (the Auth emulator when FIREBASE_AUTH_EMULATOR_HOST is set;
// "": the project of the credentials, as the Admin SDK finds it).
// It logs to stdout, as Cloud Functions collect it.
func NewAPI(ctx context.Context, fs *firestore.Client, authProject string) (*API, error) {
	return NewAPIWithLogger(ctx, fs, authProject, NewLogger(os.Stdout))
}

// NewAPIWithLogger is NewAPI logging to log: the functions, the booking
// Gate and the admitter alike (cmd/surge keeps its report apart from them).
func NewAPIWithLogger(ctx context.Context, fs *firestore.Client, authProject string, log *slog.Logger) (*API, error) {
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: authProject})
	if err != nil {
		return nil, fmt.Errorf("functions: firebase app: %w", err)
	}
	ac, err := app.Auth(ctx)
	if err != nil {
		return nil, fmt.Errorf("functions: firebase auth: %w", err)
	}
	appCheck, err := AppCheckFromEnv(app, nil, log)
	if err != nil {
		return nil, err
	}
	keys, err := ticket.KeysFromEnv()
	if err != nil {
		return nil, fmt.Errorf("functions: %w", err)
	}
	tickets := ticket.New(fs, keys)
	ledger := payment.NewLedger(fs)
	sales := sale.New(fs, sale.WithLogger(log), sale.WithTakings(ledger))
	admitter, err := sales.Admitter()
	if err != nil {
		return nil, err
	}
	bookings := booking.New(fs, booking.WithGate(sales), booking.WithTill(ledger), booking.WithTickets(tickets))
	payments := payment.New(fs, bookings, ledger, payment.ConfigFromEnv(), payment.WithLogger(log))
	table := scheduledJobs(fs, bookings, payments, admitter)
	var users Users = ac
	if os.Getenv("FIREBASE_AUTH_EMULATOR_HOST") != "" { // as the Admin SDK decides it
		users = emulatorUsers{Client: ac, projectID: authProject}
	}
	return &API{Bookings: bookings, Sales: sales, Payments: payments, Tickets: tickets, Door: door.New(fs, keys), TicketKeySet: keys,
		States: sale.NewStateCache(fs), Jobs: jobs.New(fs, table), Auth: users, Accounts: authAccounts{ac}, Log: log,
		CORS: CORSFromEnv(), Project: authProject, AppCheck: appCheck}, nil
}

// apiError is the one error shape of CONTRACT §3.
type apiError struct {
	status    int
	Code      string   `json:"code"`
	Msg       string   `json:"message"`
	Seats     []string `json:"seats,omitempty"`
	SeatsLeft *int     `json:"seatsLeft,omitempty"` // no_seats_together (CONTRACT §11)
	// A refused scan (CONTRACT §13): already_in's gate and at (the
	// entry's), wrong_screening's screeningId (the ticket's), and the
	// scan's result (conflict for an offline entry) and ticket.
	Gate        string     `json:"gate,omitempty"`
	At          *time.Time `json:"at,omitempty"`
	ScreeningID string     `json:"screeningId,omitempty"`
	Result      string     `json:"result,omitempty"`
	TicketID    string     `json:"ticketId,omitempty"`
	SeatID      string     `json:"seatId,omitempty"`
}

func (e *apiError) Error() string { return e.Msg }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// toAPIError maps every error to its status and code. The code of a
// booking operation's error is booking.Code's, the one mapping that
// firelock.booking.requests counts under too; this adds its status and
// message.
func toAPIError(err error) *apiError {
	var ae *apiError
	var se *booking.SeatsError
	if ae := saleError(err); ae != nil {
		return ae
	}
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, errAuthUnavailable):
		return errorf(http.StatusServiceUnavailable, "unavailable", "the sign-in service cannot be reached; try again")
	case errors.Is(err, errNotReady):
		return errorf(http.StatusServiceUnavailable, "unavailable", "the service is starting; try again")
	}
	if ae := paymentError(err); ae != nil {
		return ae
	}
	if ae := doorError(err); ae != nil {
		return ae
	}
	errors.As(err, &se)
	switch code := booking.Code(err); code {
	case "seat_taken":
		return &apiError{status: http.StatusConflict, Code: code, Msg: "seats already booked", Seats: se.Seats}
	case "seat_held":
		return &apiError{status: http.StatusConflict, Code: code, Msg: "seats held for someone's checkout (yours too: confirm that hold instead)", Seats: se.Seats}
	case "seat_busy":
		return &apiError{status: http.StatusConflict, Code: code, Msg: "another request is taking these seats right now; try again", Seats: se.Seats}
	case "screening_started":
		return errorf(http.StatusConflict, code, "the screening has started; it takes no more bookings or holds")
	case "hold_not_found":
		return errorf(http.StatusNotFound, code, "no such hold")
	case "hold_expired":
		return errorf(http.StatusGone, code, "the hold has ended; its seats may be taken: hold them again")
	case "invalid_argument":
		return errorf(http.StatusBadRequest, code, "%s", strings.TrimPrefix(err.Error(), "booking: invalid argument: "))
	case "screening_not_found":
		return errorf(http.StatusNotFound, code, "no such screening")
	case "booking_not_found":
		return errorf(http.StatusNotFound, code, "no such booking")
	case "permission_denied":
		return errorf(http.StatusForbidden, code, "%s", strings.TrimPrefix(err.Error(), "booking: "))
	case "sale_not_open", "seat_limit":
		return errorf(http.StatusConflict, code, "%s", strings.TrimPrefix(err.Error(), "booking: "))
	case "not_admitted":
		return errorf(http.StatusForbidden, code, "%s", strings.TrimPrefix(err.Error(), "booking: "))
	case "sale_closed":
		return errorf(http.StatusConflict, code, saleClosedMessage)
	case "payment_required":
		return errorf(http.StatusPaymentRequired, code, "the screening is priced: hold the seats, then pay for the hold (CheckoutHold)")
	case "hold_confirmed":
		return errorf(http.StatusConflict, code, "the hold is confirmed already: it is a booking")
	case "no_seats_together":
		return noSeatsError(err)
	case "unavailable":
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return errorf(http.StatusServiceUnavailable, code, "the request timed out; try again")
		}
		return errorf(http.StatusServiceUnavailable, code, "the database is busy; try again")
	}
	return errorf(http.StatusInternalServerError, "internal", "internal error")
}

// writeError writes any error as {"error": {...}} with its status.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, execID string, err error) {
	ae := toAPIError(err)
	if ae.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if ae.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", "POST, OPTIONS")
	}
	level := slog.LevelInfo
	if ae.status >= 500 {
		level = slog.LevelError
	}
	a.Log.Log(r.Context(), level, "request failed", "executionId", execID, "path", r.URL.Path, "status", ae.status, "code", ae.Code, "error", err.Error())
	answered(r, ae.status, ae.Code)
	writeJSON(w, ae.status, map[string]any{"error": ae})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// decode checks method, content type and auth, then reads into v (a
// pointer to a request struct) a JSON body of at most MaxBody bytes: one
// object whose keys are v's json names exactly, each at most once. It
// returns the caller.
func (a *API) decode(w http.ResponseWriter, r *http.Request, v any) (caller, error) {
	if r.Method != http.MethodPost {
		return caller{}, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
	}
	if mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" ||
		(params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8")) {
		return caller{}, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "send Content-Type: application/json (UTF-8)")
	}
	who, err := a.authenticate(r)
	if err != nil {
		return caller{}, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return caller{}, errorf(http.StatusRequestEntityTooLarge, "payload_too_large", "the body is larger than %d bytes", MaxBody)
		}
		return caller{}, errorf(http.StatusBadRequest, "invalid_argument", "the body could not be read: %v", err)
	}
	if !utf8.Valid(body) { // encoding/json would turn bad bytes into U+FFFD: two ids into one
		return caller{}, errorf(http.StatusBadRequest, "invalid_argument", "the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return caller{}, errorf(http.StatusBadRequest, "invalid_argument", "malformed JSON body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return caller{}, errorf(http.StatusBadRequest, "invalid_argument", "the body must be exactly one JSON object")
	}
	if err := exactKeys(body, v); err != nil {
		return caller{}, err
	}
	return who, nil
}

// exactKeys refuses what encoding/json lets through even with
// DisallowUnknownFields: a key that matches a field of v only when case is
// ignored ("Seats", "ſeats"), and a key given twice (the last would win).
// Either way the function would act on a value that a proxy, a log or the
// caller's own validation may not have been looking at. body is one JSON
// value that decoded into v without error.
func exactKeys(body []byte, v any) error {
	names := jsonNames(reflect.TypeOf(v).Elem())
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errorf(http.StatusBadRequest, "invalid_argument", "the body must be a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return errorf(http.StatusBadRequest, "invalid_argument", "malformed JSON body: %v", err)
		}
		key, _ := t.(string)
		switch {
		case !names[key]:
			return errorf(http.StatusBadRequest, "invalid_argument", "unknown field %q (field names match exactly, case included)", key)
		case seen[key]:
			return errorf(http.StatusBadRequest, "invalid_argument", "field %q appears more than once", key)
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return errorf(http.StatusBadRequest, "invalid_argument", "malformed JSON body: %v", err)
		}
	}
	return nil
}

// jsonNames are the names encoding/json gives the exported fields of the
// struct type t (request structs: no embedded fields).
func jsonNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	return names
}

type bookRequest struct {
	ScreeningID string   `json:"screeningId"`
	Seats       []string `json:"seats"`
	RequestID   string   `json:"requestId"`
}

// errNotReady: the function's clients could not be built (503; the next
// request builds them again).
var errNotReady = errors.New("functions: not ready")

// serve is what every function shares: CORS (a preflight ends here), the
// request's trace in its context, an execution ID, the checks and decoding
// of decode into req, then handle's answer or its error.
func (a *API) serve(w http.ResponseWriter, r *http.Request, req any, handle func(ctx context.Context, execID, uid string) (int, any, error)) {
	a.serveWith(w, r, req, false, handle)
}

// serveGuarded is serve for the sale's functions of CONTRACT §12: App
// Check runs first, before anything is read or written.
func (a *API) serveGuarded(w http.ResponseWriter, r *http.Request, req any, handle func(ctx context.Context, execID, uid string) (int, any, error)) {
	a.serveWith(w, r, req, true, handle)
}

func (a *API) serveWith(w http.ResponseWriter, r *http.Request, req any, guarded bool, handle func(ctx context.Context, execID, uid string) (int, any, error)) {
	if a.CORS.apply(w, r) {
		return
	}
	r = withTrace(r, a.Project)
	r, span := startSpan(r)
	defer span.End()
	execID, _ := lock.NewExecutionID()
	if a.initErr != nil {
		a.writeError(w, r, execID, fmt.Errorf("%w: %v", errNotReady, a.initErr))
		return
	}
	var appCheck string
	if guarded {
		var err error
		if appCheck, err = a.AppCheck.check(r, a.Log); err != nil {
			a.writeError(w, r, execID, err)
			return
		}
	}
	who, err := a.decode(w, r, req)
	if err != nil {
		a.writeError(w, r, execID, err)
		return
	}
	who.AppCheck = appCheck
	code, body, err := handle(context.WithValue(r.Context(), callerKey{}, who), execID, who.UID)
	if err != nil {
		a.writeError(w, r, execID, err)
		return
	}
	answered(r, code, "ok")
	writeJSON(w, code, body)
}

// BookSeats is the HTTP function of CONTRACT §3.
func (a *API) BookSeats(w http.ResponseWriter, r *http.Request) {
	var req bookRequest
	a.serveGuarded(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		b, created, err := a.Bookings.Book(ctx, execID, booking.Request{UID: uid, ScreeningID: req.ScreeningID, Seats: req.Seats, RequestID: req.RequestID})
		if err != nil {
			return 0, nil, err
		}
		a.Log.InfoContext(ctx, "booked", "executionId", execID, "bookingId", b.ID, "uid", uid, "screeningId", b.ScreeningID, "seats", b.Seats, "created", created)
		if created {
			return http.StatusCreated, b, nil
		}
		return http.StatusOK, b, nil
	})
}

type cancelRequest struct {
	BookingID string `json:"bookingId"`
}

// CancelBooking is the HTTP function of CONTRACT §3.
func (a *API) CancelBooking(w http.ResponseWriter, r *http.Request) {
	var req cancelRequest
	a.serve(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		if req.BookingID == "" {
			return 0, nil, errorf(http.StatusBadRequest, "invalid_argument", "bookingId is required")
		}
		b, err := a.Payments.CancelBooking(ctx, uid, req.BookingID)
		if err != nil {
			return 0, nil, err
		}
		a.Log.InfoContext(ctx, "cancelled", "executionId", execID, "bookingId", b.ID, "uid", uid)
		return http.StatusOK, b, nil
	})
}

type holdRequest struct {
	ScreeningID string   `json:"screeningId"`
	Seats       []string `json:"seats"`
	RequestID   string   `json:"requestId"`
	HoldSeconds *int     `json:"holdSeconds"`
	// Best available (CONTRACT §11) in place of seats; checked by best.go.
	Count    json.RawMessage `json:"count"`
	Together json.RawMessage `json:"together"`
}

// HoldSeats is the HTTP function of CONTRACT §3, and of §11 with count.
func (a *API) HoldSeats(w http.ResponseWriter, r *http.Request) {
	var req holdRequest
	a.serveGuarded(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		d := time.Duration(0) // the default
		if req.HoldSeconds != nil {
			var err error
			if d, err = holdLength(*req.HoldSeconds); err != nil {
				return 0, nil, err
			}
		}
		var h booking.Hold
		var created bool
		var err error
		if best, ok, berr := req.best(uid); berr != nil {
			return 0, nil, berr
		} else if ok {
			h, created, err = a.Bookings.HoldBest(ctx, execID, best, d)
		} else {
			h, created, err = a.Bookings.Hold(ctx, execID, booking.Request{UID: uid, ScreeningID: req.ScreeningID, Seats: req.Seats, RequestID: req.RequestID}, d)
		}
		if err != nil {
			return 0, nil, err
		}
		a.Log.InfoContext(ctx, "held", "executionId", execID, "holdId", h.ID, "uid", uid, "screeningId", h.ScreeningID, "seats", h.Seats, "heldUntil", h.HeldUntil, "created", created)
		if created {
			return http.StatusCreated, h, nil
		}
		return http.StatusOK, h, nil
	})
}

// holdLength is a request's holdSeconds as a duration. The range is checked
// on the integer first: times time.Second, a huge one wraps around into the
// range (36028797018964388 s to 420 s).
func holdLength(seconds int) (time.Duration, error) {
	if seconds < int(booking.MinHold/time.Second) || seconds > int(booking.MaxHold/time.Second) {
		return 0, errorf(http.StatusBadRequest, "invalid_argument", "holdSeconds must be a whole number from %d to %d",
			int(booking.MinHold/time.Second), int(booking.MaxHold/time.Second))
	}
	return time.Duration(seconds) * time.Second, nil
}

type extendRequest struct {
	HoldID      string `json:"holdId"`
	HoldSeconds *int   `json:"holdSeconds"`
}

// holdIDRequest is the body of ConfirmHold and ReleaseHold.
type holdIDRequest struct {
	HoldID string `json:"holdId"`
}

func requireHoldID(id string) error {
	if id == "" {
		return errorf(http.StatusBadRequest, "invalid_argument", "holdId is required")
	}
	return nil
}

// ExtendHold is the HTTP function of CONTRACT §3.
func (a *API) ExtendHold(w http.ResponseWriter, r *http.Request) {
	var req extendRequest
	a.serve(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		if err := requireHoldID(req.HoldID); err != nil {
			return 0, nil, err
		}
		if req.HoldSeconds == nil {
			return 0, nil, errorf(http.StatusBadRequest, "invalid_argument", "holdSeconds is required")
		}
		d, err := holdLength(*req.HoldSeconds)
		if err != nil {
			return 0, nil, err
		}
		h, err := a.Bookings.ExtendHold(ctx, uid, req.HoldID, d)
		if err != nil {
			return 0, nil, err
		}
		a.Log.InfoContext(ctx, "hold extended", "executionId", execID, "holdId", h.ID, "uid", uid, "heldUntil", h.HeldUntil)
		return http.StatusOK, h, nil
	})
}

// ConfirmHold is the HTTP function of CONTRACT §3.
func (a *API) ConfirmHold(w http.ResponseWriter, r *http.Request) {
	var req holdIDRequest
	a.serve(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		if err := requireHoldID(req.HoldID); err != nil {
			return 0, nil, err
		}
		b, created, err := a.Bookings.ConfirmHold(ctx, uid, req.HoldID)
		if err != nil {
			return 0, nil, err
		}
		a.Log.InfoContext(ctx, "hold confirmed", "executionId", execID, "holdId", req.HoldID, "bookingId", b.ID, "uid", uid, "created", created)
		if created {
			return http.StatusCreated, b, nil
		}
		return http.StatusOK, b, nil
	})
}

// ReleaseHold is the HTTP function of CONTRACT §3.
func (a *API) ReleaseHold(w http.ResponseWriter, r *http.Request) {
	var req holdIDRequest
	a.serve(w, r, &req, func(ctx context.Context, execID, uid string) (int, any, error) {
		if err := requireHoldID(req.HoldID); err != nil {
			return 0, nil, err
		}
		h, err := a.Payments.ReleaseHold(ctx, uid, req.HoldID)
		if err != nil {
			return 0, nil, err
		}
		a.Log.InfoContext(ctx, "hold released", "executionId", execID, "holdId", h.ID, "uid", uid, "status", h.Status)
		return http.StatusOK, h, nil
	})
}

// NewLogger logs JSON lines in the Cloud Logging format: severity and
// message are the fields Cloud Logging reads, and a line logged with a
// request's context carries its trace (logging.googleapis.com/trace).
func NewLogger(w io.Writer) *slog.Logger {
	return slog.New(traceHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.MessageKey:
				a.Key = "message"
			case slog.LevelKey:
				a.Key = "severity"
				if lv, ok := a.Value.Any().(slog.Level); ok && lv == slog.LevelWarn {
					a.Value = slog.StringValue("WARNING")
				}
			case slog.TimeKey:
				a.Key = "time"
			}
			return a
		},
	})})
}
