package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// BenchmarkGatewayTierCPU measures the CPU the agents and the gateways of
// the two-tier topology spend per 10,000 samples, with client-side
// balancing as shipped (agents: dns:/// over both gateways, round_robin;
// gateways: no queue, max_connection_age) against the topology before it,
// in the same run, side by side: each agent pinned to one gateway (what a
// ClusterIP Service gives a long-lived gRPC connection) and the gateways'
// sending queue on disk (file_storage). Each tier: 2 agents sending 5,000
// samples a second each, 2 gateways, an ingest double of its own. It runs
// once whatever b.N (go test -run '^$' -bench GatewayTierCPU -benchtime 1x).
func BenchmarkGatewayTierCPU(b *testing.B) {
	const window = 60 * time.Second
	type tier struct {
		name  string
		srv   *ingest.Server
		tr    *gatewayTier
		gws   []string
		ports []int
		procs []*testenv.Process
	}
	mk := func(name string, ips []string, today bool) *tier {
		srv := ingest.New(ingest.Config{Keys: []string{tierKey}})
		if err := srv.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(srv.Close)
		tr := newGatewayTier(b, srv)
		overlay := ""
		if today {
			overlay = writeFile(b, tr.dir, "gateway-today.yaml", `
extensions:
  file_storage:
    directory: ${env:NEXOVUE_STORAGE_DIR}
    create_directory: true
receivers:
  otlp:
    protocols:
      grpc:
        keepalive:
          server_parameters:
            max_connection_age: 8760h
exporters:
  nexovue:
    sending_queue:
      enabled: true
      storage: file_storage
service:
  extensions: [health_check, file_storage]
`)
		}
		ti := &tier{name: name, srv: srv, tr: tr, gws: ips}
		for _, ip := range ips {
			tr.startGateway(ip, overlay)
			ti.procs = append(ti.procs, tr.gws[ip].proc)
		}
		for i := range 2 {
			endpoint := ""
			if today {
				endpoint = fmt.Sprintf("%s:%d", ips[i], tr.port)
			}
			ports, procs := tr.startAgents(1, endpoint)
			ti.ports = append(ti.ports, ports...)
			ti.procs = append(ti.procs, procs...)
		}
		return ti
	}
	tiers := []*tier{
		mk("client-side balancing", []string{"127.0.0.2", "127.0.0.3"}, false),
		mk("today (pinned, gateway queue on disk)", []string{"127.0.0.4", "127.0.0.5"}, true),
	}
	cpu := func(ps []*testenv.Process) (agents, gateways time.Duration) {
		for i, p := range ps {
			st, err := testenv.ReadProcStat(p.Cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			if i < 2 {
				gateways += st.CPU
			} else {
				agents += st.CPU
			}
		}
		return
	}
	var loads []*tierLoad
	for _, ti := range tiers {
		loads = append(loads, startTierLoad(b, ti.ports, 1000, 200*time.Millisecond))
	}
	time.Sleep(10 * time.Second) // warm-up before the measuring window
	type snap struct {
		agents, gateways time.Duration
		accepted         int64
	}
	take := func() []snap {
		out := make([]snap, len(tiers))
		for i, ti := range tiers {
			a, g := cpu(ti.procs)
			out[i] = snap{a, g, ti.srv.SamplesAccepted()}
		}
		return out
	}
	before := take()
	time.Sleep(window) // the measuring window
	after := take()
	for _, l := range loads {
		l.stop()
		if err := l.err(); err != nil {
			b.Fatal(err)
		}
	}
	for i, ti := range tiers {
		n := float64(after[i].accepted - before[i].accepted)
		if n <= 0 {
			b.Fatalf("%s: nothing arrived in the window", ti.name)
		}
		per := func(d time.Duration) float64 { return float64(d.Milliseconds()) / (n / 10000) }
		b.Logf("%s: %.0f samples in %s; agents %.1f CPU ms per 10,000 samples, gateways %.1f",
			ti.name, n, window, per(after[i].agents-before[i].agents), per(after[i].gateways-before[i].gateways))
	}
}
