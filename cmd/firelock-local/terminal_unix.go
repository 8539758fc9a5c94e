//go:build linux || darwin

package main

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// takeTerminal makes this process the terminal's foreground process group
// when it was started in it (by make run or go run in a terminal), so that
// Ctrl-C reaches firelock-local and what it started, not the make and go
// run above it: they then see a stop the user asked for end with exit 0,
// instead of reporting "Interrupt" or "Error 1". The returned func hands
// the terminal back; call it before exiting. Without a terminal, or in the
// background, it does nothing.
func takeTerminal() (giveBack func()) {
	tty := int(os.Stdin.Fd())
	fg, err := tcgetpgrp(tty)
	if err != nil || fg != syscall.Getpgrp() {
		return func() {}
	}
	if err := syscall.Setpgid(0, 0); err != nil {
		return func() {}
	}
	// A process outside the foreground group that sets it is stopped by
	// SIGTTOU unless it ignores it.
	signal.Ignore(syscall.SIGTTOU)
	if err := tcsetpgrp(tty, syscall.Getpgrp()); err != nil {
		return func() {}
	}
	return func() { _ = tcsetpgrp(tty, fg) }
}

func tcgetpgrp(fd int) (int, error) {
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(syscall.TIOCGPGRP), uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return 0, e
	}
	return int(pgrp), nil
}

func tcsetpgrp(fd, pgrp int) error {
	p := int32(pgrp)
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(syscall.TIOCSPGRP), uintptr(unsafe.Pointer(&p))); e != 0 {
		return e
	}
	return nil
}
