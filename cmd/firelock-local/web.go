package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/firelock/firelock/internal/emulators"
)

// The -web modes.
const (
	webDev     = "dev"     // Vite's dev server: edits reload in the browser
	webPreview = "preview" // vite build, then serve the built app (what Hosting serves)
	webOff     = "off"
)

// webApp is the seat-map app and the mutex page of web/, served by Vite and
// configured (VITE_* variables) to talk to this run's emulators and functions.
type webApp struct {
	cmd    *exec.Cmd
	URL    string
	Exited <-chan error // Vite's exit
}

// webEnv is the app's configuration for this run (see web/src/app/config.ts).
func webEnv(emu *emulators.Running, project, functionsURL string) []string {
	return append(os.Environ(),
		"VITE_FIREBASE_PROJECT_ID="+project,
		"VITE_FIREBASE_API_KEY=fake-api-key", // the Auth emulator takes any key
		"VITE_FIRESTORE_EMULATOR_HOST="+emu.Host(emulators.Firestore),
		"VITE_AUTH_EMULATOR_HOST="+emu.Host(emulators.Auth),
		"VITE_FUNCTIONS_URL="+functionsURL,
	)
}

// startWeb builds (preview) and serves web/ on 127.0.0.1:port, and returns
// once the app answers. The server runs in its own process group, so stop
// ends Vite and anything it started.
func startWeb(ctx context.Context, mode string, port int, env []string) (*webApp, error) {
	dir, err := webDir()
	if err != nil {
		return nil, err
	}
	vite := filepath.Join(dir, "node_modules", ".bin", "vite")
	if _, err := os.Stat(vite); err != nil {
		return nil, fmt.Errorf("web app: %s not found; run scripts/deps.sh (npm ci in web/)", vite)
	}
	args := []string{"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--strictPort"}
	if mode == webPreview {
		build := exec.CommandContext(ctx, vite, "build", "--logLevel", "warn")
		build.Dir, build.Env, build.Stdout, build.Stderr = dir, env, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("web app: vite build: %w", err)
		}
		args = append([]string{"preview"}, args...)
	}
	cmd := exec.Command(vite, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("web app: start vite: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	w := &webApp{cmd: cmd, URL: fmt.Sprintf("http://127.0.0.1:%d", port), Exited: exited}
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("web app: vite exited before it served %s: %v", w.URL, err)
		case <-ctx.Done():
			w.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := http.Get(w.URL + "/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return w, nil
			}
		}
		if time.Now().After(deadline) {
			w.stop()
			return nil, errors.New("web app: vite did not serve " + w.URL + " within 90 s")
		}
	}
}

func (w *webApp) stop() {
	if w != nil && w.cmd.Process != nil {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGTERM)
	}
}

// webDir is web/ beside firelock's go.mod.
func webDir() (string, error) {
	root, err := emulators.ProjectRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "web"), nil
}
