package functions_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/firelock/firelock/functions"
	"github.com/firelock/firelock/internal/emulators"
	"github.com/golang-jwt/jwt/v4"
)

// A deployed function learns its project from GOOGLE_CLOUD_PROJECT
// (deploy.sh sets it: Cloud Run sets no project variable for newer
// runtimes), or else from the runtime's credentials, and hands it to the
// Admin SDK: the ID tokens' audience and App Check's are checked against
// it. It never hands the SDK a placeholder (issue #53: the functions
// passed "*detect-project-id*", and every signed-in call was refused).
// Each case builds the API as a deployed function does, from the
// environment alone, and checks a token of the project through the SDK's
// own verifiers (the Auth emulator issues tokens for
// emulators.AuthProject).
func TestDeployedAdminSDKTakesTheRealProject(t *testing.T) {
	k := serveAppCheckKeys(t)
	for _, c := range []struct {
		name  string
		env   string // GOOGLE_CLOUD_PROJECT
		creds string // the project of the credentials file; "": none
	}{
		{"from GOOGLE_CLOUD_PROJECT", emulators.AuthProject, ""},
		{"from the credentials", "", emulators.AuthProject},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []string{"GCLOUD_PROJECT", "GCP_PROJECT"} {
				t.Setenv(v, "")
			}
			t.Setenv("GOOGLE_CLOUD_PROJECT", c.env)
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
			if c.creds != "" {
				t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", serviceAccountFile(t, c.creds))
			}
			t.Setenv(functions.AppCheckEnv, functions.AppCheckEnforce)
			t.Setenv(functions.AppCheckAppsEnv, "")
			api, err := functions.DeployedAPI()
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if api.Project != emulators.AuthProject {
				t.Errorf("the API's project is %q, want %q", api.Project, emulators.AuthProject)
			}
			if _, err := functions.AdminAuth(api).VerifyIDToken(ctx, token(t, "project-check")); err != nil {
				t.Errorf("the Admin SDK refused an ID token of %s: %v", emulators.AuthProject, err)
			}
			if err := functions.VerifyAppCheck(ctx, api.AppCheck, k.sign(t, validClaims(nil))); err != nil {
				t.Errorf("App Check refused a token of %s: %v", emulators.AuthProject, err)
			}
			// The same checks refuse another project's tokens: they do look.
			other := k.sign(t, validClaims(func(c jwt.MapClaims) { c["aud"] = []string{"projects/987654321", "projects/someone-else"} }))
			if err := functions.VerifyAppCheck(ctx, api.AppCheck, other); err == nil {
				t.Error("App Check took a token of another project")
			}
		})
	}
}

// Without a project in the environment, ProjectID says so (""), and the
// clients take the credentials' project: no placeholder ever goes on.
func TestProjectIDIsEmptyWhenTheEnvironmentNamesNone(t *testing.T) {
	for _, v := range []string{"GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GCP_PROJECT"} {
		t.Setenv(v, "")
	}
	if p := functions.ProjectID(); p != "" {
		t.Fatalf("ProjectID() = %q with no project in the environment, want \"\"", p)
	}
	t.Setenv("GCP_PROJECT", "p-legacy")
	if p := functions.ProjectID(); p != "p-legacy" {
		t.Fatalf("ProjectID() = %q, want GCP_PROJECT's p-legacy", p)
	}
	t.Setenv("GOOGLE_CLOUD_PROJECT", "p-new")
	if p := functions.ProjectID(); p != "p-new" {
		t.Fatalf("ProjectID() = %q, want GOOGLE_CLOUD_PROJECT's p-new first", p)
	}
}

// serviceAccountFile writes a service account key file of project (a fresh
// key no one knows; nothing here signs in with it) and returns its path.
func serviceAccountFile(t *testing.T, project string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     project,
		"private_key_id": "0123456789abcdef",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   "firelock-runtime@" + project + ".iam.gserviceaccount.com",
		"client_id":      "1",
		"token_uri":      "https://oauth2.googleapis.com/token",
	})
	path := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
