package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Item 13: the docs run the built program, whose exit codes are its own,
// and the Makefile builds it.
func TestDocsRunTheBuiltProgram(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if mk := read("Makefile"); !regexp.MustCompile(`(?m)^bin/firelock:`).MatchString(mk) {
		t.Error("the Makefile has no bin/firelock target")
	}
	if !regexp.MustCompile(`(?m)^/bin/$`).MatchString(read(".gitignore")) {
		t.Error(".gitignore does not ignore /bin/")
	}
	for _, name := range []string{"README.md", "docs/cli.md"} {
		text := read(name)
		if !strings.Contains(text, "make bin/firelock") {
			t.Errorf("%s does not say how to build bin/firelock", name)
		}
		if n := strings.Count(text, "go run ./cmd/firelock "); n > 0 {
			t.Errorf("%s runs firelock with go run %d times: go run replaces its exit codes", name, n)
		}
	}
}

// Item 16: docs/cli.md is what the commands' help says; it cannot drift.
func TestDocsMatchTheCommands(t *testing.T) {
	var buf bytes.Buffer
	a := &app{stdout: io.Discard, stderr: io.Discard}
	if err := genDocs(a.root(), &buf); err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, buf.Bytes()) {
		want := strings.Split(buf.String(), "\n")
		got := strings.Split(string(have), "\n")
		i := 0
		for i < len(want) && i < len(got) && want[i] == got[i] {
			i++
		}
		line := func(ls []string) string {
			if i < len(ls) {
				return ls[i]
			}
			return "(end of file)"
		}
		t.Fatalf("docs/cli.md is not what the commands generate: run go generate ./cmd/firelock\n"+
			"line %d is\n\t%q\nwant\n\t%q", i+1, line(got), line(want))
	}
}

// Item 16: -h on every command prints its help, once, on stdout.
func TestEveryCommandTakesH(t *testing.T) {
	c := newCLI(t)
	a := &app{stdout: io.Discard, stderr: io.Discard}
	var walk func(cmd *cobra.Command)
	n := 0
	walk = func(cmd *cobra.Command) {
		args := append(strings.Fields(strings.TrimPrefix(cmd.CommandPath(), "firelock")), "-h")
		if code, out, errOut := c.run(args...); code != exitOK || strings.Count(out, "Usage:") != 1 || errOut != "" {
			t.Errorf("firelock %s: exit %d, stdout %q, stderr %q; want its help once, on stdout", strings.Join(args, " "), code, out, errOut)
		}
		n++
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(a.root())
	if n < 18 {
		t.Fatalf("-h tried on %d commands only", n)
	}
}
