package appchecklocal

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// JWKSPath is where Serve serves the issuer's key set.
const JWKSPath = "/jwks"

// Server serves an Issuer's key set on a loopback port of its own.
type Server struct {
	URL     string // http://127.0.0.1:port
	JWKSURL string // URL + JWKSPath: FIRELOCK_APPCHECK_JWKS_URL
	srv     *http.Server
}

// Serve serves the key set at JWKSPath, and mux's other routes (nil: none),
// until Close. name prefixes what the server reports on stderr.
func (is *Issuer) Serve(name string, mux *http.ServeMux) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: App Check stand-in: %w", name, err)
	}
	if mux == nil {
		mux = http.NewServeMux()
	}
	mux.HandleFunc("GET "+JWKSPath, is.ServeJWKS)
	s := &Server{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	s.JWKSURL = s.URL + JWKSPath
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "%s: App Check stand-in: %v\n", name, err)
		}
	}()
	return s, nil
}

// Close stops the server; nil is harmless.
func (s *Server) Close() {
	if s != nil {
		s.srv.Close()
	}
}
