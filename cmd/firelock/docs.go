package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// docsHeader opens docs/cli.md; the rest is generated from the commands.
const docsHeader = `# The command line: ` + "`firelock`" + ` (CONTRACT §8)

<!-- Generated from cmd/firelock by ` + "`go generate ./cmd/firelock`" + ` (firelock gendocs):
     edit the commands' help text, not this file. A test fails when they differ. -->

` + "`cmd/firelock`" + ` runs sales, operates locks and grants the operator and scanner claims. Build it once
with ` + "`make bin/firelock`" + ` (or ` + "`go install ./cmd/firelock`" + `) and run ` + "`bin/firelock ...`" + `: ` + "`go run`" + `
replaces a program's exit codes with its own (1), so scripts should run the built
program. What the actions do to the people in line is in [operating.md](operating.md);
this page lists every command and flag, as ` + "`firelock COMMAND -h`" + ` prints them.

` + "```" + `
firelock sale configure SCREENING [--opens-at T] [--admit-per-minute N] [--max-active N]
                                  [--pass-seconds N] [--max-seats-per-user N] [--reason R] [-o json]
firelock sale pause SCREENING --reason R [-o json]
firelock sale resume|close SCREENING [--reason R] [-o json]
firelock sale revoke SCREENING USER [--reason R] [-o json]
firelock sale status SCREENING [-o json]
firelock sale list [-o json]
firelock sale watch SCREENING [--for DURATION]
firelock sale report SCREENING [--html FILE] [--csv DIR] [-o json]
firelock locks list [--collection C] [--prefix P] [-o json]
firelock locks show PATH [-o json]
firelock locks release PATH --force --reason R (--token T | --owner O --acquired-at T)
firelock operators grant|revoke EMAIL
firelock scanners grant|revoke EMAIL
firelock door status SCREENING [-o json]
firelock tickets show ID|CODE [--keys FILE|URL] [-o json]
firelock completion bash|zsh|fish|powershell
` + "```" + `

**Flags of every command.** ` + "`--project P`" + `: the Google Cloud project ` + "`P`" + ` (its default
Firestore database and its Firebase Auth), with Application Default Credentials
(` + "`gcloud auth application-default login`" + `). Without it: the local bundle, from
` + "`FIRESTORE_EMULATOR_HOST`" + `, ` + "`FIREBASE_AUTH_EMULATOR_HOST`" + ` and ` + "`GOOGLE_CLOUD_PROJECT`" + `, or, when
` + "`FIRESTORE_EMULATOR_HOST`" + ` is not set, from ` + "`./.firelock-local.env`" + ` (which ` + "`make run`" + ` writes).
As in the Admin SDKs, an emulator variable that is set wins over ` + "`--project`" + ` (firelock
says so on stderr), and a ` + "`demo-*`" + ` project lives only in the emulators, so it never asks
for credentials. ` + "`--as EMAIL`" + `: who you are, for the sale's log (` + "`email`" + `) and the lock log
(` + "`by`" + `); default ` + "`$FIRELOCK_OPERATOR`" + `; the uid logged is always ` + "`cli:USER@HOST`" + `.
` + "`--timeout D`" + ` (default 30s): how long a command may wait for Firestore and Auth; when it
passes, the command exits 1 saying so (` + "`sale watch`" + `: for its first line only). ` + "`-h`" + `: the
command's help, as below; exit 0. ` + "`-o table|json`" + ` is a flag of the commands that print
something to read: the others refuse it (exit 2).

Flags take two dashes (` + "`--reason x`" + ` or ` + "`--reason=x`" + `; ` + "`-o`" + ` and ` + "`-h`" + ` one), and may come before
or after the positional arguments (` + "`sale pause onsale --reason x`" + ` and ` + "`sale pause --reason x\nonsale`" + ` are the same); ` + "`--`" + ` ends the flags. Arguments and flag values must be UTF-8.

**Exit codes.** ` + "`0`" + ` done. ` + "`1`" + ` refused or failed: the action was refused (an invalid value,
a whole number out of range however many digits it has, a closed sale, a lease that
changed hands), the screening, user or lease does not exist, the screening has no sale
(` + "`sale status`" + `, ` + "`sale report`" + `), nothing listens at an emulator's address (said at once,
naming the address and its variable), Firestore or Auth failed, or did not answer within
` + "`--timeout`" + `; the reason is on stderr. ` + "`2`" + ` usage: an unknown command, too few or too many
arguments, a flag that is not defined (` + "`-o`" + ` where nothing is printed to read) or whose
value is malformed (` + "`ten`" + `, ` + "`1.5`" + `, ` + "`-o xml`" + `, text that is not UTF-8), a missing required flag
(` + "`sale pause`" + ` without ` + "`--reason`" + `), or no project to talk to; nothing was read or written.
` + "`firelock`" + ` with no arguments, or a group without a verb (` + "`firelock sale`" + `), prints the usage
on stderr and exits 2.

**Completion.** ` + "`firelock completion bash|zsh|fish|powershell`" + ` prints a completion script
(cobra's): ` + "`source <(bin/firelock completion bash)`" + `.

`

// genDocs writes docs/cli.md: the header, then every command's help.
func genDocs(root *cobra.Command, w io.Writer) error {
	root.DisableAutoGenTag = true
	var buf bytes.Buffer
	buf.WriteString(docsHeader)
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c != root || c.IsAdditionalHelpTopicCommand() {
			return nil
		}
		if err := doc.GenMarkdownCustom(c, &buf, func(name string) string {
			return "#" + strings.ReplaceAll(strings.TrimSuffix(name, ".md"), "_", "-")
		}); err != nil {
			return err
		}
		buf.WriteString("\n")
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return err
	}
	_, err := w.Write(bytes.TrimRight(buf.Bytes(), "\n"))
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	return err
}

func (a *app) gendocsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gendocs [FILE]",
		Short:  "Writes docs/cli.md from the commands (go generate ./cmd/firelock)",
		Hidden: true,
		Args:   positional(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var buf bytes.Buffer
			if err := genDocs(cmd.Root(), &buf); err != nil {
				return refusal{err}
			}
			if len(args) == 0 {
				_, err := a.stdout.Write(buf.Bytes())
				return err
			}
			if err := os.WriteFile(args[0], buf.Bytes(), 0o644); err != nil {
				return refusal{err}
			}
			fmt.Fprintf(a.stderr, "wrote %s\n", args[0])
			return nil
		},
	}
}
