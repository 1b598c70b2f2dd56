package manifests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

const (
	defaultEndpoint = "${env:NEXOVUE_ENDPOINT:-https://ingest.nexovue.com}"
	keyFromEnv      = "${env:NEXOVUE_KEY}"
	// validateKey is a placeholder: validate needs a non-empty key, never a real one.
	validateKey = "validate-only-key"
)

// shippedConfig is one Collector config users get, as a file to validate.
type shippedConfig struct {
	name string
	path string
}

// shippedConfigs returns every config in distributions/otelcol-nexovue and
// every config embedded in a ConfigMap (written to a temporary file).
func shippedConfigs(t *testing.T) []shippedConfig {
	t.Helper()
	files, err := filepath.Glob(repoPath(t, "distributions", "otelcol-nexovue", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []shippedConfig
	for _, f := range files {
		out = append(out, shippedConfig{name: "distributions/otelcol-nexovue/" + filepath.Base(f), path: f})
	}
	for _, o := range manifests(t) {
		if o.Kind != "ConfigMap" {
			continue
		}
		cm := o.Obj.(*corev1.ConfigMap)
		data, ok := cm.Data["config.yaml"]
		if !ok {
			t.Fatalf("%s: ConfigMap %s has no config.yaml", o.File, o.Name)
		}
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, shippedConfig{name: o.File + " (ConfigMap " + o.Name + ")", path: p})
	}
	if len(out) < 6 {
		t.Fatalf("found only %d shipped configs: %v", len(out), out)
	}
	return out
}

func readConfig(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseConfig(t, path, data)
}

func parseConfig(t *testing.T, name string, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// get walks a parsed config by keys.
func get(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func strs(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func configMapConfig(t *testing.T, file, name string) map[string]any {
	t.Helper()
	cm := find[corev1.ConfigMap](t, manifests(t), file, "ConfigMap", name)
	return parseConfig(t, file, []byte(cm.Data["config.yaml"]))
}

// withoutK8sAttributes returns a deep copy of cfg without what the
// Kubernetes agent adds to the host's config, and nothing else: the
// k8s_attributes processor, its place in the profiles pipeline, and
// service_name's kubernetes naming, which must be on.
func withoutK8sAttributes(t *testing.T, cfg map[string]any) map[string]any {
	t.Helper()
	js, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := yaml.Unmarshal(js, &c); err != nil {
		t.Fatal(err)
	}
	delete(c["processors"].(map[string]any), "k8s_attributes")
	sn, _ := get(c, "processors", "service_name").(map[string]any)
	if want := map[string]any{"enabled": true, "use_labels": true}; !reflect.DeepEqual(sn["kubernetes"], want) {
		t.Errorf("service_name.kubernetes %v, want %v (the Kubernetes naming is on in the DaemonSet's config)", sn["kubernetes"], want)
	}
	delete(sn, "kubernetes")
	p := get(c, "service", "pipelines", "profiles").(map[string]any)
	p["processors"] = slices.DeleteFunc(p["processors"].([]any), func(x any) bool { return x == "k8s_attributes" })
	return c
}

func TestConfigMapsMatchShippedConfigs(t *testing.T) {
	for _, tc := range []struct {
		cmFile, cmName, shipped string
		k8s                     bool
	}{
		{agentDir + renderedBase, agentName, "agent.yaml", true},
		{gatewayDir + renderedBase, agentName, "agent-to-gateway.yaml", true},
		{gatewayDir + renderedBase, gatewayName, "gateway.yaml", false},
	} {
		t.Run(tc.cmFile, func(t *testing.T) {
			checkMatchesShipped(t, tc.cmFile, configMapConfig(t, tc.cmFile, tc.cmName), tc.shipped, tc.k8s)
		})
	}
}

// checkMatchesShipped fails the test unless cm, a ConfigMap's config, is
// distributions/otelcol-nexovue/<shipped> (with k8s: plus k8s_attributes
// right after memory_limiter and service_name's kubernetes naming).
func checkMatchesShipped(t *testing.T, what string, cm map[string]any, shipped string, k8s bool) {
	t.Helper()
	want := readConfig(t, repoPath(t, "distributions", "otelcol-nexovue", shipped))
	got := cm
	if k8s {
		procs := strs(get(cm, "service", "pipelines", "profiles", "processors"))
		if len(procs) < 2 || procs[0] != "memory_limiter" || procs[1] != "k8s_attributes" {
			t.Errorf("processors %v: want k8s_attributes right after memory_limiter", procs)
		}
		got = withoutK8sAttributes(t, cm)
	}
	if !reflect.DeepEqual(got, want) {
		gy, _ := yaml.Marshal(got)
		wy, _ := yaml.Marshal(want)
		t.Errorf("%s drifted from distributions/otelcol-nexovue/%s (k8s_attributes and service_name.kubernetes aside):\n--- ConfigMap\n%s\n--- %s\n%s", what, shipped, gy, shipped, wy)
	}
}

func checkNexovueExporter(t *testing.T, name string, cfg map[string]any, queue bool) {
	t.Helper()
	if got := get(cfg, "exporters", "nexovue", "endpoint"); got != defaultEndpoint {
		t.Errorf("%s: nexovue endpoint %v, want %s", name, got, defaultEndpoint)
	}
	if got := get(cfg, "exporters", "nexovue", "key"); got != keyFromEnv {
		t.Errorf("%s: nexovue key %v, want %s", name, got, keyFromEnv)
	}
	if queue {
		if got := get(cfg, "exporters", "nexovue", "sending_queue", "storage"); got != "queue_storage" {
			t.Errorf("%s: sending_queue.storage %v, want queue_storage (drains on a full disk, bounded in bytes)", name, got)
		}
		exts := strs(get(cfg, "service", "extensions"))
		if !slices.Contains(exts, "queue_storage") || !slices.Contains(exts, "health_check") {
			t.Errorf("%s: service.extensions %v, want health_check and queue_storage", name, exts)
		}
		checkQueueBounded(t, name, cfg)
	}
}

func TestShippedConfigsShape(t *testing.T) {
	dir := repoPath(t, "distributions", "otelcol-nexovue")
	pipeline := func(cfg map[string]any, part string) []string {
		return strs(get(cfg, "service", "pipelines", "profiles", part))
	}

	agent := readConfig(t, filepath.Join(dir, "agent.yaml"))
	if got := pipeline(agent, "receivers"); !slices.Equal(got, []string{"profiling"}) {
		t.Errorf("agent.yaml receivers %v", got)
	}
	if got := pipeline(agent, "processors"); !slices.Equal(got, []string{"memory_limiter", "span_links", "service_name", "symbolize", "frame_limit"}) {
		t.Errorf("agent.yaml processors %v, want memory_limiter, span_links, service_name, symbolize, frame_limit (no k8s_attributes on a plain host)", got)
	}
	if got := pipeline(agent, "exporters"); !slices.Equal(got, []string{"nexovue"}) {
		t.Errorf("agent.yaml exporters %v", got)
	}
	checkNexovueExporter(t, "agent.yaml", agent, true)

	k8s := configMapConfig(t, agentDir+renderedBase, agentName)
	if got := pipeline(k8s, "processors"); !slices.Equal(got, []string{"memory_limiter", "k8s_attributes", "span_links", "service_name", "symbolize", "frame_limit"}) {
		t.Errorf("Kubernetes agent processors %v", got)
	}
	if got := get(k8s, "processors", "k8s_attributes", "filter", "node_from_env_var"); got != nodeNameEnv {
		t.Errorf("k8s_attributes filter.node_from_env_var %v, want %s (set by the DaemonSet)", got, nodeNameEnv)
	}
	if got := get(k8s, "processors", "k8s_attributes", "auth_type"); got != "serviceAccount" {
		t.Errorf("k8s_attributes auth_type %v, want serviceAccount", got)
	}
	// The profiler labels samples with container.id; that is how they meet pods.
	assoc, _ := get(k8s, "processors", "k8s_attributes", "pod_association").([]any)
	if len(assoc) == 0 {
		t.Error("k8s_attributes has no pod_association")
	}
	js, _ := yaml.Marshal(assoc)
	if !strings.Contains(string(js), "name: container.id") || !strings.Contains(string(js), "from: resource_attribute") {
		t.Errorf("k8s_attributes pod_association %s: want resource_attribute container.id", js)
	}
	if !slices.Contains(strs(get(k8s, "processors", "k8s_attributes", "extract", "metadata")), "container.id") {
		t.Error("k8s_attributes extract.metadata lacks container.id, which association by container.id needs")
	}

	pprof := readConfig(t, filepath.Join(dir, "pprof.yaml"))
	if got := pipeline(pprof, "receivers"); !slices.Equal(got, []string{"pprof/heap", "pprof/cpu"}) {
		t.Errorf("pprof.yaml receivers %v, want pprof/heap, pprof/cpu", got)
	}
	if e, _ := get(pprof, "receivers", "pprof/heap", "remote", "endpoint").(string); !strings.HasSuffix(e, "/heap") {
		t.Errorf("pprof/heap endpoint %q", e)
	}
	if e, _ := get(pprof, "receivers", "pprof/cpu", "remote", "endpoint").(string); !strings.Contains(e, "/profile?seconds=") {
		t.Errorf("pprof/cpu endpoint %q", e)
	}
	if got := pipeline(pprof, "processors"); !slices.Equal(got, []string{"memory_limiter", "span_links", "resource", "frame_limit"}) {
		t.Errorf("pprof.yaml processors %v", got)
	}
	attrs, _ := get(pprof, "processors", "resource", "attributes").([]any)
	if len(attrs) != 1 || get(attrs[0].(map[string]any), "key") != "service.name" || get(attrs[0].(map[string]any), "action") != "upsert" {
		t.Errorf("pprof.yaml resource attributes %v: want one upsert of service.name", attrs)
	}
	checkNexovueExporter(t, "pprof.yaml", pprof, false)

	gw := readConfig(t, filepath.Join(dir, "gateway.yaml"))
	if got := pipeline(gw, "receivers"); !slices.Equal(got, []string{"otlp"}) {
		t.Errorf("gateway.yaml receivers %v", got)
	}
	checkNexovueExporter(t, "gateway.yaml", gw, false)
	// The gateway holds nothing an agent handed over (issue 31): no queue,
	// so an agent's request is answered once nexovue accepted it; agents
	// keep what failed in their own persistent queue.
	if got := get(gw, "exporters", "nexovue", "sending_queue", "enabled"); got != false {
		t.Errorf("gateway.yaml: sending_queue.enabled %v, want false (the agent keeps what is not delivered)", got)
	}
	if got := get(gw, "receivers", "otlp", "protocols", "grpc", "keepalive", "server_parameters", "max_connection_age"); got != "${env:NEXOVUE_OTLP_MAX_CONNECTION_AGE:-30s}" {
		t.Errorf("gateway.yaml: grpc max_connection_age %v: agents re-resolve the replicas only when a connection closes", got)
	}

	a2g := readConfig(t, filepath.Join(dir, "agent-to-gateway.yaml"))
	if got := pipeline(a2g, "exporters"); !slices.Equal(got, []string{"otlp_grpc/gateway"}) {
		t.Errorf("agent-to-gateway.yaml exporters %v", got)
	}
	if get(a2g, "exporters", "nexovue") != nil || strings.Contains(string(mustRead(t, filepath.Join(dir, "agent-to-gateway.yaml"))), keyFromEnv) {
		t.Error("agent-to-gateway.yaml must not hold the ingest key; the gateway does")
	}
	if got := get(a2g, "exporters", "otlp_grpc/gateway", "balancer_name"); got != "round_robin" {
		t.Errorf("agent-to-gateway.yaml: balancer_name %v, want round_robin (requests spread over every gateway)", got)
	}
	if got := get(a2g, "exporters", "otlp_grpc/gateway", "timeout"); got != fmt.Sprintf("%ds", agentGatewayTimeoutSeconds) {
		t.Errorf("agent-to-gateway.yaml: timeout %v, want %ds (the gateway's termination grace period is sized for it)", got, agentGatewayTimeoutSeconds)
	}
	if got := get(a2g, "exporters", "otlp_grpc/gateway", "sending_queue", "storage"); got != "queue_storage" {
		t.Errorf("agent-to-gateway.yaml: sending_queue.storage %v: the agent keeps what a gateway did not deliver, on queue_storage", got)
	}
	checkQueueBounded(t, "agent-to-gateway.yaml", a2g)
}

// checkQueueBounded: the queue's storage has its bound in bytes on disk
// set, with NEXOVUE_QUEUE_MAX_MIB to change it (issue 39).
func checkQueueBounded(t *testing.T, name string, cfg map[string]any) {
	t.Helper()
	got, _ := get(cfg, "extensions", "queue_storage", "max_size_mib").(string)
	if !strings.HasPrefix(got, "${env:NEXOVUE_QUEUE_MAX_MIB:-") {
		t.Errorf("%s: extensions.queue_storage.max_size_mib %q, want ${env:NEXOVUE_QUEUE_MAX_MIB:-<MiB>}", name, got)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// validate runs `<bin> validate --config <path> [args...]` with env.
func validate(t *testing.T, bin, path string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"validate", "--config", path}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestShippedConfigsValidate(t *testing.T) {
	bin := testenv.Binary(t)
	env := cleanEnv("NEXOVUE_KEY="+validateKey, nodeNameEnv+"=validate-node")
	for _, c := range shippedConfigs(t) {
		t.Run(c.name, func(t *testing.T) {
			out, err := validate(t, bin, c.path, env, testenv.FeatureGate)
			if err != nil {
				t.Fatalf("%s validate --config %s %s: %v\n%s", bin, c.name, testenv.FeatureGate, err, out)
			}
			if strings.Contains(out, validateKey) {
				t.Errorf("validate printed the ingest key:\n%s", out)
			}
		})
	}
}

// The validation above must be able to fail: the same binary rejects the
// agent's config without the feature gate, with a misspelt setting,
// without a key, and with its queue's bound at 0.
func TestValidateRejects(t *testing.T) {
	bin := testenv.Binary(t)
	agent := repoPath(t, "distributions", "otelcol-nexovue", "agent.yaml")
	env := cleanEnv("NEXOVUE_KEY=" + validateKey)

	if out, err := validate(t, bin, agent, env); err == nil || !strings.Contains(out, "service.profilesSupport") {
		t.Errorf("validate without %s: err=%v, want an error naming the gate (the docs say a profiles pipeline needs it):\n%s", testenv.FeatureGate, err, out)
	}

	misspelt := filepath.Join(t.TempDir(), "misspelt.yaml")
	data := strings.Replace(string(mustRead(t, agent)), "samples_per_second: 19", "samples_per_secnod: 19", 1)
	if err := os.WriteFile(misspelt, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := validate(t, bin, misspelt, env, testenv.FeatureGate); err == nil || !strings.Contains(out, "samples_per_secnod") {
		t.Errorf("validate of a misspelt setting: err=%v, want an error naming it:\n%s", err, out)
	}

	if out, err := validate(t, bin, agent, cleanEnv(), testenv.FeatureGate); err == nil || !strings.Contains(out, "NEXOVUE_KEY") {
		t.Errorf("validate without NEXOVUE_KEY: err=%v, want the exporter's error naming NEXOVUE_KEY:\n%s", err, out)
	}

	// The queue's bound out of range names its key's path.
	const bound = "extensions::queue_storage: max_size_mib: must be between 1 and 1048576, got 0"
	if out, err := validate(t, bin, agent, cleanEnv("NEXOVUE_KEY="+validateKey, "NEXOVUE_QUEUE_MAX_MIB=0"), testenv.FeatureGate); err == nil || !strings.Contains(out, bound) {
		t.Errorf("validate with NEXOVUE_QUEUE_MAX_MIB=0: err=%v, want %q:\n%s", err, bound, out)
	}

	// tls settings beside the mtls extension, which would replace them
	// without a word (converter/mtlsconverter): the shipped agent's
	// exporter with a ca_file, the gateway's receiver with a client_ca_file.
	for _, c := range []struct{ file, anchor, tls, want string }{
		{"agent-to-gateway.yaml", "    middlewares:\n      - id: mtls\n", "    tls:\n      ca_file: /etc/ca.crt\n",
			"exporters::otlp_grpc/gateway::tls::ca_file: set beside the mtls extension in exporters::otlp_grpc/gateway::middlewares"},
		{"gateway.yaml", "        middlewares:\n          - id: mtls\n", "        tls:\n          client_ca_file: /etc/ca.crt\n",
			"receivers::otlp::protocols::grpc::tls::client_ca_file: set beside the mtls extension in receivers::otlp::protocols::grpc::middlewares"},
	} {
		shipped := string(mustRead(t, repoPath(t, "distributions", "otelcol-nexovue", c.file)))
		if strings.Count(shipped, c.anchor) != 1 {
			t.Fatalf("%s: want its mtls middlewares once, as %q", c.file, c.anchor)
		}
		both := filepath.Join(t.TempDir(), c.file)
		if err := os.WriteFile(both, []byte(strings.Replace(shipped, c.anchor, c.tls+c.anchor, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := validate(t, bin, both, env, testenv.FeatureGate); err == nil || !strings.Contains(out, c.want) {
			t.Errorf("validate of %s with tls beside mtls: err=%v, want %q:\n%s", c.file, err, c.want, out)
		}
	}
}
