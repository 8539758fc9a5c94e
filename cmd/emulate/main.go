// Command emulate runs a command with the emulators it needs: it starts
// them on free loopback ports (Firestore with firestore.rules loaded),
// exports FIRESTORE_EMULATOR_HOST, PUBSUB_EMULATOR_HOST and
// FIREBASE_AUTH_EMULATOR_HOST to the command, and stops them when the command
// ends. Its exit code is the command's. An emulator whose variable is
// already set is reused.
//
//	go run ./cmd/emulate -only firestore -- npm --prefix web test
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/firelock/firelock/internal/emulators"
)

func main() {
	only := flag.String("only", "firestore,auth", "comma-separated emulators to start: firestore, pubsub, auth")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: emulate [-only firestore,auth] -- command [args...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(*only, flag.Args()))
}

func run(only string, argv []string) int {
	var kinds []emulators.Kind
	for _, k := range strings.Split(only, ",") {
		switch kind := emulators.Kind(strings.TrimSpace(k)); kind {
		case emulators.Firestore, emulators.PubSub, emulators.Auth:
			kinds = append(kinds, kind)
		default:
			fmt.Fprintf(os.Stderr, "emulate: unknown emulator %q (want firestore, pubsub or auth)\n", k)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := emulators.Start(ctx, kinds...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer r.Stop()
	for _, k := range kinds {
		fmt.Fprintf(os.Stderr, "emulate: %s emulator on %s\n", k, r.Host(k))
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ() // Start exported the hosts into this process's environment
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	default:
		fmt.Fprintf(os.Stderr, "emulate: %s: %v\n", argv[0], err)
		return 1
	}
}
