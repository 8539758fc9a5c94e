package main

import (
	"fmt"
	"syscall"

	"github.com/firelock/firelock/functions"
)

// The users and the functions share one process, so every connection a
// user opens to the functions costs two descriptors, one at each end
// (issue #41: 10,000 users without a bound on connections exhausted 20,000
// descriptors, and the functions' accept failed). The users' transport
// (front) therefore opens at most MaxConns connections to each function, as
// a crowd reaches a deployed function through its front end, and the run
// checks at the start that the descriptors it needs fit under
// RLIMIT_NOFILE.

// descriptorMargin covers what is open besides the connections counted:
// stdio, the log, the Go runtime's poller and pipes, the emulators' child
// processes' pipes, stripe-mock's client with -pay.
const descriptorMargin = 128

// descriptorsNeeded is what a run of cfg holds open at most: both ends of
// every user connection to each function (-max-conns each), and the Firestore and Auth
// clients (each function instance and the admitter have their own
// Firestore client and lease commit client; the listeners' pool; the
// commit tap's two sides; the sign-ups), plus a margin.
func descriptorsNeeded(cfg config) int {
	instances := len(functions.HTTPFunctions) + 2 // the admitter, and the run's own client
	emulatorClients := 2*instances + cfg.Conns + 2*instances + cfg.SignupConcurrency
	return 2*cfg.MaxConns*len(functions.HTTPFunctions) + emulatorClients + descriptorMargin
}

// descriptorFit is what to do about RLIMIT_NOFILE before a run.
type descriptorFit struct {
	Need       int    // descriptors the run needs
	Soft, Hard uint64 // the limit as found
	Raise      bool   // raise the soft limit to Hard first
}

// fitDescriptors decides: the run fits under the soft limit, fits once the
// soft limit is raised to the hard one, or does not fit (an error saying
// what to change).
func fitDescriptors(need int, soft, hard uint64) (descriptorFit, error) {
	f := descriptorFit{Need: need, Soft: soft, Hard: hard}
	switch {
	case uint64(need) <= soft:
		return f, nil
	case uint64(need) <= hard:
		f.Raise = true
		return f, nil
	}
	return f, fmt.Errorf("the run needs about %d open files (-max-conns connections, both ends in this process, "+
		"plus the emulator clients and a margin), but RLIMIT_NOFILE is %d (hard limit %d): "+
		"lower -max-conns, or raise the limit (ulimit -n)", need, soft, hard)
}

// ensureDescriptors checks cfg against the process's RLIMIT_NOFILE and
// raises the soft limit to the hard one when that makes it fit. It returns
// a line to print when it raised the limit. (Go's os package already
// raises the soft limit to the hard one as a program starts, on Linux, so
// the check that matters is against the hard limit; the raise is kept for
// where that did not happen.)
func ensureDescriptors(cfg config) (string, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return "", fmt.Errorf("read RLIMIT_NOFILE: %w", err)
	}
	f, err := fitDescriptors(descriptorsNeeded(cfg), lim.Cur, lim.Max)
	if err != nil || !f.Raise {
		return "", err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return "", fmt.Errorf("the run needs about %d open files and RLIMIT_NOFILE is %d; raising it to the hard limit %d failed: %w",
			f.Need, f.Soft, f.Hard, err)
	}
	return fmt.Sprintf("surge: raised the open-file limit from %d to its hard limit %d (the run needs about %d)", f.Soft, f.Hard, f.Need), nil
}
