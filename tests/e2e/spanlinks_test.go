package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// spanPhase is how long tests/e2e/testdata/spanburn burns in each phase:
// outside any span, in span A, in B (A's child), in root span C; then it
// burns outside any span until the test has the samples it waits for
// (spanburn.stop).
// At the agent's 19 samples a second, 6 s is 114 samples of a thread that
// has a CPU to itself, and dozens on a loaded machine.
const spanPhase = 6 * time.Second

// linkTolerance is how far a sample's timestamp may lie outside the window
// of the span it is linked to: the labels change a few microseconds after
// the SDK takes a span's start and end time, and the profiler's timestamps
// are converted from the kernel's monotonic clock.
const linkTolerance = 2 * time.Millisecond

// minInSpanShare is the least share of a span's samples that must be linked
// to it.
const minInSpanShare = 0.90

// recordedSpan is one line of spanburn's -spans file.
type recordedSpan struct {
	Name          string `json:"name"`
	TraceID       string `json:"trace_id"`
	SpanID        string `json:"span_id"`
	ParentSpanID  string `json:"parent_span_id"`
	StartUnixNano int64  `json:"start_unix_nano"`
	EndUnixNano   int64  `json:"end_unix_nano"`
	TID           int64  `json:"tid"`
}

func (s recordedSpan) link() string { return s.TraceID + "/" + s.SpanID }

// holds reports whether t lies in the span's window, give or take tol.
func (s recordedSpan) holds(t int64, tol time.Duration) bool {
	return t >= s.StartUnixNano-int64(tol) && t <= s.EndUnixNano+int64(tol)
}

// exclusive reports whether t lies in the span's own time: its window
// without the windows of its children.
func (s recordedSpan) exclusive(t int64, spans []recordedSpan) bool {
	if !s.holds(t, 0) {
		return false
	}
	for _, c := range spans {
		if c.ParentSpanID == s.SpanID && c.holds(t, 0) {
			return false
		}
	}
	return true
}

// spanburn is a started tests/e2e/testdata/spanburn.
type spanburn struct {
	p       *testenv.Process
	spans   string // the -spans file
	target  string // http://ADDR/debug/pprof
	service string
}

func startSpanburn(t *testing.T, service string) *spanburn {
	t.Helper()
	bin := testenv.BuildGo(t, filepath.Join(testenv.RepoRoot(t), "tests", "e2e", "testdata", "spanburn"), "spanburn")
	sb := &spanburn{spans: filepath.Join(t.TempDir(), "spans.jsonl"), service: service}
	sb.p = testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + service}, bin,
		"-listen", "127.0.0.1:0", "-spans", sb.spans, "-phase", spanPhase.String())
	re := regexp.MustCompile(`pprof on (127\.0\.0\.1:\d+)`)
	testenv.WaitFor(t, 30*time.Second, "spanburn to listen", func() (bool, error) {
		if m := re.FindStringSubmatch(sb.p.Output()); m != nil {
			sb.target = "http://" + m[1] + "/debug/pprof"
			return true, nil
		}
		if done, err := sb.p.Exited(); done {
			return false, fmt.Errorf("spanburn exited: %v", err)
		}
		return false, nil
	})
	return sb
}

// run starts the phases and waits for the last span to end, returning the
// spans; spanburn then burns outside them until stop.
func (sb *spanburn) run(t *testing.T) []recordedSpan {
	t.Helper()
	require.NoError(t, sb.p.Cmd.Process.Signal(syscall.SIGUSR1))
	var spans []recordedSpan
	testenv.WaitFor(t, 4*spanPhase+time.Minute, "spanburn's spans to end", func() (bool, error) {
		b, err := os.ReadFile(sb.spans)
		if err != nil || !strings.HasSuffix(string(b), "done\n") {
			return false, nil
		}
		spans = nil
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			if sc.Text() == "done" {
				break
			}
			var s recordedSpan
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				return false, err
			}
			spans = append(spans, s)
		}
		return true, nil
	})
	require.Len(t, spans, 3, "spans A, B and C")
	byName := map[string]recordedSpan{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	require.Equal(t, byName["A"].SpanID, byName["B"].ParentSpanID, "B is A's child")
	require.Equal(t, byName["A"].TraceID, byName["B"].TraceID)
	require.Empty(t, byName["C"].ParentSpanID, "C is a root")
	require.NotEqual(t, byName["A"].TraceID, byName["C"].TraceID)
	return spans
}

// stop ends spanburn's last phase: it stops burning.
func (sb *spanburn) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, sb.p.Cmd.Process.Signal(syscall.SIGUSR2))
}

// runAndCollect waits until the file exporter's output at sinkPath holds
// the program's hot function (thread tid, -1 for any), runs the phases, and
// waits for a sample (or a profile) that starts more than after past the
// last span's end, then stops the program; it returns the spans and the hot
// events. The program burns outside the spans until then: on a loaded host
// its thread may go without a sample for seconds, and a last phase of fixed
// length could end before one came (TestSpanLinksEBPF, 2026-12-06).
func (sb *spanburn) runAndCollect(t *testing.T, sinkPath string, tid int64, after time.Duration) ([]recordedSpan, []linkedEvent) {
	t.Helper()
	testenv.WaitFor(t, 2*time.Minute, "the collector to send spanburn's main.hot", func() (bool, error) {
		ev, err := hotEvents(sinkPath, sb.service, tid)
		return len(ev) > 0, err
	})
	spans := sb.run(t)
	end := spans[0].EndUnixNano
	for _, s := range spans {
		end = max(end, s.EndUnixNano)
	}
	var events []linkedEvent
	waited := false
	defer func() {
		if waited {
			return
		}
		// What there was, for the failure.
		last := int64(math.MinInt64)
		for _, e := range events {
			last = max(last, e.from)
		}
		if len(events) == 0 {
			t.Logf("no sample event of the hot thread (waiting for one after %v past the last span's end)", after)
		} else {
			t.Logf("%d sample events of the hot thread, the last starting %v after the last span's end (waiting for one after %v)",
				len(events), time.Duration(last-end), after)
		}
	}()
	testenv.WaitFor(t, 3*time.Minute, "samples after the last span", func() (bool, error) {
		var err error
		events, err = hotEvents(sinkPath, sb.service, tid)
		for _, e := range events {
			if e.from > end+int64(after) {
				return true, err
			}
		}
		return false, err
	})
	waited = true
	sb.stop(t)
	return spans, events
}

// linkedEvent is one sample event (one timestamp, or one pprof sample's
// count) of the hot function's thread: when, and the link it carries.
type linkedEvent struct {
	from, to int64 // a timestamp (from == to), or the pprof profile's window
	n        int64
	link     string // trace/span, "" for none
	labelled bool   // the sample carried a span_id label
}

// hotEvents reads the file exporter's output and returns the events of
// service's samples whose stack holds main.hot (on thread tid for eBPF
// samples, which carry thread.id); pprof samples, which have no
// timestamps, get their profile's window; of pprof's two CPU profiles only
// samples/count is read.
func hotEvents(path, service string, tid int64) ([]linkedEvent, error) {
	var out []linkedEvent
	err := testenv.ReadProfileLines(path, func(pd pprofile.Profiles) {
		dict := pd.Dictionary()
		str := func(i int32) string { return dict.StringTable().At(int(i)) }
		for _, rp := range pd.ResourceProfiles().All() {
			if v, ok := rp.Resource().Attributes().Get("service.name"); !ok || v.AsString() != service {
				continue
			}
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					if str(p.SampleType().TypeStrindex()) != "samples" {
						continue
					}
					for _, s := range p.Samples().All() {
						hot := false
						for _, li := range dict.StackTable().At(int(s.StackIndex())).LocationIndices().All() {
							for _, line := range dict.LocationTable().At(int(li)).Lines().All() {
								hot = hot || str(dict.FunctionTable().At(int(line.FunctionIndex())).NameStrindex()) == "main.hot"
							}
						}
						if !hot {
							continue
						}
						ev := linkedEvent{}
						thread := int64(-1)
						for _, a := range s.AttributeIndices().All() {
							kv := dict.AttributeTable().At(int(a))
							switch str(kv.KeyStrindex()) {
							case "thread.id":
								thread = kv.Value().Int()
							case "span_id", "process.context.label.span_id":
								ev.labelled = true
							}
						}
						if thread >= 0 && thread != tid {
							continue
						}
						if s.LinkIndex() > 0 {
							l := dict.LinkTable().At(int(s.LinkIndex()))
							ev.link = l.TraceID().String() + "/" + l.SpanID().String()
						}
						if ts := s.TimestampsUnixNano(); ts.Len() > 0 {
							for _, t := range ts.All() {
								e := ev
								e.from, e.to, e.n = int64(t), int64(t), 1
								out = append(out, e)
							}
							continue
						}
						ev.from = int64(p.Time())
						ev.to = ev.from + int64(p.DurationNano())
						for _, v := range s.Values().All() {
							ev.n += v
						}
						out = append(out, ev)
					}
				}
			}
		}
	})
	return out, err
}

// spanFigures checks the events against the spans and returns, per span
// name, the share of its events linked to it, and the number of wrong links.
//
//   - an event linked to a span lies within that span's window (± tol);
//     a pprof event's window must overlap it;
//   - of the events within a span's own time (without its children's), at
//     least minInSpanShare are linked to that span: for pprof, the events of
//     profiles whose window lies within that time;
//   - events outside every span carry no link (pprof: profiles whose window
//     overlaps no span);
//   - every link names one of the recorded spans.
func spanFigures(t *testing.T, events []linkedEvent, spans []recordedSpan, tol time.Duration) (map[string]float64, int) {
	t.Helper()
	bySpan := map[string]recordedSpan{}
	for _, s := range spans {
		bySpan[s.link()] = s
	}
	wrong := 0
	in := map[string]int64{}     // events within a span's own time
	linked := map[string]int64{} // of which linked to it
	var outside, outsideLinked int64
	for _, e := range events {
		if e.link != "" {
			s, ok := bySpan[e.link]
			if !ok || e.to < s.StartUnixNano-int64(tol) || e.from > s.EndUnixNano+int64(tol) {
				wrong++
				if wrong <= 5 {
					t.Errorf("%d event(s) at [%s, %s] linked to %s, which is not a recorded span running then (recorded: %v)",
						e.n, time.Unix(0, e.from).UTC().Format(time.StampMicro), time.Unix(0, e.to).UTC().Format(time.StampMicro), e.link, ok)
				}
			}
		}
		overlapsAny := false
		for _, s := range spans {
			if s.exclusive(e.from, spans) && s.exclusive(e.to, spans) && (e.from == e.to || !childIn(s, spans, e.from, e.to)) {
				in[s.Name] += e.n
				if e.link == s.link() {
					linked[s.Name] += e.n
				}
			}
			overlapsAny = overlapsAny || (e.to >= s.StartUnixNano && e.from <= s.EndUnixNano)
		}
		if !overlapsAny {
			outside += e.n
			if e.link != "" {
				outsideLinked += e.n
			}
		}
	}
	shares := map[string]float64{}
	for _, s := range spans {
		if in[s.Name] == 0 {
			t.Errorf("no sample of the hot thread within span %s's own time", s.Name)
			continue
		}
		shares[s.Name] = float64(linked[s.Name]) / float64(in[s.Name])
		t.Logf("span %s: %d of %d samples in its own time linked to it (%.1f%%)", s.Name, linked[s.Name], in[s.Name], 100*shares[s.Name])
		if shares[s.Name] < minInSpanShare {
			t.Errorf("span %s: only %.1f%% of its %d samples are linked to it (want >= %.0f%%)", s.Name, 100*shares[s.Name], in[s.Name], 100*minInSpanShare)
		}
	}
	if outside == 0 {
		t.Errorf("no sample of the hot thread outside the spans")
	}
	if outsideLinked > 0 {
		t.Errorf("%d of %d samples outside every span carry a link", outsideLinked, outside)
	}
	t.Logf("outside the spans: %d samples, %d linked; wrong links: %d", outside, outsideLinked, wrong)
	if wrong > 0 {
		t.Errorf("%d sample event(s) linked to a span that was not running then", wrong)
	}
	return shares, wrong
}

// childIn reports whether a child of s overlaps [from, to].
func childIn(s recordedSpan, spans []recordedSpan, from, to int64) bool {
	for _, c := range spans {
		if c.ParentSpanID == s.SpanID && to >= c.StartUnixNano && from <= c.EndUnixNano {
			return true
		}
	}
	return false
}

// waitLinkedAtDouble waits until the double counted, for service, as many
// linked samples as the file exporter's output holds (both exporters get
// the same batches), and at least one.
func waitLinkedAtDouble(t *testing.T, srv *ingest.Server, sinkPath, service string) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, "the double to count the linked samples the file exporter wrote", func() (bool, error) {
		var want int64
		err := testenv.ReadProfileLines(sinkPath, func(pd pprofile.Profiles) {
			for _, rp := range pd.ResourceProfiles().All() {
				if v, ok := rp.Resource().Attributes().Get("service.name"); !ok || v.AsString() != service {
					continue
				}
				for _, sp := range rp.ScopeProfiles().All() {
					for _, p := range sp.Profiles().All() {
						for _, s := range p.Samples().All() {
							if s.LinkIndex() > 0 {
								want++
							}
						}
					}
				}
			}
		})
		got := srv.Stats().Services[service].Linked
		return want > 0 && got == want, err
	})
}

// TestSpanLinksEBPF: the shipped agent configuration with the real eBPF
// profiler links the Go program's samples to the spans its goroutine
// labels name (otel-profiling-go, all-spans scope), on both sides of a span
// change on one thread in one function, and nothing outside the spans.
func TestSpanLinksEBPF(t *testing.T) {
	t.Parallel() // with TestSpanLinksPprof: each mostly waits for its phases
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "span-links-ebpf", srv, &sent)
	service := fmt.Sprintf("spanburn-ebpf-%d", os.Getpid())
	sb := startSpanburn(t, service)
	sinkPath, _ := startAgent(t, srv)

	// The profiler has seen the program once its hot function arrives.
	spans, events := sb.runAndCollect(t, sinkPath, readTID(t, sb), spanPhase/2)
	shares, wrong := spanFigures(t, events, spans, linkTolerance)
	waitLinkedAtDouble(t, srv, sinkPath, service)
	t.Logf("figures span-links-ebpf: share A=%.3f B=%.3f C=%.3f wrong=%d", shares["A"], shares["B"], shares["C"], wrong)
}

// TestSpanLinksPprof: the shipped pprof configuration scrapes the same
// program's CPU profile, whose samples carry the goroutine labels, and
// links them.
func TestSpanLinksPprof(t *testing.T) {
	t.Parallel()
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}})
	sent := int64(-1)
	figures(t, "span-links-pprof", srv, &sent)
	service := fmt.Sprintf("spanburn-pprof-%d", os.Getpid())
	sb := startSpanburn(t, service)

	dir := t.TempDir()
	sinkPath := filepath.Join(dir, "profiles.jsonl")
	overlay := writeFile(t, dir, "overlay.yaml", fmt.Sprintf(`
receivers:
  pprof/heap:
    remote:
      collection_interval: 10s
  pprof/cpu:
    remote:
      endpoint: ${env:PPROF_BASE_URL}/profile?seconds=2
      collection_interval: 3s
exporters:
  file/e2e:
    path: %s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      exporters: [nexovue, file/e2e]
`, sinkPath))
	testenv.StartCollector(t, filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "pprof.yaml"), testenv.CollectorOptions{
		Env: []string{
			"NEXOVUE_KEY=" + testKey,
			"NEXOVUE_ENDPOINT=" + srv.URL(),
			"NEXOVUE_SERVICE_NAME=" + service,
			"PPROF_BASE_URL=" + sb.target,
		},
		Args: []string{"--config", overlay, testenv.FeatureGate},
	})
	spans, events := sb.runAndCollect(t, sinkPath, -1, 0)
	// A pprof sample carries no timestamp: its profile's window stands in,
	// so a link must fall in a span overlapping that window.
	shares, wrong := spanFigures(t, events, spans, 0)
	waitLinkedAtDouble(t, srv, sinkPath, service)
	t.Logf("figures span-links-pprof: share A=%.3f B=%.3f C=%.3f wrong=%d", shares["A"], shares["B"], shares["C"], wrong)
}

// readTID returns the thread spanburn burns on, from its log.
func readTID(t *testing.T, sb *spanburn) int64 {
	t.Helper()
	m := regexp.MustCompile(`burning on thread (\d+)`).FindStringSubmatch(sb.p.Output())
	require.NotNil(t, m, "spanburn's log names its thread:\n%s", sb.p.Output())
	var tid int64
	_, err := fmt.Sscan(m[1], &tid)
	require.NoError(t, err)
	return tid
}

// TestExistingLinksPassThroughGateway: links a profiler already made (as for
// Elastic/EDOT Java or OBI) cross the shipped gateway (span_links,
// frame_limit, the nexovue exporter) unchanged to the double, a label never
// overrides them, and labelled unlinked samples get their link.
func TestExistingLinksPassThroughGateway(t *testing.T) {
	t.Parallel() // see main_test.go
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}, KeepBodies: 100})
	sent := int64(-1)
	figures(t, "span-links-gateway", srv, &sent)
	port := testenv.FreePort(t)
	dir := t.TempDir()
	// The gateway has no OTLP/HTTP listener as shipped; this test, which is
	// not about TLS, adds one and turns mutual TLS off.
	testenv.StartCollector(t, filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "gateway.yaml"), testenv.CollectorOptions{
		Args: []string{"--config", fmt.Sprintf("yaml:receivers::otlp::protocols::http::endpoint: 127.0.0.1:%d", port), testenv.FeatureGate},
		Env: []string{
			"NEXOVUE_GATEWAY_INSECURE=true",
			"NEXOVUE_KEY=" + testKey,
			"NEXOVUE_ENDPOINT=" + srv.URL(),
			"NEXOVUE_STORAGE_DIR=" + filepath.Join(dir, "storage"),
			fmt.Sprintf("NEXOVUE_HEALTH_ENDPOINT=127.0.0.1:%d", testenv.FreePort(t)),
			fmt.Sprintf("NEXOVUE_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", testenv.FreePort(t)),
			"NEXOVUE_METRICS_HOST=127.0.0.1",
			fmt.Sprintf("NEXOVUE_METRICS_PORT=%d", testenv.FreePort(t)),
		},
	})

	// Every 3rd sample has a link (profilegen); every 2nd carries labels
	// naming another span: on the linked ones they must not win.
	const n = 3000
	lg := newLoadgen(port)
	pd := profilegen.Generate(profilegen.Config{Samples: n, Depth: 16, LinkEvery: 3, Seq: true, Seed: 25})
	dict := pd.Dictionary()
	label := func(k, v string) int32 {
		kv := dict.AttributeTable().AppendEmpty()
		kv.SetKeyStrindex(int32(dict.StringTable().Len()))
		dict.StringTable().Append(k)
		kv.Value().SetStr(v)
		return int32(dict.AttributeTable().Len() - 1)
	}
	const labelTrace, labelSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	labels := []int32{label("process.context.label.trace_id", labelTrace), label("process.context.label.span_id", labelSpan)}
	want := map[int64]string{} // seq -> link
	for _, rp := range pd.ResourceProfiles().All() {
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, s := range p.Samples().All() {
					seq := sampleSeq(dict, s)
					labelled := seq%2 == 0
					if labelled {
						s.AttributeIndices().Append(labels...)
					}
					switch {
					case s.LinkIndex() > 0:
						l := dict.LinkTable().At(int(s.LinkIndex()))
						want[seq] = l.TraceID().String() + "/" + l.SpanID().String()
					case labelled:
						want[seq] = labelTrace + "/" + labelSpan
					default:
						want[seq] = ""
					}
				}
			}
		}
	}
	code, err := lg.post(t.Context(), pd)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	sent = n
	waitAllSeq(t, srv, n, time.Minute)

	got := map[int64]string{}
	for _, body := range srv.AcceptedBodies() {
		req := pprofileotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(body))
		out := req.Profiles()
		d := out.Dictionary()
		for _, rp := range out.ResourceProfiles().All() {
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					for _, s := range p.Samples().All() {
						link := ""
						if s.LinkIndex() > 0 {
							l := d.LinkTable().At(int(s.LinkIndex()))
							link = l.TraceID().String() + "/" + l.SpanID().String()
						}
						got[sampleSeq(d, s)] = link
					}
				}
			}
		}
	}
	require.Equal(t, want, got)
	linked, kept := int64(0), 0
	for seq, l := range want {
		if l != "" && l != labelTrace+"/"+labelSpan && seq%2 == 0 {
			kept++
		}
	}
	require.Greater(t, kept, 100, "labelled samples that kept the profiler's link were tested")
	for _, l := range want {
		if l != "" {
			linked++
		}
	}
	require.Equal(t, linked, srv.Stats().SamplesLinked, "the double counts the linked samples")
}

// sampleSeq returns a sample's seq attribute (profilegen), or -1.
func sampleSeq(dict pprofile.ProfilesDictionary, s pprofile.Sample) int64 {
	for _, a := range s.AttributeIndices().All() {
		kv := dict.AttributeTable().At(int(a))
		if dict.StringTable().At(int(kv.KeyStrindex())) == profilegen.SeqKey {
			return kv.Value().Int()
		}
	}
	return -1
}
