// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

// spanburn is the Go service of the span link tests: instrumented with the
// OpenTelemetry Go SDK and otel-profiling-go (all-spans scope), it burns CPU
// in one hot function on one locked OS thread, outside any span until it
// receives SIGUSR1, then outside again, inside span A, inside span B (a
// child of A) and inside a new root span C, each phase for -phase, and then
// outside any span until it receives SIGUSR2: the test stops it once the
// samples it waits for have arrived, however little CPU the thread got (a
// last phase of fixed length could pass without a sample on a loaded
// host). An in-process span recorder writes each span's trace ID, span ID,
// parent, start and end to -spans as JSON lines; "done" follows the last
// span, at the start of the last phase. It serves net/http/pprof on -listen
// throughout, and runs until killed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	otelpyroscope "github.com/grafana/otel-profiling-go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// spanRecord is one line of the -spans file.
type spanRecord struct {
	Name          string `json:"name"`
	TraceID       string `json:"trace_id"`
	SpanID        string `json:"span_id"`
	ParentSpanID  string `json:"parent_span_id,omitempty"`
	StartUnixNano int64  `json:"start_unix_nano"`
	EndUnixNano   int64  `json:"end_unix_nano"`
	TID           int    `json:"tid"`
}

// recorder is a SpanProcessor that writes every ended span to a file.
type recorder struct {
	mu  sync.Mutex
	enc *json.Encoder
	f   *os.File
	tid int
}

func (r *recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r *recorder) OnEnd(s sdktrace.ReadOnlySpan) {
	rec := spanRecord{
		Name:          s.Name(),
		TraceID:       s.SpanContext().TraceID().String(),
		SpanID:        s.SpanContext().SpanID().String(),
		StartUnixNano: s.StartTime().UnixNano(),
		EndUnixNano:   s.EndTime().UnixNano(),
		TID:           r.tid,
	}
	if s.Parent().IsValid() {
		rec.ParentSpanID = s.Parent().SpanID().String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.enc.Encode(rec); err != nil {
		log.Fatal(err)
	}
}
func (r *recorder) Shutdown(context.Context) error   { return nil }
func (r *recorder) ForceFlush(context.Context) error { return nil }

var sink uint64

// hot is the one function every phase burns CPU in.
//
//go:noinline
func hot(n int) uint64 {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// burn runs hot while more says so.
//
//go:noinline
func burn(more func() bool) {
	for more() {
		sink += hot(20_000)
	}
}

// until is burn's condition for a phase that ends at t.
func until(t time.Time) func() bool {
	return func() bool { return time.Now().Before(t) }
}

// untilSignal is burn's condition for a phase that ends when a signal
// arrives on c.
func untilSignal(c <-chan os.Signal) func() bool {
	return func() bool {
		select {
		case <-c:
			return false
		default:
			return true
		}
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:6060", "net/http/pprof address")
	spansPath := flag.String("spans", "spans.jsonl", "where the recorded spans go")
	phase := flag.Duration("phase", 3*time.Second, "how long each phase burns")
	flag.Parse()

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	go func() { log.Fatal(http.Serve(ln, nil)) }()

	f, err := os.Create(*spansPath)
	if err != nil {
		log.Fatal(err)
	}
	rec := &recorder{enc: json.NewEncoder(f), f: f}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	tp := otelpyroscope.NewTracerProvider(sdk, otelpyroscope.WithSpanIDLabelScope(otelpyroscope.ScopeAllSpans))
	tracer := tp.Tracer("spanburn")

	start := make(chan os.Signal, 1)
	signal.Notify(start, syscall.SIGUSR1)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGUSR2)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		rec.tid = syscall.Gettid()
		log.Printf("spanburn: burning on thread %d, pprof on %s", rec.tid, ln.Addr())
		// Outside any span until the test says go.
		burn(untilSignal(start))
		ctx := context.Background()
		var spans []trace.Span
		endSpans := func() {
			for i := len(spans) - 1; i >= 0; i-- {
				spans[i].End()
			}
			spans = spans[:0]
		}
		steps := []string{"", "A", "B", "C", ""}
		for i, step := range steps {
			switch step {
			case "A", "C":
				endSpans()
				var s trace.Span
				ctx, s = tracer.Start(context.Background(), step, trace.WithNewRoot())
				spans = append(spans, s)
			case "B":
				var s trace.Span
				ctx, s = tracer.Start(ctx, step)
				spans = append(spans, s)
			default:
				endSpans()
			}
			more := until(time.Now().Add(*phase))
			if i == len(steps)-1 {
				// The spans are all recorded: outside any span until the
				// test has its samples.
				rec.mu.Lock()
				_, err := f.WriteString("done\n")
				rec.mu.Unlock()
				if err != nil {
					log.Fatal(err)
				}
				log.Print("spanburn: spans done; burning outside them until SIGUSR2")
				more = untilSignal(stop)
			}
			// The same call site of burn in every phase: one stack for all.
			burn(more)
		}
		_ = ctx
		log.Print("spanburn: stopped")
		close(done)
	}()
	<-done
	select {} // keep serving pprof until killed
}
