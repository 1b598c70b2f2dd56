package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit/profilegen"
	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// The gateway tier of issue 31, with real processes: gateways from the
// built binary with the shipped gateway.yaml, each on a loopback address of
// its own (127.0.0.2, 127.0.0.3, ...) and one port, behind one name; agents
// from the built binary with the shipped agent-to-gateway.yaml (its
// profiling receiver swapped for an OTLP one the generator feeds) and
// NEXOVUE_GATEWAY_ENDPOINT=dns:///<name>:<port>, as on Kubernetes with the
// headless Service. The name resolves through a hosts file of the test's
// own: each agent runs in a private mount namespace (unshare --mount) in
// which that file is bind-mounted over /etc/hosts (and a resolv.conf that
// sends no query off the machine over /etc/resolv.conf); the machine's files
// are untouched. The binary is static (CGO off), so Go's own
// resolver answers grpc-go's dns resolver (net.Resolver.LookupHost) from
// /etc/hosts ("hosts: files dns"), every address listed for the name, and
// reads the file again when it changed (at most every 5 s). The test
// rewrites the file in place (same inode, which the bind mount shows) to
// add a replica or take one away, as the Service's endpoints change.
// Agents and gateways speak mutual TLS as shipped: one CA of the test signs
// the gateways' certificate (for the name) and the agents' (tierPKI).

const (
	tierKey  = "nxk-e2e-gateway-tier-key"
	tierName = "otelcol-nexovue-gateway-headless.e2e.test"
	// tierConnAge is the gateways' max_connection_age in these tests (the
	// shipped default is 30s): it bounds how soon agents re-resolve.
	tierConnAge = 5 * time.Second
	// tierRebalanceBound is what the README states for a replica added
	// while agents run: grpc-go re-resolves when a connection closes
	// (max_connection_age plus up to 10% jitter, then up to its grace) but
	// at most once every 30 s (internal/resolver/dns MinResolutionInterval),
	// plus Go's hosts-file cache (5 s) here, DNS caching on Kubernetes.
	tierRebalanceBound = 30*time.Second + tierConnAge*11/10 + 5*time.Second
)

// tierGateway is one gateway replica.
type tierGateway struct {
	ip      string
	proc    *testenv.Process
	metrics string // host:port of its Prometheus endpoint
	health  string // host:port of health_check
	env     []string
}

// gatewayTier is the gateways, the agents and the hosts file of one test.
type gatewayTier struct {
	t     testing.TB
	srv   *ingest.Server
	dir   string
	port  int // every gateway's OTLP/gRPC port
	hosts string
	// resolv is the agents' /etc/resolv.conf.
	resolv string
	mu     sync.Mutex
	named  map[string]bool // the addresses the name resolves to
	gws    map[string]*tierGateway
	pki    *tierPKI
	// agentEnvs are the started agents' environments.
	agentEnvs [][]string
}

func newGatewayTier(t testing.TB, srv *ingest.Server) *gatewayTier {
	tr := &gatewayTier{t: t, srv: srv, dir: t.TempDir(), port: testenv.FreePort(t), named: map[string]bool{}, gws: map[string]*tierGateway{}}
	tr.hosts = filepath.Join(tr.dir, "hosts")
	tr.writeHosts()
	// No DNS server either: gRPC's resolver also asks DNS for the name's
	// service config (TXT); a loopback nameserver with nothing on port 53
	// refuses at once, so no query leaves the machine and none waits.
	tr.resolv = writeFile(t, tr.dir, "resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
	tr.pki = newTierPKI(t, tr.dir)
	return tr
}

// writeHosts rewrites the hosts file in place (the bind mount shows the
// same inode's new content).
func (tr *gatewayTier) writeHosts() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var b strings.Builder
	b.WriteString("127.0.0.1 localhost\n")
	for i := 2; i < 255; i++ {
		ip := fmt.Sprintf("127.0.0.%d", i)
		if tr.named[ip] {
			fmt.Fprintf(&b, "%s %s\n", ip, tierName)
		}
	}
	f, err := os.OpenFile(tr.hosts, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	require.NoError(tr.t, err)
	_, err = f.WriteString(b.String())
	require.NoError(tr.t, err)
	require.NoError(tr.t, f.Close())
}

// setNamed adds ip to the name's addresses or takes it away.
func (tr *gatewayTier) setNamed(ip string, on bool) {
	tr.mu.Lock()
	tr.named[ip] = on
	tr.mu.Unlock()
	tr.writeHosts()
}

// startGateway starts the shipped gateway.yaml on ip (its OTLP/gRPC on the
// tier's port) and, once it is ready, adds ip to the name. overlay, when
// set, is a further config.
func (tr *gatewayTier) startGateway(ip string, overlay string) *tierGateway {
	t := tr.t
	g := tr.gws[ip]
	if g == nil {
		g = &tierGateway{ip: ip,
			metrics: fmt.Sprintf("%s:%d", ip, testenv.FreePort(t)),
			health:  fmt.Sprintf("%s:%d", ip, testenv.FreePort(t)),
		}
		g.env = []string{
			"NEXOVUE_KEY=" + tierKey,
			"NEXOVUE_ENDPOINT=" + tr.srv.URL(),
			"NEXOVUE_OTLP_GRPC_ENDPOINT=" + fmt.Sprintf("%s:%d", ip, tr.port),
			"NEXOVUE_OTLP_MAX_CONNECTION_AGE=" + tierConnAge.String(),
			"NEXOVUE_HEALTH_ENDPOINT=" + g.health,
			"NEXOVUE_METRICS_HOST=" + ip,
			"NEXOVUE_METRICS_PORT=" + g.metrics[strings.LastIndexByte(g.metrics, ':')+1:],
			"NEXOVUE_STORAGE_DIR=" + t.TempDir(), // kept across a restart, as a pod's volume
		}
		g.env = append(g.env, tr.pki.gatewayEnv()...)
		tr.gws[ip] = g
	}
	args := []string{testenv.FeatureGate}
	if overlay != "" {
		args = []string{"--config", overlay, testenv.FeatureGate}
	}
	g.proc = testenv.StartCollector(t, filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "gateway.yaml"),
		testenv.CollectorOptions{Env: g.env, Args: args})
	tr.setNamed(ip, true)
	return g
}

// startAgents starts n agents (shipped agent-to-gateway.yaml, OTLP/HTTP in)
// resolving the tier's name through the hosts file, and returns their
// OTLP/HTTP ports.
func (tr *gatewayTier) startAgents(n int, endpoint string) ([]int, []*testenv.Process) {
	t := tr.t
	if endpoint == "" {
		endpoint = fmt.Sprintf("dns:///%s:%d", tierName, tr.port)
	}
	ports := make([]int, n)
	configs := make([]string, n)
	for i := range n {
		ports[i] = testenv.FreePort(t)
		configs[i] = writeFile(t, tr.dir, fmt.Sprintf("agent-%d.yaml", i), otlpInOverlay(ports[i]))
	}
	shipped := filepath.Join(testenv.RepoRoot(t), "distributions", "otelcol-nexovue", "agent-to-gateway.yaml")
	procs := make([]*testenv.Process, n)
	for i := range n {
		env := append([]string{
			"NEXOVUE_KEY=", "NEXOVUE_GATEWAY_ENDPOINT=" + endpoint,
			"NEXOVUE_STORAGE_DIR=" + t.TempDir(),
			"NEXOVUE_HEALTH_ENDPOINT=" + testenv.FreeAddr(t),
			"NEXOVUE_METRICS_HOST=127.0.0.1",
			"NEXOVUE_METRICS_PORT=" + strconv.Itoa(testenv.FreePort(t)),
		}, tr.pki.agentEnv()...)
		tr.agentEnvs = append(tr.agentEnvs, env)
		procs[i] = testenv.StartCollector(t, shipped, testenv.CollectorOptions{
			Env:  env,
			Args: []string{"--config", configs[i], testenv.FeatureGate},
			Wrap: []string{"unshare", "--mount", "--propagation", "private", "--",
				"/bin/sh", "-c", `set -e; mount --bind "$0" /etc/hosts; mount --bind "$1" /etc/resolv.conf; shift; exec "$@"`, tr.hosts, tr.resolv},
		})
	}
	return ports, procs
}

// otlpInOverlay is the overlay that swaps an agent config's receiver for
// OTLP/HTTP on 127.0.0.1:port, which a test feeds.
func otlpInOverlay(port int) string {
	return fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
service:
  pipelines:
    profiles:
      receivers: [otlp]
`, port)
}

// accepted is what the gateway's OTLP receiver accepted so far (samples:
// otelcol_receiver_accepted_* of its own metrics), 0 before the first.
func (g *tierGateway) accepted() (int64, error) {
	resp, err := http.Get("http://" + g.metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var n int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "otelcol_receiver_accepted_") && strings.Contains(l, `receiver="otlp"`) {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return 0, fmt.Errorf("metric line %q: %w", l, err)
			}
			n += int64(v)
		}
	}
	return n, sc.Err()
}

// counts reads every running gateway's accepted samples.
func (tr *gatewayTier) counts(ips []string) map[string]int64 {
	out := map[string]int64{}
	for _, ip := range ips {
		n, err := tr.gws[ip].accepted()
		require.NoError(tr.t, err, "gateway %s's metrics", ip)
		out[ip] = n
	}
	return out
}

// shares measures each gateway's share of what ips accepted over d.
func (tr *gatewayTier) shares(ips []string, d time.Duration) (map[string]float64, int64) {
	before := tr.counts(ips)
	time.Sleep(d) // a measuring window, not a wait for a condition
	after := tr.counts(ips)
	var total int64
	for _, ip := range ips {
		total += after[ip] - before[ip]
	}
	out := map[string]float64{}
	for _, ip := range ips {
		if total > 0 {
			out[ip] = float64(after[ip]-before[ip]) / float64(total)
		}
	}
	return out, total
}

// requireSpread fails unless every gateway's share is within the stated
// tolerance: between half and one and a half times an even share.
func requireSpread(t *testing.T, what string, shares map[string]float64, total int64) {
	t.Helper()
	require.Positive(t, total, "%s: no samples at the gateways", what)
	even := 1 / float64(len(shares))
	for ip, s := range shares {
		if s < even/2 || s > even*3/2 {
			t.Fatalf("%s: gateway %s got %.1f%% of %d samples, want %.1f%% to %.1f%% (shares %v)", what, ip, 100*s, total, 100*even/2, 150*even, shares)
		}
	}
}

// tierLoad posts generated batches with distinct sequence numbers to the
// agents until stopped: every batch it numbered was accepted by an agent.
type tierLoad struct {
	next    atomic.Int64 // samples numbered and handed over
	stopped chan struct{}
	wg      sync.WaitGroup
	errs    chan error
	once    sync.Once
}

// startTierLoad sends per samples (16 frames each) to each agent every
// period.
func startTierLoad(t testing.TB, ports []int, per int, period time.Duration) *tierLoad {
	l := &tierLoad{stopped: make(chan struct{}), errs: make(chan error, len(ports))}
	var mu sync.Mutex // numbers are handed out in the order batches are accepted
	for _, port := range ports {
		lg := newLoadgen(port)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(period)
			defer tick.Stop()
			for {
				select {
				case <-l.stopped:
					return
				case <-tick.C:
				}
				mu.Lock()
				base := l.next.Add(int64(per)) - int64(per)
				mu.Unlock()
				pd := profilegen.Generate(profilegen.Config{Samples: per, Depth: 16, Seq: true, Seed: uint64(base) + 1})
				offsetSeq(pd, base)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				code, err := lg.post(ctx, pd)
				cancel()
				if err != nil || code != http.StatusOK {
					l.errs <- fmt.Errorf("the agent on port %d refused a batch: %d %v", port, code, err)
					return
				}
			}
		}()
	}
	t.Cleanup(l.stop)
	return l
}

// stop ends the load once every batch on its way was answered.
func (l *tierLoad) stop() {
	l.once.Do(func() { close(l.stopped) })
	l.wg.Wait()
}

// err returns the first refusal, if any.
func (l *tierLoad) err() error {
	select {
	case err := <-l.errs:
		return err
	default:
		return nil
	}
}

// waitTraffic waits until the gateway on ip accepted more than from.
func (tr *gatewayTier) waitTraffic(ip string, from int64, d time.Duration, what string) time.Duration {
	start := time.Now()
	testenv.WaitFor(tr.t, d, what, func() (bool, error) {
		n, err := tr.gws[ip].accepted()
		return err == nil && n > from, nil
	})
	return time.Since(start)
}

// TestGatewayTierScales: two gateways, two agents sending 10,000 samples a
// second through them. Every gateway gets a share within tolerance; a third
// added mid-run gets its share within the stated bound; one is killed with
// SIGKILL and started again; taken out of the name (not ready), it gets no
// more requests within the same bound; another is stopped with SIGTERM
// (scale-in); the ingest double receives every sample the agents accepted.
func TestGatewayTierScales(t *testing.T) {
	// Not parallel: the quiet after a gateway leaves the name and the
	// shares are read from 10,000 samples a second through five collectors,
	// which tests beside it delayed by seconds on a loaded machine.
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{tierKey}})
	var sent int64
	figures(t, "gateway-tier", srv, &sent)
	tr := newGatewayTier(t, srv)
	g1, g2, g3 := "127.0.0.2", "127.0.0.3", "127.0.0.4"
	tr.startGateway(g1, "")
	tr.startGateway(g2, "")
	ports, _ := tr.startAgents(2, "")

	// 2 agents x 1,000 samples every 200 ms: 10,000 samples a second, half
	// the key's limit.
	load := startTierLoad(t, ports, 1000, 200*time.Millisecond)
	for _, ip := range []string{g1, g2} {
		tr.waitTraffic(ip, 0, time.Minute, "requests at gateway "+ip)
	}
	two, total := tr.shares([]string{g1, g2}, 8*time.Second)
	t.Logf("shares of 2 gateways over 8 s (%d samples): %s %.1f%%, %s %.1f%%", total, g1, 100*two[g1], g2, 100*two[g2])
	requireSpread(t, "two gateways", two, total)

	// Scale-up: a third replica, named once it is ready.
	tr.startGateway(g3, "")
	added := time.Now()
	tr.waitTraffic(g3, 0, 2*tierRebalanceBound, "the new gateway's first request")
	first := time.Since(added)
	three, total := tr.shares([]string{g1, g2, g3}, 8*time.Second)
	rebalanced := time.Since(added)
	t.Logf("gateway added: first request after %s; shares over the next 8 s (%d samples): %s %.1f%%, %s %.1f%%, %s %.1f%%; rebalanced within %s (bound %s)",
		first.Round(100*time.Millisecond), total, g1, 100*three[g1], g2, 100*three[g2], g3, 100*three[g3], rebalanced.Round(100*time.Millisecond), tierRebalanceBound)
	require.LessOrEqual(t, first, tierRebalanceBound, "the new gateway waited longer than the stated bound for its first request")
	requireSpread(t, "three gateways", three, total)

	// Crash: g2 is killed mid-run and started again (same addresses, same
	// volume, as a pod's container restarts).
	before := tr.counts([]string{g1, g3})
	tr.gws[g2].proc.Kill()
	testenv.WaitFor(t, time.Minute, "the other gateways taking the load", func() (bool, error) {
		now := tr.counts([]string{g1, g3})
		return now[g1]-before[g1]+now[g3]-before[g3] >= 20000, nil
	})
	tr.startGateway(g2, "")
	tr.waitTraffic(g2, 0, 2*tierRebalanceBound, "requests at the restarted gateway")

	// Not ready: g2 leaves the name (a pod failing its readiness leaves the
	// headless Service) but runs on; once the agents re-resolve it gets no
	// request at all.
	tr.setNamed(g2, false)
	out := time.Now()
	last, lastChange := int64(-1), time.Now()
	testenv.WaitFor(t, 2*tierRebalanceBound, "no more requests at the gateway taken out of the name", func() (bool, error) {
		n, err := tr.gws[g2].accepted()
		if err != nil {
			return false, err
		}
		if n != last {
			last, lastChange = n, time.Now()
			return false, nil
		}
		// About three requests a second reach each named gateway.
		return time.Since(lastChange) >= 3*time.Second, nil
	})
	quiet := lastChange.Sub(out)
	idle, total := tr.shares([]string{g1, g2, g3}, 5*time.Second)
	t.Logf("gateway %s out of the name: its last request %s after; over the next 5 s it got %.1f%% of %d samples", g2, quiet.Round(100*time.Millisecond), 100*idle[g2], total)
	require.LessOrEqual(t, quiet, tierRebalanceBound, "the gateway taken out of the name kept getting requests longer than the stated bound")
	require.Positive(t, total)
	require.Zero(t, idle[g2], "a gateway out of the name still gets requests")

	// Scale-in: g1 leaves the name (its endpoint) and gets SIGTERM at once,
	// with requests on their way.
	tr.setNamed(g1, false)
	term := time.Now()
	require.NoError(t, tr.gws[g1].proc.Cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, tr.gws[g1].proc.Wait(time.Minute), "the SIGTERM'd gateway did not exit cleanly")
	t.Logf("SIGTERM'd gateway %s exited after %s", g1, time.Since(term).Round(10*time.Millisecond))
	before = tr.counts([]string{g3})
	tr.waitTraffic(g3, before[g3]+10000, time.Minute, "the last named gateway taking the load")

	load.stop()
	require.NoError(t, load.err())
	sent = load.next.Load()
	waitAllSeq(t, srv, sent, 2*time.Minute)
	st := srv.Stats()
	t.Logf("gateway tier: handed over %d samples, arrived %d distinct, lost 0, duplicates %d (at-least-once: a request a gateway delivered but could not answer is sent again)",
		sent, st.Seq.Distinct, st.Seq.Duplicates)
}

// TestGatewayDrainsOnSIGTERM: a gateway holding a full load of agent
// requests (the agent's ten queue consumers, 1,000 samples each, waiting
// for the key's limit, 2,000 samples a second here so that the drain takes
// seconds) gets SIGTERM. Its readiness fails at once (503) while it delivers
// what it holds, at the limit, and exits; what the agent had not handed
// over yet stays in the agent's queue and arrives through the replica
// started after it. The figure: samples drained and the time it took.
func TestGatewayDrainsOnSIGTERM(t *testing.T) {
	// Not parallel either: its figure is a drain rate (see TestGatewayTierScales).
	const limit = 2000
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{tierKey}, SamplesPerSecond: limit, RetryAfter: time.Second})
	var sent int64
	figures(t, "gateway-drain", srv, &sent)
	tr := newGatewayTier(t, srv)
	overlay := writeFile(t, tr.dir, "gateway-limit.yaml", fmt.Sprintf(`
exporters:
  nexovue:
    rate_limit:
      samples_per_second: %d
`, limit))
	const ip = "127.0.0.2"
	g := tr.startGateway(ip, overlay)
	ports, _ := tr.startAgents(1, "")

	// 30 batches of 1,000 samples: 15 s of the key's limit.
	lg := newLoadgen(ports[0])
	sent = lg.send(t, 30, 1000, 16)
	testenv.WaitFor(t, time.Minute, "the gateway sending at the limit", func() (bool, error) {
		return srv.SamplesAccepted() >= 2*limit, nil
	})

	before := srv.SamplesAccepted()
	var notReady atomic.Int64 // 503s from health_check after SIGTERM
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if resp, err := http.Get("http://" + g.health + "/"); err == nil {
				if resp.StatusCode == http.StatusServiceUnavailable {
					notReady.Add(1)
				}
				resp.Body.Close()
			}
		}
	}()
	tr.setNamed(ip, false)
	term := time.Now()
	require.NoError(t, g.proc.Cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, g.proc.Wait(time.Minute), "the SIGTERM'd gateway did not exit cleanly")
	drain := time.Since(term)
	close(done)
	drained := srv.SamplesAccepted() - before
	t.Logf("SIGTERM'd gateway drained %d samples in %s at a limit of %d samples/s (%.0f samples/s); readiness answered 503 %d times meanwhile",
		drained, drain.Round(10*time.Millisecond), limit, float64(drained)/drain.Seconds(), notReady.Load())
	require.Positive(t, drained, "the gateway delivered nothing of what it held after SIGTERM")
	require.Positive(t, notReady.Load(), "readiness did not fail while the gateway drained")
	require.NotContains(t, g.proc.Output(), "dropped", "the gateway dropped samples at shutdown")

	// The replacement replica gets the rest from the agent's queue.
	tr.startGateway(ip, overlay)
	waitAllSeq(t, srv, sent, 2*time.Minute)
	t.Logf("gateway drain: handed over %d, arrived %d distinct, lost 0, duplicates %d", sent, srv.Seq().Distinct, srv.Seq().Duplicates)
}
