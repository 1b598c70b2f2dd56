package ingest // import "github.com/nexovue/otelcol-nexovue/tests/ingest"

import "testing"

// StartForTest starts a double with cfg and closes it when the test ends.
func StartForTest(t testing.TB, cfg Config) *Server {
	t.Helper()
	srv := New(cfg)
	if err := srv.Start(); err != nil {
		t.Fatalf("start the ingest double: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv
}
