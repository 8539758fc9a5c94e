package main

import (
	"os"
	"slices"
	"sync"
	"time"

	"github.com/firelock/firelock/cmd/firelock-local/appchecklocal"
	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/report"
)

// App Check and bots (CONTRACT §12, issue #40). With -appcheck enforce or
// monitor the functions verify App Check tokens against a key made for the
// run (appchecklocal, its key set served on loopback), the people's app
// sends a token with every call, and -bots N adds N scripted joiners with
// accounts of their own and no token: with enforce none of them gets a
// place; with monitor they join, and the report counts them.

// appCheckRun is the run's stand-in for App Check.
type appCheckRun struct {
	issuer *appchecklocal.Issuer
	srv    *appchecklocal.Server
	mu     sync.Mutex
	tok    string
	exp    time.Time
}

// startAppCheck serves a fresh key set and points the functions' verifier
// at it, in mode, through the environment the functions read when they
// are built (so call it before startBackend); nil with mode off. The
// returned restore puts the environment back.
func startAppCheck(mode, project string) (*appCheckRun, func(), error) {
	if mode == functions.AppCheckOff {
		return nil, func() {}, nil
	}
	issuer, err := appchecklocal.New(project, appchecklocal.AppID)
	if err != nil {
		return nil, nil, err
	}
	srv, err := issuer.Serve("surge", nil)
	if err != nil {
		return nil, nil, err
	}
	a := &appCheckRun{issuer: issuer, srv: srv}
	env := map[string]string{functions.AppCheckEnv: mode, functions.AppCheckJWKSEnv: srv.JWKSURL, functions.AppCheckAppsEnv: ""}
	old := map[string]string{}
	for k, v := range env {
		old[k] = os.Getenv(k)
		os.Setenv(k, v)
	}
	return a, func() {
		for k, v := range old {
			os.Setenv(k, v)
		}
		a.srv.Close()
	}, nil
}

// token is the people's app's App Check token, signed afresh when less
// than a minute of it is left.
func (a *appCheckRun) token() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Until(a.exp) < time.Minute {
		tok, exp, err := a.issuer.Sign(time.Now())
		if err != nil {
			return "", err
		}
		a.tok, a.exp = tok, exp
	}
	return a.tok, nil
}

// botFigures are what the bots got, and the places by App Check result.
type botFigures struct {
	Bots     int `json:"bots"`
	Places   int `json:"places"`   // bots with a place
	Admitted int `json:"admitted"` // bots admitted
	Seats    int `json:"seats"`    // seats in bots' confirmed bookings
	// JoinsByAppCheck counts every place by what App Check made of its
	// join (the places' appCheck field; empty with App Check off).
	JoinsByAppCheck map[string]int `json:"joinsByAppCheck,omitempty"`
	People          int            `json:"peoplePlaces"` // places of people
}

// botFiguresOf counts the bots' places, admissions and seats in what
// Firestore holds (bots: their uids).
func botFiguresOf(st *report.Sale, bots []string) botFigures {
	f := botFigures{Bots: len(bots)}
	isBot := func(uid string) bool { return slices.Contains(bots, uid) }
	for _, p := range st.Places {
		if p.AppCheck != "" {
			if f.JoinsByAppCheck == nil {
				f.JoinsByAppCheck = map[string]int{}
			}
			f.JoinsByAppCheck[p.AppCheck]++
		}
		if !isBot(p.UID) {
			f.People++
			continue
		}
		f.Places++
		if p.AdmittedAt != nil {
			f.Admitted++
		}
	}
	for _, b := range st.Bookings {
		if isBot(b.UID) && b.Status == "confirmed" {
			f.Seats += len(b.Seats)
		}
	}
	return f
}

// judgeBots: with App Check enforced, a bot with a place is a failure.
func (r *Report) judgeBots(add func(kind, format string, args ...any)) {
	if r.Bots.Bots > 0 && r.Config.AppCheck == functions.AppCheckEnforce && r.Bots.Places > 0 {
		add("correctness", "%d of %d bots got a place with App Check enforced (goal 0)", r.Bots.Places, r.Bots.Bots)
	}
}

// printBots prints what the bots got.
func (r *Report) printBots(p func(format string, args ...any)) {
	if r.Config.AppCheck == functions.AppCheckOff && r.Bots.Bots == 0 {
		return
	}
	p("\napp check  %s;  joins by result: %s", r.Config.AppCheck, countsLine(r.Bots.JoinsByAppCheck))
	if r.Bots.Bots > 0 {
		p("  bots %d (no App Check token): places %d, admitted %d, seats booked %d;  people's places %d",
			r.Bots.Bots, r.Bots.Places, r.Bots.Admitted, r.Bots.Seats, r.Bots.People)
	}
}
