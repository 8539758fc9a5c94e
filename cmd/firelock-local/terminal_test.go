//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal: its master, and the path of its slave.
func openPTY(t *testing.T) (*os.File, string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	return m, "/dev/pts/" + strconv.Itoa(int(n))
}

// Ctrl-C in the terminal of `make run` stops everything, and make, go run
// and firelock-local all end with exit 0, without make's "Interrupt" or
// "Error 1" (issue #38); the banner lists the functions without the
// framework's `Serving function: ""` lines, and says the time zone of the
// opening it prints.
func TestCtrlCEndsMakeRunWithExitZero(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "firelock-local")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The recipe runs in the checkout, as make run does: stripe-mock is a
	// Go tool of its go.mod.
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	makefile := "run:\n\tcd " + root + " && " + bin + " -port 0 -web off -schedule '' -env-file ''\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}
	master, slave := openPTY(t)
	defer master.Close()
	tty, err := os.OpenFile(slave, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "run")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TZ=Asia/Kolkata")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// A session of its own with the terminal as its controlling one, make
	// in the foreground: as a shell starts it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	// A failed check leaves nothing running: make's whole process group
	// (firelock-local and what it started) is asked to stop, then killed.
	stopAll := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && syscall.Kill(-cmd.Process.Pid, 0) == nil; time.Sleep(100 * time.Millisecond) {
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}

	var mu sync.Mutex
	var out bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	seen := func(s string) bool { mu.Lock(); defer mu.Unlock(); return strings.Contains(out.String(), s) }
	for deadline := time.Now().Add(90 * time.Second); !seen("Press Ctrl-C to stop everything."); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			stopAll()
			t.Fatalf("no banner in 90 s:\n%s", out.String())
		}
	}
	if _, err := master.Write([]byte{3}); err != nil { // Ctrl-C, as the terminal sends it
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		stopAll()
		t.Fatalf("still running 60 s after Ctrl-C:\n%s", out.String())
	}
	time.Sleep(200 * time.Millisecond) // the last output
	mu.Lock()
	text := out.String()
	mu.Unlock()
	var exit *exec.ExitError
	if errors.As(err, &exit) || err != nil {
		t.Errorf("make run ended with %v after Ctrl-C, want exit 0:\n%s", err, text)
	}
	for _, bad := range []string{"make: ***", "Interrupt", "Error 1", "Serving function"} {
		if strings.Contains(text, bad) {
			t.Errorf("the output says %q:\n%s", bad, text)
		}
	}
	if !strings.Contains(text, "UTC+05:30; one pass at a time)") || !strings.Contains(text, "stopping ...") {
		t.Errorf("the banner does not give the opening with its zone (TZ=Asia/Kolkata), or no stop was said:\n%s", text)
	}
}
