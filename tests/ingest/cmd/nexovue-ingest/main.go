// Command nexovue-ingest runs the nexovue ingest double on a local port: it
// takes OTLP/HTTP profiles on /v1development/profiles exactly as the
// documented nexovue ingest does (key, index checks, frame and rate limits),
// serves what it received as JSON on /stats, and every -print-top interval
// prints a table of the busiest services and their hottest functions.
//
//	nexovue-ingest -listen 127.0.0.1:4319 -print-top 10s
//
// With -key empty, any non-empty x-nexovue-key is accepted (a missing key is
// still answered 401), so a Collector can be tried before one has a key.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nexovue-ingest:", err)
		os.Exit(1)
	}
}

// run parses args, serves until ctx is done and prints to stdout.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("nexovue-ingest", flag.ContinueOnError)
	fs.SetOutput(stdout)
	listen := fs.String("listen", "127.0.0.1:4319", "address to listen on")
	keys := fs.String("key", "", "comma-separated valid x-nexovue-key values; empty accepts any non-empty key")
	sps := fs.Int64("samples-per-second", ingest.DefaultSamplesPerSecond, "samples each key may send in any one-second window (429 above)")
	maxFrames := fs.Int64("max-frames", ingest.DefaultMaxFrames, "frames one request's stacks may write out to (413 above)")
	retryAfter := fs.Duration("retry-after", ingest.DefaultRetryAfter, "Retry-After announced with a 429 (sent in whole seconds, rounded up)")
	httpDate := fs.Bool("retry-after-http-date", false, "send Retry-After as an HTTP-date instead of delay-seconds")
	printTop := fs.Duration("print-top", 10*time.Second, "print the busiest services this often (0: never)")
	topServices := fs.Int("top-services", 10, "services listed per table")
	topFunctions := fs.Int("top-functions", 5, "hottest functions listed per service")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *sps <= 0:
		return fmt.Errorf("-samples-per-second must be positive, got %d", *sps)
	case *maxFrames <= 0:
		return fmt.Errorf("-max-frames must be positive, got %d", *maxFrames)
	case *retryAfter <= 0:
		return fmt.Errorf("-retry-after must be positive, got %s", *retryAfter)
	case *printTop < 0:
		return fmt.Errorf("-print-top must not be negative, got %s", *printTop)
	case *topServices <= 0 || *topFunctions < 0:
		return fmt.Errorf("-top-services must be positive and -top-functions not negative")
	}
	var keyList []string
	for k := range strings.SplitSeq(*keys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keyList = append(keyList, k)
		}
	}

	srv := ingest.New(ingest.Config{
		Addr:               *listen,
		Keys:               keyList,
		SamplesPerSecond:   *sps,
		MaxFrames:          *maxFrames,
		RetryAfter:         *retryAfter,
		RetryAfterHTTPDate: *httpDate,
	})
	if err := srv.Start(); err != nil {
		return err
	}
	defer srv.Close()

	accepts := "any non-empty x-nexovue-key"
	if len(keyList) > 0 {
		accepts = fmt.Sprintf("%d configured key(s)", len(keyList)) // never the keys themselves
	}
	fmt.Fprintf(stdout, "nexovue-ingest: listening on %s (profiles: %s, stats: %s); accepting %s; limits: %d samples/s per key, %d frames per request\n",
		srv.URL(), srv.Endpoint(), srv.URL()+ingest.StatsPath, accepts, *sps, *maxFrames)

	var tick <-chan time.Time
	if *printTop > 0 {
		t := time.NewTicker(*printTop)
		defer t.Stop()
		tick = t.C
		srv.TakeWindow() // the first window starts now
	}
	for {
		select {
		case <-ctx.Done():
			st := srv.Stats()
			fmt.Fprintf(stdout, "nexovue-ingest: stopped; accepted %d samples in %d requests, %d of them linked to a span\n", st.SamplesAccepted, st.AcceptedRequests, st.SamplesLinked)
			return nil
		case <-tick:
			if err := ingest.WriteTop(stdout, srv.TakeWindow(), *topServices, *topFunctions); err != nil {
				return fmt.Errorf("print table: %w", err)
			}
		}
	}
}
