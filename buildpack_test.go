package firelock

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	"github.com/firelock/firelock/internal/emulators"
)

// The Go buildpack builds the module root: it must be one package (test
// files included), build and vet cleanly, and its imports must register
// every function.
func TestRootIsOnePackageThatBuildsAndVets(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		ast, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		if ast.Name.Name != "firelock" {
			t.Errorf("%s is package %s: the root must hold package firelock only", f, ast.Name.Name)
		}
	}
	for _, args := range [][]string{{"build", "."}, {"vet", "."}} {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Each entry point, served the way Cloud Functions serves it (the
// Functions Framework with FUNCTION_TARGET, the function at "/"), answers as
// that function: the root's imports registered it.
func TestRootRegistersEveryFunction(t *testing.T) {
	t.Setenv("FUNCTION_TARGET", "")
	for _, c := range []struct {
		target string
		check  func(*http.Response) error
	}{
		{"BookSeats", wantContractError},
		{"CancelBooking", wantContractError},
		{"JoinQueue", wantContractError},
		{"OperateSale", wantContractError},
		{"RunScheduledJob", func(r *http.Response) error {
			if r.StatusCode == http.StatusNotFound {
				return fmt.Errorf("HTTP 404")
			}
			return nil
		}},
	} {
		t.Run(c.target, func(t *testing.T) {
			os.Setenv("FUNCTION_TARGET", c.target)
			port, err := emulators.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			go funcframework.StartHostPort("127.0.0.1", fmt.Sprint(port)) // lives until the test binary exits
			emulators.WaitListening(t, port)
			os.Setenv("FUNCTION_TARGET", "")
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if err := c.check(resp); err != nil {
				t.Fatalf("%s at /: %v", c.target, err)
			}
		})
	}
}

// wantContractError: a GET gets the contract's JSON error (405, or 500 when
// the function cannot reach its services here), proof that our handler ran.
func wantContractError(r *http.Response) error {
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Error.Code == "" {
		return fmt.Errorf("HTTP %d without the contract's error body (%v)", r.StatusCode, err)
	}
	return nil
}
