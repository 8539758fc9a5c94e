// Command firelock runs sales and operates locks (CONTRACT §8), from a
// terminal or a script:
//
//	firelock sale configure|pause|resume|close|revoke|status|watch|report SCREENING ...
//	firelock sale list
//	firelock locks list|show|release ...
//	firelock operators grant|revoke EMAIL
//	firelock scanners grant|revoke EMAIL
//	firelock door status SCREENING
//	firelock tickets show ID|CODE
//
// With no flags it talks to the local bundle (`make run`): the emulators
// named by FIRESTORE_EMULATOR_HOST and FIREBASE_AUTH_EMULATOR_HOST, or,
// when those are not set, by ./.firelock-local.env, which make run writes.
// With --project it talks to that Google Cloud project with Application
// Default Credentials (gcloud auth application-default login), unless an
// emulator variable is set, which wins, as in the Admin SDKs.
//
// Exit codes: 0 done, 1 refused or failed (the message says why), 2 usage.
// Reads print tables, or JSON with -o json. Every command takes -h.
// Build it with `make bin/firelock`; docs/cli.md is generated from the
// commands (go generate ./cmd/firelock).
package main

//go:generate go run . gendocs ../../docs/cli.md

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/firestore"
	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/auth"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK      = 0
	exitRefused = 1
	exitUsage   = 2
)

// defaultTimeout bounds each command's talk with Firestore and Auth.
const defaultTimeout = 30 * time.Second

// usageError is a mistake in the command line: exit 2, nothing read or
// written. An empty one has been explained already (the usage is printed).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// refusal is a command that ran and was refused or failed: exit 1.
type refusal struct{ err error }

func (e refusal) Error() string { return e.err.Error() }
func (e refusal) Unwrap() error { return e.err }

// run is the command line: args without the program's name. Everything
// cobra refuses before a command runs (an unknown command or flag, wrong
// arguments) is a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.root()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if cmd == nil {
		cmd = root
	}
	var r refusal
	if errors.As(err, &r) {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		return exitRefused
	}
	if err.Error() != "" {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		fmt.Fprintf(stderr, "usage: %s (-h for more)\n", cmd.UseLine())
	}
	return exitUsage
}

// app is one invocation: the persistent flags and the clients.
type app struct {
	stdout, stderr io.Writer

	project, as string
	timeout     time.Duration

	target    string          // what the clients talk to, for messages
	fromFile  map[string]bool // variables set from ./.firelock-local.env
	authOnly  bool            // the command talks to Auth only (annAuthOnly)
	projectID string
	db        *firestore.Client
	fb        *firebase.App
	authc     *auth.Client
}

const rootLong = `firelock runs sales and operates locks (CONTRACT §8): the operators' command line.

Without --project it talks to the local bundle: the emulators named by
FIRESTORE_EMULATOR_HOST, FIREBASE_AUTH_EMULATOR_HOST and GOOGLE_CLOUD_PROJECT, or,
when FIRESTORE_EMULATOR_HOST is not set, by ./.firelock-local.env (which make run
writes). With --project P it talks to the Google Cloud project P with Application
Default Credentials (gcloud auth application-default login); as in the Admin SDKs,
an emulator variable that is set wins (firelock says so on stderr), and a demo-*
project lives only in the emulators, so it never asks for credentials.

Exit codes: 0 done; 1 refused or failed (the reason is on stderr); 2 usage: nothing
was read or written.`

// root builds the command tree; one per invocation.
func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "firelock",
		Short:         "Runs sales and operates locks (CONTRACT §8)",
		Long:          rootLong,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE:          groupRunE, // with no arguments; cobra refuses unknown commands
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.check(cmd, args)
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		msg := err.Error()
		if strings.Contains(msg, "'o' in -o") {
			msg += " (this command prints nothing to read as a table or JSON)"
		}
		return usageError{msg}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.project, "project", "", "the Google Cloud project to talk to, with Application Default Credentials (default: the local bundle of make run); an emulator variable that is set wins")
	pf.StringVar(&a.as, "as", "", "your email, for the sale's log and the lock log (default $FIRELOCK_OPERATOR)")
	pf.DurationVar(&a.timeout, "timeout", defaultTimeout, "how long the command may wait for Firestore and Auth (sale watch: for its first numbers)")
	root.AddCommand(a.saleCmd(), a.locksCmd(), a.operatorsCmd(), a.scannersCmd(), a.doorCmd(), a.ticketsCmd(), a.paymentsCmd(), a.gendocsCmd())
	root.SetOut(a.stdout) // before the completion command, which keeps its writer
	root.SetErr(a.stderr)
	root.InitDefaultCompletionCmd()
	return root
}

// groupRunE answers a group called without a known verb: its usage, exit 2.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown verb %q (firelock %s -h lists them)", args[0], strings.TrimPrefix(cmd.CommandPath(), "firelock "))
	}
	cmd.SetOut(cmd.ErrOrStderr())
	cmd.Usage()
	return usageError{}
}

// group is a noun: sale, locks, operators, scanners.
func group(use, short string, verbs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, RunE: groupRunE}
	c.AddCommand(verbs...)
	return c
}

// positional checks the number of positional arguments.
func positional(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			return usagef("takes %s, not %d arguments", strings.TrimSuffix(strings.TrimPrefix(cmd.UseLine(), cmd.CommandPath()+" "), " [flags]"), len(args))
		}
		return nil
	}
}

// check runs before every command: what every command line must be.
func (a *app) check(cmd *cobra.Command, args []string) error {
	for _, arg := range args {
		if !utf8.ValidString(arg) {
			return usagef("%q is not valid UTF-8", arg)
		}
	}
	var bad error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if bad == nil && !utf8.ValidString(f.Value.String()) {
			bad = usagef("--%s %q is not valid UTF-8", f.Name, f.Value.String())
		}
	})
	if bad != nil {
		return bad
	}
	if f := cmd.Flags().Lookup("output"); f != nil && f.Value.String() != "table" && f.Value.String() != "json" {
		return usagef("-o %q: want table or json", f.Value.String())
	}
	if a.timeout <= 0 {
		return usagef("--timeout %v: want a duration > 0, such as 30s", a.timeout)
	}
	if a.as == "" {
		a.as = os.Getenv("FIRELOCK_OPERATOR")
	}
	return nil
}

// outputFlag adds -o table|json to a command that honours it.
func outputFlag(cmd *cobra.Command, out *string) {
	cmd.Flags().StringVarP(out, "output", "o", "table", "the output: table or json")
}

// action is a command's body: checks of its flags and arguments (usage
// errors, before anything connects), then its work with connected clients
// under --timeout. Its errors are refusals (exit 1) unless they are usage
// errors.
func (a *app) action(check func(args []string) error, work func(ctx context.Context, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if check != nil {
			if err := check(args); err != nil {
				return err
			}
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
		defer cancel()
		a.authOnly = cmd.Annotations[annAuthOnly] != ""
		if err := a.connect(ctx); err != nil {
			return a.failed(ctx, err)
		}
		defer a.close()
		return a.failed(ctx, work(ctx, args))
	}
}

// annAuthOnly marks a command that talks to Firebase Auth only: whether
// Firestore's emulator listens is no concern of it.
const annAuthOnly = "firelock/auth-only"

// failed classifies a command's error: usage, a deadline of --timeout, or
// a refusal.
func (a *app) failed(ctx context.Context, err error) error {
	var ue usageError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue):
		return err
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded:
		return a.timedOut()
	}
	return refusal{err}
}

func (a *app) timedOut() error {
	return refusal{fmt.Errorf("%s did not answer within %v (--timeout); an action may have been applied all the same: "+
		"look (sale status, locks show) before you try again, or allow longer with --timeout", a.target, a.timeout)}
}

// connect makes the Firestore client (Auth's is made when a command needs
// it): of the emulators when an emulator variable says so, or of the
// project.
func (a *app) connect(ctx context.Context) error {
	project := a.project
	demo := strings.HasPrefix(project, "demo-")
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" && (project == "" || demo) {
		var err error
		if a.fromFile, err = loadEnvFile(envFile); err != nil {
			if demo {
				return usagef("%s is a demo project, which lives only in the emulators: set FIRESTORE_EMULATOR_HOST "+
					"(and FIREBASE_AUTH_EMULATOR_HOST), or run this beside `make run` (it writes ./.firelock-local.env)", project)
			}
			return usagef("no project: run this beside `make run` (it writes ./.firelock-local.env), " +
				"or set FIRESTORE_EMULATOR_HOST, or pass --project for a Google Cloud project")
		}
	}
	if project == "" {
		project = os.Getenv("GOOGLE_CLOUD_PROJECT")
	}
	if project == "" {
		project = emulators.AuthProject
	}
	a.projectID = project
	a.target = "Firestore of project " + project
	if host := os.Getenv("FIRESTORE_EMULATOR_HOST"); host != "" {
		a.target = fmt.Sprintf("the Firestore emulator at %s (project %s)", host, project)
		if a.project != "" && !demo {
			fmt.Fprintf(a.stderr, "firelock: FIRESTORE_EMULATOR_HOST is set: talking to %s, not to the real project (unset it for that)\n", a.target)
		}
	}
	if !a.authOnly {
		if err := a.listening(ctx, "FIRESTORE_EMULATOR_HOST", "the Firestore emulator"); err != nil {
			return err
		}
	}
	// With FIRESTORE_EMULATOR_HOST set the client talks to the emulator
	// without credentials; FIREBASE_AUTH_EMULATOR_HOST does the same for Auth.
	db, err := firestore.NewClient(ctx, project)
	if err != nil {
		return fmt.Errorf("Firestore of %s: %w", project, err)
	}
	a.db = db
	a.fb, err = firebase.NewApp(ctx, &firebase.Config{ProjectID: project})
	if err != nil {
		return fmt.Errorf("Firebase of %s: %w", project, err)
	}
	return nil
}

// auth is the Firebase Auth client, made on first use.
func (a *app) auth(ctx context.Context) (*auth.Client, error) {
	if a.authc != nil {
		return a.authc, nil
	}
	project := a.projectID
	if os.Getenv("FIREBASE_AUTH_EMULATOR_HOST") == "" && strings.HasPrefix(project, "demo-") {
		return nil, usagef("%s is a demo project, whose users live only in the Auth emulator: set FIREBASE_AUTH_EMULATOR_HOST", project)
	}
	if err := a.listening(ctx, "FIREBASE_AUTH_EMULATOR_HOST", "the Firebase Auth emulator"); err != nil {
		return nil, err
	}
	c, err := a.fb.Auth(ctx)
	if err != nil {
		return nil, fmt.Errorf("Firebase Auth of %s: %w", project, err)
	}
	a.authc = c
	return c, nil
}

func (a *app) close() {
	if a.db != nil {
		a.db.Close()
	}
}

// listening checks, before the first RPC, that something listens at the
// address an emulator variable names (nothing to check when it is not
// set: a project in Google Cloud, with its own credentials). The clients
// retry a refused connection until --timeout passes; this says at once
// that nothing listens there, naming the address and where it came from,
// as kubectl does ("The connection to the server localhost:8080 was
// refused - did you specify the right host or port?"). It costs one TCP
// connection to the emulator.
func (a *app) listening(ctx context.Context, variable, emulator string) error {
	host := os.Getenv(variable)
	if host == "" {
		return nil
	}
	from := variable
	if a.fromFile[variable] {
		from += " in ./" + envFile + ", which make run writes"
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	switch {
	case err == nil:
		conn.Close()
		return nil
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("the connection to %s was refused: nothing listens there. It is %s's address, from %s: "+
			"is the emulator running (make run), and is that the right host and port?", host, emulator, from)
	case ctx.Err() != nil:
		return ctx.Err() // --timeout passed
	}
	return fmt.Errorf("cannot connect to %s at %s (from %s): %w", emulator, host, from, err)
}

// envFile is what make run writes: the local bundle's variables.
const envFile = ".firelock-local.env"

// loadEnvFile sets the exports of a file that make run writes
// (`export NAME='value'` lines), leaving variables already set alone. It
// answers the names it set.
func loadEnvFile(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	set := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if v, had := os.LookupEnv(name); !had || v == "" {
			os.Setenv(name, strings.Trim(value, `'"`))
			set[name] = true
		}
	}
	return set, sc.Err()
}

// operator is who the logs say acted: the --as email (or
// $FIRELOCK_OPERATOR), and a uid that says it was this command line.
func (a *app) operator() (uid, email string) {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		who += "@" + h
	}
	return "cli:" + who, a.as
}
