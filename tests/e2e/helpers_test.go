// Package e2e runs the built otelcol-nexovue binary against the strict
// ingest double (tests/ingest): naming with real eBPF, throttling, frame
// limits, outages, restarts with a persistent queue, refused keys and
// formats, and the pprof receiver. Every test prints one figures line:
//
//	e2e <name>: sent=… arrived=… duplicates=… early_retries=… 413=… requests=… wall=…
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// writeFile writes content to dir/name and returns the path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// figures prints the test's one figures line when it ends, pass or fail.
// sent < 0 means the test did not count what it sent (eBPF, pprof).
func figures(t *testing.T, name string, srv *ingest.Server, sent *int64) {
	t.Helper()
	start := time.Now()
	t.Cleanup(func() {
		st := srv.Stats()
		requests := st.Dropped + sumStatuses(st.RequestsByStatus)
		s := "n/a"
		if *sent >= 0 {
			s = strconv.FormatInt(*sent, 10)
		}
		if t.Failed() {
			logRecent(t, st.Recent)
		}
		t.Logf("e2e %s: sent=%s arrived=%d duplicates=%d early_retries=%d 413=%d requests=%d wall=%s",
			name, s, st.SamplesAccepted, st.Seq.Duplicates, st.EarlyRetries,
			st.RequestsByStatus[http.StatusRequestEntityTooLarge], requests, time.Since(start).Round(100*time.Millisecond))
		if f := testenv.FailureSummary(t); f != "" {
			t.Logf("failed (the whole message is above, before the cleanups' logs): %s", f)
		}
	})
}

// logRecent writes the double's recent requests to the log of a failed test.
func logRecent(t *testing.T, recent []ingest.RequestInfo) {
	t.Helper()
	var b strings.Builder
	for _, r := range recent {
		fmt.Fprintf(&b, "  %s status=%d samples=%d frames=%d early=%v %s\n",
			r.Time.Format("15:04:05.000"), r.Status, r.Samples, r.Frames, r.EarlyRetry, r.Reason)
	}
	testenv.LogToArtifact(t, "requests at the double, oldest first", "ingest-requests.log", b.String())
}

// otlpPipeline is the collector of the delivery tests: the OTLP receiver on
// a loopback port, service_name, frame_limit and the nexovue exporter with
// its default settings except those below. The key comes from NEXOVUE_KEY.
type otlpPipeline struct {
	Port     int    // OTLP/HTTP receiver port
	Endpoint string // the double's URL
	// RateLimit is rate_limit.samples_per_second (0: pacing off).
	RateLimit int
	// StorageDir, when set, puts the sending queue on disk (file_storage).
	StorageDir string
	// QueueDir, when set, puts the sending queue on disk with the shipped
	// configurations' queue_storage extension, bounded at QueueMaxMiB
	// (0: its default).
	QueueDir    string
	QueueMaxMiB int
	// Consumers, when set, is sending_queue.num_consumers (default 10).
	Consumers int
	// Headers are added to every request the exporter sends.
	Headers map[string]string
	// Routes, when set, are the exporter's routing rules, one per
	// namespace (k8s.namespace.name), in order; NEXOVUE_KEY stays the
	// default key.
	Routes []namespaceRoute
}

// namespaceRoute is a routing rule of otlpPipeline: the resources of
// namespace go under the rule name with the key in the environment
// variable keyEnv.
type namespaceRoute struct {
	name, namespace, keyEnv string
}

func (o otlpPipeline) write(t *testing.T, dir string) string {
	t.Helper()
	var ext, extList, queue string
	if o.StorageDir != "" {
		ext = fmt.Sprintf("extensions:\n  file_storage:\n    directory: %s\n    create_directory: true\n", o.StorageDir)
		extList = "  extensions: [file_storage]\n"
		queue = "      storage: file_storage\n"
	}
	if o.QueueDir != "" {
		ext = fmt.Sprintf("extensions:\n  queue_storage:\n    directory: %s\n", o.QueueDir)
		if o.QueueMaxMiB > 0 {
			ext += fmt.Sprintf("    max_size_mib: %d\n", o.QueueMaxMiB)
		}
		extList = "  extensions: [queue_storage]\n"
		queue = "      storage: queue_storage\n"
	}
	if o.Consumers > 0 {
		queue += fmt.Sprintf("      num_consumers: %d\n", o.Consumers)
	}
	if queue != "" {
		queue = "    sending_queue:\n" + queue
	}
	if len(o.Headers) > 0 {
		queue += "    headers:\n"
		for k, v := range o.Headers {
			queue += fmt.Sprintf("      %s: %s\n", k, v)
		}
	}
	if len(o.Routes) > 0 {
		queue += "    routing:\n      rules:\n"
		for _, r := range o.Routes {
			queue += fmt.Sprintf("        - name: %s\n          attribute: k8s.namespace.name\n          values: [%s]\n          key: ${env:%s}\n", r.name, r.namespace, r.keyEnv)
		}
	}
	return writeFile(t, dir, "collector.yaml", fmt.Sprintf(`%s
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  service_name: {}
  frame_limit:
    max_frames: 1000000
exporters:
  nexovue:
    endpoint: %s
    key: ${env:NEXOVUE_KEY}
%s    retry_on_failure:
      enabled: true
      initial_interval: 100ms
      max_interval: 1s
      max_elapsed_time: 2m
    rate_limit:
      samples_per_second: %d
service:
%s  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      processors: [service_name, frame_limit]
      exporters: [nexovue]
`, ext, o.Port, o.Endpoint, queue, o.RateLimit, extList))
}

// loadgen sends eBPF-like batches (profilegen) with unique seq sample
// attributes to the collector's OTLP/HTTP receiver.
type loadgen struct {
	url    string
	client *http.Client
	next   int64 // the next seq
}

func newLoadgen(port int) *loadgen {
	return &loadgen{
		url:    fmt.Sprintf("http://127.0.0.1:%d/v1development/profiles", port),
		client: &http.Client{Timeout: 30 * time.Second},
	}
}

// batch generates samples samples of depth frames each, numbered from the
// next seq on.
func (l *loadgen) batch(samples, depth int) pprofile.Profiles {
	pd := profilegen.Generate(profilegen.Config{Samples: samples, Depth: depth, Seq: true, Seed: uint64(l.next) + 1})
	offsetSeq(pd, l.next)
	l.next += int64(samples)
	return pd
}

// offsetSeq adds base to every seq attribute of pd's dictionary.
func offsetSeq(pd pprofile.Profiles, base int64) {
	dict := pd.Dictionary()
	for _, a := range dict.AttributeTable().All() {
		if dict.StringTable().At(int(a.KeyStrindex())) == profilegen.SeqKey && a.Value().Type() == pcommon.ValueTypeInt {
			a.Value().SetInt(a.Value().Int() + base)
		}
	}
}

// post sends pd and returns the receiver's status code.
func (l *loadgen) post(ctx context.Context, pd pprofile.Profiles) (int, error) {
	body, err := pprofileotlp.NewExportRequestFromProfiles(pd).MarshalProto()
	if err != nil {
		return 0, err
	}
	return l.postBody(ctx, body)
}

// postBody sends an encoded request and returns the receiver's status code.
func (l *loadgen) postBody(ctx context.Context, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// send generates and posts n batches of per samples (depth frames each) and
// fails the test unless the collector accepts every one. It returns the
// samples sent.
func (l *loadgen) send(t *testing.T, n, per, depth int) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range n {
		code, err := l.post(ctx, l.batch(per, depth))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "the collector's OTLP receiver refused a batch")
	}
	return int64(n * per)
}

// waitAllSeq waits until every seq in [0, n) arrived at the double.
func waitAllSeq(t *testing.T, srv *ingest.Server, n int64, d time.Duration) {
	t.Helper()
	testenv.WaitFor(t, d, fmt.Sprintf("all %d seq values at the double", n), func() (bool, error) {
		return int64(srv.Seq().Distinct) >= n, nil
	})
	require.Empty(t, srv.MissingSeq(n), "seq values missing at the double")
}

// collectorEnv is the environment of a collector sending with key.
func collectorEnv(key string) []string {
	return []string{"NEXOVUE_KEY=" + key}
}

// countLines returns the lines of out that contain every one of parts.
func countLines(out string, parts ...string) int {
	n := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
next:
	for sc.Scan() {
		for _, p := range parts {
			if !strings.Contains(sc.Text(), p) {
				continue next
			}
		}
		n++
	}
	return n
}

// startAgent starts the shipped agent config (real eBPF profiler, through
// testenv.StartCollector) sending to srv with testKey, plus an overlay: a 2 s
// reporter interval and a file exporter next to the nexovue one, and extra
// (further top-level YAML of the overlay, such as a processors section). It
// returns the file exporter's path (JSON lines) and the collector.
func startAgent(t *testing.T, srv *ingest.Server, extra ...string) (string, *testenv.Process) {
	t.Helper()
	return startAgentWith(t, srv, nil, extra...)
}

// startAgentWith is startAgent with the collector run through wrap
// (testenv.CollectorOptions.Wrap; nil: directly).
func startAgentWith(t testing.TB, srv *ingest.Server, wrap []string, extra ...string) (string, *testenv.Process) {
	t.Helper()
	return startAgentEvery(t, srv, wrap, "2s", extra...)
}

// startAgentEvery is startAgentWith with the receiver's reporter_interval
// set to interval.
func startAgentEvery(t testing.TB, srv *ingest.Server, wrap []string, interval string, extra ...string) (string, *testenv.Process) {
	t.Helper()
	return startAgentReceiving(t, srv, wrap, fmt.Sprintf("reporter_interval: %s", interval), extra...)
}

// startAgentReceiving is startAgentWith with the receiver's settings in the
// overlay set to receiver (YAML lines, indented by it at the receiver's
// level).
func startAgentReceiving(t testing.TB, srv *ingest.Server, wrap []string, receiver string, extra ...string) (string, *testenv.Process) {
	t.Helper()
	dir := t.TempDir()
	sinkPath := filepath.Join(dir, "profiles.jsonl")
	overlay := writeFile(t, dir, "overlay.yaml", fmt.Sprintf(`
receivers:
  profiling:
    %s
exporters:
  file/e2e:
    path: %s
service:
  pipelines:
    profiles:
      exporters: [nexovue, file/e2e]
`, strings.ReplaceAll(receiver, "\n", "\n    "), sinkPath)+strings.Join(extra, "\n"))
	env := agentEnv(t, srv.URL(), dir)
	agent := filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "agent.yaml")
	p := startEBPFCollector(t, agent, testenv.CollectorOptions{
		Env: env, Args: []string{"--config", overlay, testenv.FeatureGate}, Wrap: wrap,
	})
	return sinkPath, p
}

// ebpfStarts lets one collector with the eBPF profiler start at a time in
// this process: its start-up (loading and verifying the profiler's eBPF
// programs) is what takes the CPU, and on 2026-12-04 several started at
// once by tests running in parallel on a loaded machine took more than a
// minute each; one at a time they took 2 to 40 s.
var ebpfStarts sync.Mutex

// ebpfReadyWithin bounds the start-up of one such collector.
const ebpfReadyWithin = 3 * time.Minute

// startEBPFCollector is testenv.StartCollector for a config with the eBPF
// profiler (opts.EBPF is set), once no other such collector of this
// process is starting.
func startEBPFCollector(t testing.TB, config string, opts testenv.CollectorOptions) *testenv.Process {
	t.Helper()
	p, _ := startEBPFCollectorTimed(t, config, opts)
	return p
}

// startEBPFCollectorTimed is startEBPFCollector, and returns how long the
// collector took to be ready (not counting the wait for the others).
func startEBPFCollectorTimed(t testing.TB, config string, opts testenv.CollectorOptions) (*testenv.Process, time.Duration) {
	t.Helper()
	opts.EBPF, opts.ReadyWithin = true, ebpfReadyWithin
	ebpfStarts.Lock()
	defer ebpfStarts.Unlock() // also when the start fails the test (runtime.Goexit)
	start := time.Now()
	p := testenv.StartCollector(t, config, opts)
	return p, time.Since(start)
}
