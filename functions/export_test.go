package functions

import (
	"context"

	"firebase.google.com/go/v4/auth"
)

// For the tests of package functions_test.
var (
	ExportMetrics = exportMetrics
	ExportGap     = exportGap
)

// DeployedAPI builds the API as a deployed function builds it: from the
// environment alone.
func DeployedAPI() (*API, error) { return deployed.build() }

// AdminAuth is the Admin SDK's Auth client behind a's users.
func AdminAuth(a *API) *auth.Client {
	switch u := a.Auth.(type) {
	case emulatorUsers:
		return u.Client
	case *auth.Client:
		return u
	}
	return nil
}

// VerifyAppCheck judges token as the guarded functions do.
func VerifyAppCheck(ctx context.Context, c *AppCheck, token string) error {
	return c.verify(ctx, token)
}
