// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/nexovue/otelcol-nexovue/tests/ingest"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// keptBodies is how many accepted bodies the doubles of these tests keep.
const keptBodies = 64

// TestLiteralAttributesEBPF runs the shipped agent (real eBPF profiler,
// service_name, the nexovue exporter) with attribute_encoding: literal: every
// request the double accepts, decoded with the protos Grafana Pyroscope
// compiles against, has literal non-empty keys on every resource and scope
// attribute, and none is refused.
func TestLiteralAttributesEBPF(t *testing.T) {
	t.Parallel() // see main_test.go
	root := testenv.RepoRoot(t)
	srv := ingest.StartForTest(t, ingest.Config{Keys: []string{testKey}, KeepBodies: keptBodies})
	sent := int64(-1)
	figures(t, "literal-ebpf", srv, &sent)

	service := fmt.Sprintf("nxv-literal-%d", os.Getpid())
	burner := testenv.BuildGo(t, filepath.Join(root, "tests", "smoke", "testdata", "smokeburner"), "nxv-literal")
	// Until the test ends (at most 15 min, not its default 2): the agent
	// may wait for other tests' agents to start (startEBPFCollector).
	testenv.Start(t, []string{"OTEL_SERVICE_NAME=" + service}, "nice", "-n", "10", burner, "900")

	dir := t.TempDir()
	overlay := writeFile(t, dir, "overlay.yaml", `
receivers:
  profiling:
    reporter_interval: 2s
exporters:
  nexovue:
    attribute_encoding: literal
`)
	startEBPFCollector(t, filepath.Join(root, "distributions", "otelcol-nexovue", "agent.yaml"), testenv.CollectorOptions{
		Env: agentEnv(t, srv.URL(), dir), Args: []string{"--config", overlay, testenv.FeatureGate},
	})

	testenv.WaitFor(t, 3*time.Minute, service+" with "+hotFunction+" and 3 accepted requests at the double", func() (bool, error) {
		return hasFunction(srv.TopLeafFunctions(service, 5), hotFunction) && len(srv.AcceptedBodies()) >= 3, nil
	})
	requireLiteralRequests(t, "literal-ebpf", srv, service)
}

// TestLiteralAttributesPprof runs the docs' pprof config (heap and CPU
// receivers, resource processor) with the nexovue exporter and
// attribute_encoding: literal in place of otlphttp/nexovue, with the checks
// of TestPprofDocsConfig and of TestLiteralAttributesEBPF.
func TestLiteralAttributesPprof(t *testing.T) {
	t.Parallel() // see main_test.go
	srv := pprofEndToEnd(t, "literal-pprof", filepath.Join("tests", "testdata", "pprof-docs.yaml"), func(target, ingestURL, sink string) (string, []string) {
		return docsReceivers(target) + fmt.Sprintf(`
exporters:
  nexovue:
    endpoint: %[1]s
    key: ${env:NEXOVUE_KEY}
    attribute_encoding: literal
  file/e2e:
    path: %[2]s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [pprof, pprof/cpu]
      exporters: [nexovue, file/e2e]
`, ingestURL, sink), collectorEnv(testKey)
	})
	requireLiteralRequests(t, "literal-pprof", srv, "checkout")
}

// decodedRequest is one line of tests/e2e/testdata/otlpdecode's output.
type decodedRequest struct {
	File       string `json:"file"`
	Error      string `json:"error"`
	Attributes []struct {
		At          string `json:"at"`
		Key         string `json:"key"`
		KeyStrindex int32  `json:"key_strindex"`
		ValueKind   string `json:"value_kind"`
		Value       string `json:"value"`
	} `json:"attributes"`
	Samples int `json:"samples"`
}

// requireLiteralRequests checks what the double accepted: no request was
// refused, and every accepted body (the first keptBodies), decoded with
// go.opentelemetry.io/proto/otlp v1.10.0 (otlpdecode), has a literal
// non-empty key and no string reference on every resource and scope
// attribute, and service.name literally on the service's resources. It logs
// the bytes per sample after gzip of those same batches in both encodings.
func requireLiteralRequests(t *testing.T, name string, srv *ingest.Server, service string) {
	t.Helper()
	// Built first: the bodies accepted meanwhile are checked too.
	decoder := testenv.BuildGo(t, filepath.Join(testenv.RepoRoot(t), "tests", "e2e", "testdata", "otlpdecode"), "otlpdecode")
	bodies := srv.AcceptedBodies()
	require.NotEmpty(t, bodies)
	for status, n := range srv.Stats().RequestsByStatus {
		if status != http.StatusOK {
			logRecent(t, srv.Stats().Recent)
			t.Fatalf("the double answered %d request(s) with %d", n, status)
		}
	}
	dir := t.TempDir()
	files := make([]string, len(bodies))
	for i, b := range bodies {
		files[i] = writeFile(t, dir, fmt.Sprintf("request-%03d.pb", i), string(b))
	}
	out, err := exec.Command(decoder, files...).Output()
	require.NoError(t, err, "otlpdecode")
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	require.True(t, sc.Scan(), "otlpdecode printed nothing")
	var modules struct {
		Versions map[string]string `json:"proto_modules"`
	}
	require.NoError(t, json.Unmarshal(sc.Bytes(), &modules))
	require.Equal(t, "v1.10.0", modules.Versions["go.opentelemetry.io/proto/otlp"], "decoded with %v", modules.Versions)

	decoded, attrs, named := 0, 0, 0
	for sc.Scan() {
		var r decodedRequest
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		require.Empty(t, r.Error, "%s does not decode", r.File)
		for _, a := range r.Attributes {
			require.NotEmpty(t, a.Key, "%s: %s has an attribute without a literal key (key_strindex %d)", r.File, a.At, a.KeyStrindex)
			require.Zero(t, a.KeyStrindex, "%s: %s.%s has a key_strindex", r.File, a.At, a.Key)
			require.NotEqual(t, "string_value_strindex", a.ValueKind, "%s: %s.%s is a string reference", r.File, a.At, a.Key)
			if a.Key == "service.name" && a.Value == service && strings.HasSuffix(a.At, ".resource") {
				named++
			}
		}
		attrs += len(r.Attributes)
		decoded++
	}
	require.NoError(t, sc.Err())
	require.Equal(t, len(bodies), decoded)
	require.Positive(t, named, "no resource with service.name=%q in the decoded requests", service)

	// The same batches in both encodings: as sent (literal), and as pdata
	// writes them (string_table references), gzipped at the default level.
	var literal, table, samples int
	for _, b := range bodies {
		req := pprofileotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(b))
		ref, err := req.MarshalProto()
		require.NoError(t, err)
		literal += gzipLen(t, b)
		table += gzipLen(t, ref)
		samples += req.Profiles().SampleCount()
	}
	t.Logf("e2e %s: requests=%d attributes=%d all literal; bytes/sample after gzip over %d samples: string_table=%.2f literal=%.2f (%+.1f%%)",
		name, decoded, attrs, samples, float64(table)/float64(samples), float64(literal)/float64(samples),
		100*(float64(literal)-float64(table))/float64(table))
}

func gzipLen(t *testing.T, b []byte) int {
	t.Helper()
	z, err := ingest.Compress(b, "gzip")
	require.NoError(t, err)
	return len(z)
}
