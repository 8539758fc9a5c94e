// Package firelock is the root of the firelock bundle: Cloud Functions for Go
// builds this package, so it stays a small library package whose imports
// register every function (BookSeats, CancelBooking). The code lives in
// lock/, booking/, counter/ and functions/.
package firelock

import (
	// The Go buildpack looks for the Functions Framework among the root's
	// dependencies; functions/ registers the functions in its init.
	_ "github.com/GoogleCloudPlatform/functions-framework-go/functions"
	_ "github.com/firelock/firelock/functions"
)
