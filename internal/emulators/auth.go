package emulators

import (
	"errors"
	"os/exec"
)

func authCommand(port int) (*exec.Cmd, error) {
	return nil, errors.New("emulators: the Auth emulator is not wired yet")
}
