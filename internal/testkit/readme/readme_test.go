// Package readme tests that every shell block of the README runs as
// written (issue #29.14): against `make run` itself, as a new user pastes
// them, in one shell, in order.
package readme

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// block is one ```sh block of a markdown file.
type block struct {
	line int    // of the opening fence
	note string // the <!-- readme-test: ... --> comment just before it, if any
	text string
}

var noteRE = regexp.MustCompile(`^<!-- readme-test: (.*) -->$`)

func shellBlocks(t *testing.T, path string) []block {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []block
	var cur *block
	var note string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case line == "```sh" || line == "```bash":
			cur = &block{line: n, note: note}
		}
		if m := noteRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			note = m[1]
		} else if strings.TrimSpace(line) != "" {
			note = ""
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: a ``` block is never closed", path, cur.line)
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var coveredRE = regexp.MustCompile(`^covered by (Test\w+|\.ci/run)\b`)

// Every block is run, dry-run, or names the test that runs it; a named
// test must exist, so the note cannot rot. This part runs in every go test.
func TestREADMEBlocksAreAccountedFor(t *testing.T) {
	root := repoRoot(t)
	tests := testNames(t, root)
	for _, b := range shellBlocks(t, filepath.Join(root, "README.md")) {
		switch m := coveredRE.FindStringSubmatch(b.note); {
		case b.note == "" || b.note == "dry run":
		case m != nil:
			if m[1] != ".ci/run" && !tests[m[1]] {
				t.Errorf("README.md:%d: the block says it is covered by %s, which no test file defines", b.line, m[1])
			}
		default:
			t.Errorf("README.md:%d: unknown readme-test note %q (want \"dry run\" or \"covered by TestName: why\")", b.line, b.note)
		}
	}
}

func testNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || (d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), "."))) {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, _ := os.ReadFile(path)
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				names[m[1]] = true
			}
		}
		return nil
	})
	return names
}

// TestREADMECommandsRunAsWritten starts `make run` exactly as the README
// says, waits for the file it writes for other terminals, and runs every
// runnable block in one bash session in README order with set -euo
// pipefail (curl examples use --fail-with-body, so an HTTP error fails).
// Dry-run blocks are checked with make -n, go test -list and bash -n.
// make test runs it (FIRELOCK_README_TEST=1): it takes the default ports
// of make run, so stop a make run of your own first.
func TestREADMECommandsRunAsWritten(t *testing.T) {
	if os.Getenv("FIRELOCK_README_TEST") == "" {
		t.Skip("make test runs this with FIRELOCK_README_TEST=1: it starts make run on its default ports")
	}
	root := repoRoot(t)
	blocks := shellBlocks(t, filepath.Join(root, "README.md"))
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for _, b := range blocks {
		switch {
		case b.note == "":
			fmt.Fprintf(&script, "echo '=== README.md:%d' >&2\n%s", b.line, b.text)
		case b.note == "dry run":
			dryRun(t, root, b)
		}
	}

	envFile := filepath.Join(root, ".firelock-local.env")
	if _, err := os.Stat(envFile); err == nil {
		t.Fatalf("%s exists: a make run is running in this checkout (or one crashed); stop it or remove the file", envFile)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var runOut lockedBuffer // os/exec copies make run's output while the test reads it
	run := exec.CommandContext(ctx, "make", "run")
	run.Dir, run.Stdout, run.Stderr, run.Env = root, &runOut, &runOut, userEnv(os.Environ())
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	run.Cancel = func() error { return syscall.Kill(-run.Process.Pid, syscall.SIGINT) }
	run.WaitDelay = 30 * time.Second
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- run.Wait() }()
	defer func() {
		syscall.Kill(-run.Process.Pid, syscall.SIGINT)
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			syscall.Kill(-run.Process.Pid, syscall.SIGKILL)
		}
		if _, err := os.Stat(envFile); err == nil {
			t.Errorf("make run left %s behind after Ctrl-C", envFile)
			os.Remove(envFile)
		}
	}()
	for {
		if _, err := os.Stat(envFile); err == nil && strings.Contains(runOut.String(), "Press Ctrl-C") {
			break
		}
		select {
		case err := <-stopped:
			t.Fatalf("make run stopped before it was up (%v):\n%s", err, runOut.String())
		case <-time.After(250 * time.Millisecond):
		}
		if ctx.Err() != nil {
			t.Fatalf("make run did not come up:\n%s", runOut.String())
		}
	}

	sh := exec.CommandContext(ctx, "bash", "-c", script.String())
	sh.Dir, sh.Env = root, userEnv(os.Environ())
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands failed (%v); the last block run is the last === line:\n%s\n--- make run's output:\n%s", err, out, runOut.String())
	}
	t.Logf("the README's commands:\n%s", out)
}

// lockedBuffer is a bytes.Buffer that one goroutine may write while another
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// userEnv is env without what an enclosing make passes to the commands it
// runs (MAKEFLAGS, MFLAGS, MAKELEVEL): the README's commands run as a
// person types them at a shell. Under make test's `-j --output-sync`, the
// `make run` started here inherited output sync, so its output ("Press
// Ctrl-C") came only when it ended, and the test waited out its 8 minutes
// (fresh-clone run of 2026-11-29 21:26).
func userEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GNUMAKEFLAGS":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// dryRun checks the commands of a block too long to run in a test: make
// targets exist (make -n), go test patterns match tests (go test -list),
// and the rest parses (bash -n).
func dryRun(t *testing.T, root string, b block) {
	t.Helper()
	for _, line := range strings.Split(b.text, "\n") {
		cmd := strings.TrimSpace(strings.SplitN(line, " #", 2)[0])
		fields := strings.Fields(cmd)
		var env []string
		for len(fields) > 0 && strings.Contains(fields[0], "=") && !strings.HasPrefix(fields[0], "-") {
			env, fields = append(env, fields[0]), fields[1:]
		}
		if len(fields) == 0 {
			continue
		}
		var c *exec.Cmd
		switch {
		case fields[0] == "make":
			c = exec.Command("make", append([]string{"-n"}, fields[1:]...)...)
		case len(fields) > 2 && fields[0] == "go" && fields[1] == "test":
			c = exec.Command("bash", "-c", "go test -list "+listArgs(cmd))
		default:
			c = exec.Command("bash", "-n", "-c", cmd)
		}
		c.Dir, c.Env = root, append(userEnv(os.Environ()), env...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Errorf("README.md:%d: %q does not run as written: %v\n%s", b.line, cmd, err, out)
			continue
		}
		if c.Args[0] == "bash" && strings.Contains(c.Args[len(c.Args)-1], "go test -list") && !strings.Contains(string(out), "Test") {
			t.Errorf("README.md:%d: %q matches no test:\n%s", b.line, cmd, out)
		}
	}
}

// listArgs turns `go test [flags] -run PATTERN pkgs` into `PATTERN pkgs`
// for go test -list.
func listArgs(cmd string) string {
	re := regexp.MustCompile(`-run[ =]('[^']*'|"[^"]*"|\S+)`)
	m := re.FindStringSubmatch(cmd)
	pattern := "."
	if m != nil {
		pattern = m[1]
	}
	var pkgs []string
	for _, f := range strings.Fields(cmd) {
		if strings.HasPrefix(f, "./") {
			pkgs = append(pkgs, f)
		}
	}
	return pattern + " " + strings.Join(pkgs, " ")
}

func TestUserEnvDropsTheEnclosingMakesFlags(t *testing.T) {
	got := userEnv([]string{"HOME=/root", "MAKEFLAGS= -j --output-sync=target", "MFLAGS=-j", "MAKELEVEL=1", "MAKEOVERRIDES=${-*-command-variables-*-}", "GNUMAKEFLAGS=", "PATH=/bin", "MAKEFLAGSX=kept"})
	want := []string{"HOME=/root", "PATH=/bin", "MAKEFLAGSX=kept"}
	if !slices.Equal(got, want) {
		t.Errorf("userEnv = %q, want %q", got, want)
	}
}
