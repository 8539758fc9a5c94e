package ticket

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// docBlock is the shell block of docs/door.md after the comment that
// starts with marker, its indentation removed.
func docBlock(t *testing.T, marker string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "door.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	found, in := false, false
	var b strings.Builder
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "<!-- "+marker):
			found = true
		case found && !in && line == "```sh":
			in = true
		case in && line == "```":
			return b.String()
		case in:
			b.WriteString(line + "\n")
		}
	}
	t.Fatalf("docs/door.md has no shell block after <!-- %s", marker)
	return ""
}

// The recipes of docs/door.md ("The keys") work as written: OpenSSL and
// standard tools make a secret the functions take and sign with, and the
// two jq steps of a rotation list the new key second, then first, with
// codes of the old key still verifying. gcloud is a stand-in that keeps
// the secret's versions in files.
func TestTheDocsKeyRecipe(t *testing.T) {
	for _, tool := range []string{"openssl", "jq", "base64", "tail", "tr"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	dir, bin := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(bin, "gcloud"), []byte(`#!/usr/bin/env bash
case "$*" in
  *"versions access"*) cat "$SECRET_DIR/latest.json" ;;
  *"versions add"*) for a in "$@"; do case "$a" in --data-file=*) cp "${a#--data-file=}" "$SECRET_DIR/latest.json" ;; esac; done ;;
esac
`), 0o755)
	run := func(script string) {
		t.Helper()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "SECRET_DIR="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s\n--- the block:\n%s", err, out, script)
		}
	}
	read := func(name string) *Keys {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		k, err := ParseKeys(b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b)
		}
		return k
	}
	run(docBlock(t, "door-key-recipe"))
	first := read("ticket-key.json")
	if !first.CanSign() {
		t.Fatal("the recipe's key cannot sign")
	}
	t.Setenv(KeyEnv, mustRead(t, filepath.Join(dir, "ticket-key.json")))
	if k, err := KeysFromEnv(); err != nil || k.KeyID() != first.KeyID() {
		t.Fatalf("the functions do not take it: %v", err)
	}
	code, err := first.Sign(Payload{TicketID: "t", ScreeningID: "s", Seat: "A1", Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A rotation: the current secret is the first key, renamed old; a new
	// key is made by the same recipe.
	os.Rename(filepath.Join(dir, "ticket-key.json"), filepath.Join(dir, "latest.json"))
	run(strings.ReplaceAll(docBlock(t, "door-key-recipe"), "KID=k$(date -u +%Y%m%d)", "KID=knew"))
	run(docBlock(t, "door-rotate-recipe"))
	step1 := read("latest.json")
	if step1.KeyID() != first.KeyID() || len(step1.Public().Keys) != 2 || step1.Public().Keys[1].Kid != "knew" {
		t.Fatalf("step 1: signs with %s, lists %+v; want the old key signing and knew second", step1.KeyID(), step1.Public())
	}
	run(docBlock(t, "door-rotate-step2"))
	step2 := read("latest.json")
	if step2.KeyID() != "knew" {
		t.Fatalf("step 2 signs with %s, want knew", step2.KeyID())
	}
	if _, err := step2.Verify(code); err != nil {
		t.Fatalf("a code of the old key after the rotation: %v", err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
