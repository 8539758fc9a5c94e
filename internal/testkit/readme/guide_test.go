package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's guide (Use it in your own functions) shows the code that
// examples/ runs: each ```go block after a <!-- guide: FILE#NAME --> note
// is, line for line, the region of examples/FILE between "// guide:NAME"
// and "// guide:end", and every region is shown. So the snippets a new
// user copies are the ones make test runs against the emulator.
func TestREADMEGoSnippetsAreTheGuide(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]string{} // FILE#NAME -> the README's block
	note := regexp.MustCompile("(?m)^<!-- guide: (\\S+) -->\n```go\n((?s:.*?))```\n")
	for _, m := range note.FindAllStringSubmatch(string(readme), -1) {
		shown[m[1]] = strings.TrimRight(m[2], "\n")
	}
	if len(shown) == 0 {
		t.Fatal("the README shows no guide snippet (<!-- guide: FILE#NAME --> before a ```go block)")
	}
	regions := map[string]string{}
	files, err := filepath.Glob(filepath.Join(root, "examples", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	region := regexp.MustCompile(`(?ms)^// guide:(\w+)\n(.*?)\n// guide:end$`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range region.FindAllStringSubmatch(string(b), -1) {
			regions["examples/"+filepath.Base(f)+"#"+m[1]] = strings.Trim(m[2], "\n")
		}
	}
	for _, key := range slices.Sorted(mapKeys(regions)) {
		got, ok := shown[key]
		switch {
		case !ok:
			t.Errorf("%s is not shown in the README (<!-- guide: %s --> before a ```go block)", key, key)
		case got != regions[key]:
			t.Errorf("the README's snippet of %s differs from the code make test runs:\n%s", key, diff(got, regions[key]))
		}
	}
	for key := range shown {
		if _, ok := regions[key]; !ok {
			t.Errorf("the README shows %s, which has no such region", key)
		}
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// diff names the first line that differs.
func diff(readme, code string) string {
	a, b := strings.Split(readme, "\n"), strings.Split(code, "\n")
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  README:   %q\n  examples: %q", i+1, x, y)
		}
	}
	return "(same lines)"
}
