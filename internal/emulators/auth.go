package emulators

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
)

// AuthProject is the project the Auth emulator issues ID tokens for (the
// demo- prefix keeps firebase-tools offline and away from real projects).
const AuthProject = "demo-firelock"

// authCommand runs the Auth emulator of the pinned firebase-tools
// (tools/package.json, installed by scripts/deps.sh) on port, with a config
// of its own so the port is the one chosen here and the UI stays off.
func authCommand(port int) (*exec.Cmd, error) {
	root, err := ProjectRoot()
	if err != nil {
		return nil, errors.New("emulators: the Auth emulator is started only inside firelock's repository (with the firebase-tools it pins); " +
			"elsewhere start it yourself (firebase emulators:start --only auth) and set FIREBASE_AUTH_EMULATOR_HOST")
	}
	bin := filepath.Join(root, "tools", "node_modules", ".bin", "firebase")
	if _, err := os.Stat(bin); err != nil {
		return nil, errors.New("emulators: firebase-tools is not installed; run `make deps` " +
			"(npm ci in tools/; the Auth emulator needs Node.js 20+)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		return nil, errors.New("emulators: node not found on PATH; the Auth emulator needs Node.js 20+ (apt-get install nodejs)")
	}
	// firebase-tools treats port 0 as "unset" and then probes from 4400 (hub)
	// and 4500 (logging), so instances started side by side race for the same
	// ports; and it keeps a per-project hub locator in os.tmpdir(). Each
	// instance gets ports of its own and a TMPDIR of its own.
	hubPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	loggingPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "firelock-auth-")
	if err != nil {
		return nil, err
	}
	cfg, _ := json.Marshal(map[string]any{
		"emulators": map[string]any{
			"auth":              map[string]any{"host": "127.0.0.1", "port": port},
			"ui":                map[string]any{"enabled": false},
			"hub":               map[string]any{"host": "127.0.0.1", "port": hubPort},
			"logging":           map[string]any{"host": "127.0.0.1", "port": loggingPort},
			"singleProjectMode": true,
		},
	})
	if err := os.WriteFile(filepath.Join(dir, "firebase.json"), cfg, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, "emulators:start", "--only", "auth", "--project", AuthProject, "--config", filepath.Join(dir, "firebase.json"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_UPDATE_NOTIFIER=1", "FIREBASE_CLI_DISABLE_TELEMETRY=1",
		"HOME="+dir, "TMPDIR="+dir)
	return cmd, nil
}

// SignIn returns an ID token for email from the running Auth emulator,
// signing the user up on first use. password must be at least 6 characters.
func SignIn(email, password string) (idToken, uid string, err error) {
	host := os.Getenv("FIREBASE_AUTH_EMULATOR_HOST")
	if host == "" {
		return "", "", errors.New("emulators: FIREBASE_AUTH_EMULATOR_HOST is not set")
	}
	call := func(method string) (string, string, int, error) {
		body, _ := json.Marshal(map[string]any{"email": email, "password": password, "returnSecureToken": true})
		resp, err := http.Post("http://"+host+"/identitytoolkit.googleapis.com/v1/accounts:"+method+"?key=fake-api-key", "application/json", bytes.NewReader(body))
		if err != nil {
			return "", "", 0, err
		}
		defer resp.Body.Close()
		var out struct {
			IDToken string `json:"idToken"`
			LocalID string `json:"localId"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		return out.IDToken, out.LocalID, resp.StatusCode, nil
	}
	tok, id, code, err := call("signInWithPassword")
	if err == nil && code == http.StatusOK && tok != "" {
		return tok, id, nil
	}
	tok, id, code, err = call("signUp")
	if err != nil {
		return "", "", fmt.Errorf("emulators: sign up %s: %w", email, err)
	}
	if code != http.StatusOK || tok == "" {
		return "", "", fmt.Errorf("emulators: sign up %s: HTTP %d", email, code)
	}
	return tok, id, nil
}
