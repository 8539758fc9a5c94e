// Command firelock runs sales and operates locks (CONTRACT §8), from a
// terminal or a script:
//
//	firelock sale configure|pause|resume|close|revoke|status|watch|report SCREENING ...
//	firelock locks list|show|release ...
//	firelock operators grant|revoke EMAIL
//
// With no flags it talks to the local bundle (`make run`): the emulators
// named by FIRESTORE_EMULATOR_HOST and FIREBASE_AUTH_EMULATOR_HOST, or,
// when those are not set, by ./.firelock-local.env, which make run writes.
// With --project it talks to that Google Cloud project with Application
// Default Credentials (gcloud auth application-default login).
//
// Exit codes: 0 done, 1 refused or failed (the message says why), 2 usage.
// Reads print tables, or JSON with -o json. Every verb takes -h.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/auth"
	"github.com/firelock/firelock/internal/emulators"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK      = 0
	exitRefused = 1
	exitUsage   = 2
)

// usageError is a mistake in the command line: exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

const topUsage = `firelock runs sales and operates locks (CONTRACT §8).

usage:
  firelock sale configure SCREENING [--opens-at T] [--admit-per-minute N] [--max-active N]
                                    [--pass-seconds N] [--max-seats-per-user N] [--reason R]
  firelock sale pause|resume|close SCREENING [--reason R]
  firelock sale revoke SCREENING USER [--reason R]          (USER: a uid or an email)
  firelock sale status SCREENING [-o json]
  firelock sale watch SCREENING [--for DURATION]
  firelock sale report SCREENING [--html FILE] [--csv DIR] [-o json]
  firelock locks list [--collection C] [--prefix P] [-o json]
  firelock locks show PATH [-o json]                         (PATH: e.g. locks/admit-onsale)
  firelock locks release PATH --force --reason R (--token T | --owner O)
  firelock operators grant|revoke EMAIL

Every verb takes --project P (a Google Cloud project, with Application Default
Credentials; without it, the local bundle of make run) and -h.
Exit codes: 0 done, 1 refused or failed, 2 usage.
`

// run is the command line: args without the program's name.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, topUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	verbs := map[string]map[string]verb{"sale": saleVerbs, "locks": lockVerbs, "operators": operatorVerbs}
	group, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "firelock: unknown command %q\n\n%s", args[0], topUsage)
		return exitUsage
	}
	if len(args) < 2 || args[1] == "-h" || args[1] == "--help" {
		fmt.Fprint(stdout, topUsage)
		if len(args) < 2 {
			return exitUsage
		}
		return exitOK
	}
	v, ok := group[args[1]]
	if !ok {
		fmt.Fprintf(stderr, "firelock %s: unknown verb %q\n\n%s", args[0], args[1], topUsage)
		return exitUsage
	}
	c := &cmd{name: "firelock " + args[0] + " " + args[1], stdout: stdout, stderr: stderr}
	c.fs = flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.fs.SetOutput(stderr)
	c.fs.StringVar(&c.project, "project", "", "Google Cloud project (Application Default Credentials); default: the local bundle")
	c.fs.StringVar(&c.output, "o", "table", "output of reads: table or json")
	c.fs.StringVar(&c.as, "as", os.Getenv("FIRELOCK_OPERATOR"), "the operator's email, for the sale's log (default $FIRELOCK_OPERATOR)")
	var setup func([]string) error
	if v.flags != nil {
		setup = v.flags(c)
	}
	// The flag package prints the usage itself on -h and on a bad flag;
	// it is printed here instead, once: on stdout for -h.
	c.fs.Usage = func() {}
	pos, err := c.parse(args[2:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "usage: %s %s\n\n%s\n\nflags:\n", c.name, v.args, v.help)
		c.fs.SetOutput(stdout)
		c.fs.PrintDefaults()
		return exitOK
	}
	if err == nil && (len(pos) < v.min || len(pos) > v.max) {
		err = usagef("%s takes %s", c.name, v.args)
	}
	if err == nil && c.output != "table" && c.output != "json" {
		err = usagef("-o %q: want table or json", c.output)
	}
	if err == nil && setup != nil {
		err = setup(pos)
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		}
		fmt.Fprintf(stderr, "usage: %s %s (-h for more)\n", c.name, v.args)
		return exitUsage
	}
	if err := c.connect(ctx); err != nil {
		var ue usageError
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitRefused
	}
	defer c.close()
	if err := v.run(ctx, c, pos); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		var ue usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitRefused
	}
	return exitOK
}

// verb is one command: its arguments (for usage), how many positional
// arguments it takes, its flags, and what it does.
type verb struct {
	args     string
	help     string
	min, max int
	// flags adds the verb's flags to c.fs and returns a check of them with
	// the positional arguments (nil: none), run before anything connects.
	flags func(c *cmd) func(pos []string) error
	run   func(ctx context.Context, c *cmd, pos []string) error
}

// cmd is one invocation: its flags, output and clients.
type cmd struct {
	name           string
	fs             *flag.FlagSet
	project        string
	output, as     string
	stdout, stderr io.Writer

	db   *firestore.Client
	auth *auth.Client
	saleFlags
	lockFlags
}

// parse parses flags anywhere among the positional arguments (`sale pause
// onsale --reason x` as well as `sale pause --reason x onsale`).
func (c *cmd) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := c.fs.Parse(args); err != nil {
			return nil, err
		}
		args = c.fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// connect makes the clients: the local bundle's emulators, or a project.
func (c *cmd) connect(ctx context.Context) error {
	project := c.project
	if project != "" {
		// A real project: never an emulator a shell variable names.
		for _, v := range []string{"FIRESTORE_EMULATOR_HOST", "FIREBASE_AUTH_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST"} {
			os.Unsetenv(v)
		}
	} else {
		if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
			if err := loadEnvFile(".firelock-local.env"); err != nil {
				return usagef("no project: run this beside `make run` (it writes ./.firelock-local.env), " +
					"or set FIRESTORE_EMULATOR_HOST, or pass --project for a Google Cloud project")
			}
		}
		project = os.Getenv("GOOGLE_CLOUD_PROJECT")
		if project == "" {
			project = emulators.AuthProject
		}
	}
	db, err := firestore.NewClient(ctx, project)
	if err != nil {
		return fmt.Errorf("Firestore of %s: %w", project, err)
	}
	c.db = db
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: project})
	if err != nil {
		return fmt.Errorf("Firebase of %s: %w", project, err)
	}
	if c.auth, err = app.Auth(ctx); err != nil {
		return fmt.Errorf("Firebase Auth of %s: %w", project, err)
	}
	return nil
}

func (c *cmd) close() {
	if c.db != nil {
		c.db.Close()
	}
}

// loadEnvFile sets the exports of a file that make run writes
// (`export NAME='value'` lines), leaving variables already set alone.
func loadEnvFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if _, set := os.LookupEnv(name); !set {
			os.Setenv(name, strings.Trim(value, `'"`))
		}
	}
	return sc.Err()
}

// operator is who the sale's log says acted: the --as email (or
// $FIRELOCK_OPERATOR), and a uid that says it was this command line.
func (c *cmd) operator() (uid, email string) {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		who += "@" + h
	}
	return "cli:" + who, c.as
}
