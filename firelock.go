// Package firelock is the root of the firelock bundle: Cloud Functions for Go
// builds this package, so it stays a small library package whose imports
// register every function. The code lives in lock/, booking/, counter/ and
// functions/.
package firelock
