package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// The tests of a full storage filesystem (issue 39): the collector's
// sending queue on the shipped queue_storage extension, in a small tmpfs
// each test mounts (as root) and unmounts when it ends, however it ends.

// fullMessage is queue_storage's line while it refuses writes
// (extension/queuestorageextension.FullMessage).
const fullMessage = "queue_storage is full"

// mountTmpfs mounts a tmpfs of sizeKiB on a new directory and returns it;
// it is unmounted (lazily, so that a process still holding a file does not
// keep it mounted) when the test ends.
func mountTmpfs(t *testing.T, sizeKiB int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dk,mode=0750", sizeKiB), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("these tests need to mount a tmpfs (run them as root): mount -t tmpfs %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount -l %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillFS writes a file at path until its filesystem is full and returns
// its size.
func fillFS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			return n
		}
		require.NoError(t, err)
	}
}

// offers is what a test sent and how the collector answered each batch.
type offers struct {
	accepted, refused []seqRange
	statuses          map[int]int
}

type seqRange struct{ from, to int64 } // [from, to)

func (o *offers) count(rs []seqRange) int64 {
	var n int64
	for _, r := range rs {
		n += r.to - r.from
	}
	return n
}

// offer sends n batches of per samples and records each answer: 200
// accepted, anything else refused. It fails the test on a transport error
// (the collector must keep answering).
func (o *offers) offer(t *testing.T, lg *loadgen, n, per int) (accepted, refused int) {
	t.Helper()
	if o.statuses == nil {
		o.statuses = map[int]int{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range n {
		from := lg.next
		code, err := lg.post(ctx, lg.batch(per, 16))
		require.NoError(t, err, "the collector must answer every batch")
		o.statuses[code]++
		r := seqRange{from, lg.next}
		if code == http.StatusOK {
			o.accepted = append(o.accepted, r)
			accepted++
		} else {
			o.refused = append(o.refused, r)
			refused++
		}
	}
	return accepted, refused
}

// requireExactlyAccepted waits until every accepted seq arrived at srv,
// then checks that none arrived twice and none of the refused did; it
// returns how long the wait took.
func (o *offers) requireExactlyAccepted(t *testing.T, srv *ingest.Server, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	want := o.count(o.accepted)
	testenv.WaitFor(t, d, fmt.Sprintf("the %d accepted samples at the double", want), func() (bool, error) {
		return int64(srv.Seq().Distinct) >= want, nil
	})
	took := time.Since(start)
	var end int64
	for _, r := range append(append([]seqRange(nil), o.accepted...), o.refused...) {
		end = max(end, r.to)
	}
	missing := map[int64]bool{}
	for _, s := range srv.MissingSeq(end) {
		missing[s] = true
	}
	for _, r := range o.accepted {
		for s := r.from; s < r.to; s++ {
			require.False(t, missing[s], "seq %d was accepted (200) and never arrived", s)
		}
	}
	for _, r := range o.refused {
		for s := r.from; s < r.to; s++ {
			require.True(t, missing[s], "seq %d was refused and arrived anyway", s)
		}
	}
	for _, r := range srv.RecentRequests() {
		require.Positive(t, r.Samples, "a request without samples reached the ingest (%s): the queue's refused writes must not become requests", r.Time.Format(time.RFC3339Nano))
	}
	st := srv.Stats()
	require.Zero(t, st.Seq.Duplicates, "no sample may arrive twice")
	require.Equal(t, want, st.SamplesAccepted)
	for code, n := range o.statuses {
		require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable, http.StatusTooManyRequests}, code,
			"%d batches were answered %d: a refusal must be retryable", n, code)
	}
	return took
}

// requireRunning fails the test if the collector has exited.
func requireRunning(t *testing.T, p *testenv.Process) {
	t.Helper()
	exited, err := p.Exited()
	require.False(t, exited, "the collector exited: %v", err)
}

// fullDiskFigures logs the case's figures line when the test ends.
func fullDiskFigures(t *testing.T, name string, o *offers, srv *ingest.Server, drain *time.Duration) {
	t.Helper()
	t.Cleanup(func() {
		st := srv.Stats()
		t.Logf("e2e %s: accepted=%d delivered=%d duplicated=%d refused=%d statuses=%v drain=%s ingest_requests=%v",
			name, o.count(o.accepted), st.SamplesAccepted, st.Seq.Duplicates, o.count(o.refused), o.statuses, drain.Round(100*time.Millisecond), st.RequestsByStatus)
	})
}

// downIngest returns the ingest double, not started yet, on a port of its
// own.
func downIngest(t *testing.T) (*ingest.Server, string) {
	t.Helper()
	port := testenv.FreePort(t)
	srv := ingest.New(ingest.Config{Addr: fmt.Sprintf("127.0.0.1:%d", port), Keys: []string{testKey}})
	t.Cleanup(srv.Close)
	return srv, fmt.Sprintf("http://127.0.0.1:%d", port)
}

// TestFullDiskQueueRefusesThenDelivers: the queue's storage on a 4 MiB
// tmpfs, the ingest down, more samples offered than fit: the collector
// answers 200 while they fit and 503 after, warns at start that its bound
// is above the free space, and logs that it is full; once the ingest is
// back, every sample answered 200 arrives, once, and none refused does;
// then it accepts again.
func TestFullDiskQueueRefusesThenDelivers(t *testing.T) {
	t.Parallel() // see main_test.go
	dir := mountTmpfs(t, 4096)
	srv, url := downIngest(t)
	var o offers
	var drain time.Duration
	fullDiskFigures(t, "fulldisk-refuse", &o, srv, &drain)
	p, lg := startPipeline(t, otlpPipeline{Endpoint: url, RateLimit: ingest.DefaultSamplesPerSecond, QueueDir: dir, QueueMaxMiB: 64})
	require.Equal(t, 1, countLines(p.Output(), "max_size_mib is larger than the free space", dir), "the start-up warning naming the directory")

	o.offer(t, lg, 120, 500) // 60,000 samples, about 3 times what 4 MiB holds
	require.NotEmpty(t, o.accepted, "the queue must take samples while they fit")
	require.NotEmpty(t, o.refused, "the test must offer more than the tmpfs holds")
	require.Equal(t, 1, countLines(p.Output(), fullMessage, dir), "one full line (a minute) naming the directory")
	requireRunning(t, p)

	require.NoError(t, srv.Start(), "the ingest double must come back on its port")
	drain = o.requireExactlyAccepted(t, srv, 3*time.Minute)

	// Drained: the queue takes new data again, and delivers it.
	a, r := o.offer(t, lg, 10, 500)
	require.Equal(t, 10, a, "after the drain every batch must be accepted (%d refused)", r)
	o.requireExactlyAccepted(t, srv, time.Minute)
	requireRunning(t, p)
}

// TestFullDiskFilledByAnotherFile: the queue holds data when another file
// fills the tmpfs: new data is refused, what the queue holds is delivered
// once the ingest is back (deleting it frees the space it took), and after
// the file is removed new data is accepted and delivered.
func TestFullDiskFilledByAnotherFile(t *testing.T) {
	t.Parallel() // see main_test.go
	dir := mountTmpfs(t, 8192)
	srv, url := downIngest(t)
	var o offers
	var drain time.Duration
	fullDiskFigures(t, "fulldisk-other-file", &o, srv, &drain)
	p, lg := startPipeline(t, otlpPipeline{Endpoint: url, RateLimit: ingest.DefaultSamplesPerSecond, QueueDir: dir, QueueMaxMiB: 64})

	a, _ := o.offer(t, lg, 10, 500)
	require.Equal(t, 10, a, "the queue must take the first batches")
	filler := filepath.Join(dir, "filler")
	fillFS(t, filler)
	_, r := o.offer(t, lg, 10, 500)
	require.Equal(t, 10, r, "with the filesystem full every new batch must be refused")
	require.Equal(t, 1, countLines(p.Output(), fullMessage, dir))

	require.NoError(t, srv.Start(), "the ingest double must come back on its port")
	drain = o.requireExactlyAccepted(t, srv, 3*time.Minute)
	requireRunning(t, p)

	require.NoError(t, os.Remove(filler))
	a, _ = o.offer(t, lg, 10, 500)
	require.Equal(t, 10, a, "with the file removed every batch must be accepted")
	o.requireExactlyAccepted(t, srv, time.Minute)
	requireRunning(t, p)
}

// TestFullDiskRestart: a collector started on a full storage directory
// (its queue holding data, the rest of the tmpfs taken by another file)
// starts, refuses new data, sends what is queued once the ingest is back,
// and accepts again once the file is removed.
func TestFullDiskRestart(t *testing.T) {
	t.Parallel() // see main_test.go
	dir := mountTmpfs(t, 4096)
	srv, url := downIngest(t)
	var o offers
	var drain time.Duration
	fullDiskFigures(t, "fulldisk-restart", &o, srv, &drain)
	pipe := otlpPipeline{Port: testenv.FreePort(t), Endpoint: url, RateLimit: ingest.DefaultSamplesPerSecond, QueueDir: dir, QueueMaxMiB: 64}
	first, lg := startPipeline(t, pipe)
	a, _ := o.offer(t, lg, 10, 500)
	require.Equal(t, 10, a)
	first.Kill()
	filler := filepath.Join(dir, "filler")
	fillFS(t, filler)

	second, lg2 := startPipeline(t, pipe)
	lg2.next = lg.next
	_, r := o.offer(t, lg2, 5, 500)
	require.Equal(t, 5, r, "on a full filesystem every new batch must be refused")
	requireRunning(t, second)

	require.NoError(t, srv.Start(), "the ingest double must come back on its port")
	drain = o.requireExactlyAccepted(t, srv, 3*time.Minute)
	require.NoError(t, os.Remove(filler))
	a, _ = o.offer(t, lg2, 5, 500)
	require.Equal(t, 5, a, "with the file removed every batch must be accepted")
	o.requireExactlyAccepted(t, srv, time.Minute)
	requireRunning(t, second)
}

// TestQueueStorageSurvivesKills: the ingest down, the collector killed
// with SIGKILL three times while its queue (queue_storage) holds a backlog
// and its exporter retries; once the ingest is back, every sample accepted
// arrives, once.
func TestQueueStorageSurvivesKills(t *testing.T) {
	t.Parallel() // see main_test.go
	srv, url := downIngest(t)
	var o offers
	var drain time.Duration
	fullDiskFigures(t, "queue-storage-kills", &o, srv, &drain)
	pipe := otlpPipeline{Port: testenv.FreePort(t), Endpoint: url, RateLimit: ingest.DefaultSamplesPerSecond, QueueDir: t.TempDir()}
	lg := newLoadgen(pipe.Port)
	for i := range 4 {
		p, _ := startPipeline(t, pipe)
		a, _ := o.offer(t, lg, 10, 500)
		require.Equal(t, 10, a, "round %d: the queue must take every batch", i)
		if i == 3 {
			break
		}
		// The exporter took data from the queue and failed to send it:
		// some is in flight when the collector is killed.
		testenv.WaitFor(t, 30*time.Second, "a failed send while the ingest is down", func() (bool, error) {
			return strings.Contains(p.Output(), "connection refused"), nil
		})
		p.Kill()
	}
	require.NoError(t, srv.Start(), "the ingest double must come back on its port")
	drain = o.requireExactlyAccepted(t, srv, 3*time.Minute)
}

// scrapeMetric returns the value of the first sample of the collector's
// Prometheus metric name whose labels contain every one of labels (0 when
// there is none yet).
func scrapeMetric(env []string, name string, labels ...string) (float64, error) {
	host, port := metricsEndpoint(env)
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%s/metrics", host, port))
	if err != nil {
		return 0, nil // not serving yet
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
next:
	for _, l := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		for _, lb := range labels {
			if !strings.Contains(l, lb) {
				continue next
			}
		}
		f := strings.Fields(l)
		return strconv.ParseFloat(f[len(f)-1], 64)
	}
	return 0, nil
}

// TestFullDiskAgent: the shipped agent (eBPF profiler) with its queue on
// a tmpfs that another file fills before it starts: it starts, keeps
// profiling, counts the batches it cannot queue as dropped (storage_full),
// logs that the queue is full naming the directory, sends nothing; once
// the file is removed, its profiles reach the ingest.
func TestFullDiskAgent(t *testing.T) {
	t.Parallel() // see main_test.go
	storage := mountTmpfs(t, 1024)
	filler := filepath.Join(storage, "filler")
	fillFS(t, filler)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	var sent int64 = -1
	figures(t, "fulldisk-agent", srv, &sent)

	dir := t.TempDir()
	overlay := writeFile(t, dir, "overlay.yaml", "receivers:\n  profiling:\n    reporter_interval: 2s\n")
	env := append(agentEnv(t, srv.URL(), dir), "NEXOVUE_STORAGE_DIR="+storage)
	agent := filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "agent.yaml")
	p := startEBPFCollector(t, agent, testenv.CollectorOptions{Env: env, Args: []string{"--config", overlay, testenv.FeatureGate}})
	burner := testenv.BuildGo(t, filepath.Join(testenv.RepoRoot(t), "tests", "smoke", "testdata", "smokeburner"), "nxv-fulldisk-burn")
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=nxv-fulldisk"}, "nice", "-n", "10", burner)

	const dropped = "otelcol_receiver_profiling_batches_dropped"
	var drops float64
	testenv.WaitFor(t, 2*time.Minute, "two batches counted as dropped (storage_full)", func() (bool, error) {
		if ok, err := p.Exited(); ok {
			return false, fmt.Errorf("the collector exited (%v)", err)
		}
		var err error
		drops, err = scrapeMetric(env, dropped, `reason="storage_full"`)
		return drops >= 2, err
	})
	require.Zero(t, srv.SamplesAccepted(), "nothing can be queued, so nothing is sent")
	require.Equal(t, 1, countLines(p.Output(), fullMessage, storage), "the full line naming the directory")

	require.NoError(t, os.Remove(filler))
	testenv.WaitFor(t, 2*time.Minute, "the agent's profiles at the double once space returned", func() (bool, error) {
		if ok, err := p.Exited(); ok {
			return false, fmt.Errorf("the collector exited (%v)", err)
		}
		return srv.SamplesAccepted() > 0, nil
	})
	queued, err := scrapeMetric(env, "otelcol_queue_storage_bytes")
	require.NoError(t, err)
	bound, err := scrapeMetric(env, "otelcol_queue_storage_bound_bytes")
	require.NoError(t, err)
	require.Equal(t, float64(256<<20), bound, "the shipped bound")
	t.Logf("e2e fulldisk-agent: batches dropped while full=%.0f, samples delivered after=%d, queue bytes=%.0f of %.0f", drops, srv.SamplesAccepted(), queued, bound)
}

// diskUsage is the bytes the files in dir take on disk (their blocks).
func diskUsage(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
	}
	return n
}

// TestQueueBoundRefuses: the queue's bound in bytes on disk
// (max_size_mib: 2) on a roomy filesystem, the ingest down: the queue
// fills to its bound and no further (the files' blocks on disk within
// it), later batches are refused with a retryable status and the full line
// names the bound as the reason; once the ingest is back every sample
// accepted arrives, once.
func TestQueueBoundRefuses(t *testing.T) {
	t.Parallel() // see main_test.go
	const bound = 2 << 20
	dir := t.TempDir()
	srv, url := downIngest(t)
	var o offers
	var drain time.Duration
	fullDiskFigures(t, "queue-bound", &o, srv, &drain)
	p, lg := startPipeline(t, otlpPipeline{Endpoint: url, RateLimit: ingest.DefaultSamplesPerSecond, QueueDir: dir, QueueMaxMiB: bound >> 20})

	o.offer(t, lg, 40, 500)
	require.NotEmpty(t, o.refused, "the test must offer more than the bound holds")
	used := diskUsage(t, dir)
	t.Logf("e2e queue-bound: bytes on disk at the bound=%d of %d (%.1f%%), accepted=%d samples", used, bound, 100*float64(used)/bound, o.count(o.accepted))
	require.LessOrEqual(t, used, int64(bound), "the queue's files must stay within max_size_mib")
	require.Greater(t, used, int64(bound)*3/4, "the queue must fill up to near its bound before refusing")
	require.Equal(t, 1, countLines(p.Output(), fullMessage, dir, `"reason": "bound"`), "the full line names the bound")

	require.NoError(t, srv.Start(), "the ingest double must come back on its port")
	drain = o.requireExactlyAccepted(t, srv, 3*time.Minute)
	requireRunning(t, p)
}

// TestQueueDirectoryInUse: a second collector given the queue directory of
// a running one fails to start, saying the directory is in use (they would
// share the queue's indexes, sending items twice or losing them); the
// first keeps delivering. Once the first stops, a collector starts on the
// directory and sends what the first left queued.
func TestQueueDirectoryInUse(t *testing.T) {
	t.Parallel() // see main_test.go
	dir := t.TempDir()
	srv, url := downIngest(t)
	var o offers
	first, lg := startPipeline(t, otlpPipeline{Endpoint: url, RateLimit: ingest.DefaultSamplesPerSecond, QueueDir: dir})
	o.offer(t, lg, 4, 500)
	require.Empty(t, o.refused)

	cfg := otlpPipeline{Endpoint: url, RateLimit: ingest.DefaultSamplesPerSecond, QueueDir: dir, Port: testenv.FreePort(t)}.write(t, t.TempDir())
	second := testenv.Start(t, collectorEnv(testKey), testenv.Binary(t), "--config", cfg, testenv.FeatureGate)
	err := second.Wait(time.Minute)
	require.Error(t, err, "the second collector must exit with an error")
	require.Contains(t, second.Output(), "queue_storage: directory "+dir+" is in use by another process")
	requireRunning(t, first)

	first.Stop(30 * time.Second)
	third, _ := startPipeline(t, otlpPipeline{Endpoint: url, RateLimit: ingest.DefaultSamplesPerSecond, QueueDir: dir})
	require.NoError(t, srv.Start(), "the ingest double must come back on its port")
	o.requireExactlyAccepted(t, srv, time.Minute)
	requireRunning(t, third)
}
