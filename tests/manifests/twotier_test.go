package manifests

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// TestTwoTierTopology runs the shipped gateway.yaml and agent-to-gateway.yaml
// as they are, on loopback: the agent profiles this host and exports OTLP to
// the gateway, which alone holds the key and sends to the ingest double.
func TestTwoTierTopology(t *testing.T) {
	const service = "two-tier-check"
	const key = "two-tier-test-key"
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{key}})

	dir := repoPath(t, "distributions", "otelcol-nexovue")
	grpc := testenv.FreeAddr(t)
	own := func() []string { // what each collector needs of its own on one host
		return []string{
			"NEXOVUE_STORAGE_DIR=" + t.TempDir(),
			"NEXOVUE_HEALTH_ENDPOINT=" + testenv.FreeAddr(t),
			"NEXOVUE_METRICS_HOST=127.0.0.1",
			"NEXOVUE_METRICS_PORT=" + strconv.Itoa(testenv.FreePort(t)),
		}
	}
	gwTLS, agentTLS := testenv.GatewayTLS(t) // mutual TLS, as shipped
	testenv.StartCollector(t, dir+"/gateway.yaml", testenv.CollectorOptions{Env: append(append(own(),
		"NEXOVUE_KEY="+key,
		"NEXOVUE_ENDPOINT="+srv.URL(),
		"NEXOVUE_OTLP_GRPC_ENDPOINT="+grpc,
	), gwTLS...)})

	burner := testenv.BuildGo(t, repoPath(t, "tests", "container", "testdata", "cpuburner"), "cpuburner")
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + service}, burner, "-for", "2m")

	testenv.StartCollector(t, dir+"/agent-to-gateway.yaml", testenv.CollectorOptions{EBPF: true, Env: append(append(own(),
		"NEXOVUE_KEY=", // the agent has none
		"NEXOVUE_GATEWAY_ENDPOINT="+grpc,
	), agentTLS...)})

	testenv.WaitFor(t, 90*time.Second, service+"'s profiles through the gateway", func() (bool, error) {
		return srv.ServiceSamples()[service] > 0, nil
	})
	if n := srv.Requests(http.StatusUnauthorized); n > 0 {
		t.Errorf("the ingest double answered 401 %d times", n)
	}
	t.Logf("services through the gateway: %v", srv.ServiceSamples())
}
