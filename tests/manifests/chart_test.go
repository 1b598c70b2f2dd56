package manifests

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// The chart's tests (charts/otelcol-nexovue): each values set (the default
// and every ci/*-values.yaml) rendered by the helm of `make helm`, as
// release chartRelease in namespace chartNamespace, the names of the
// README's install line.
const (
	chartRelease   = "otelcol-nexovue"
	chartNamespace = "otelcol-nexovue"
	chartAgent     = "otelcol-nexovue-agent"
	chartGateway   = "otelcol-nexovue-gateway"
	// secretMarker stands for an ingest key: it must appear in no rendered
	// object but a Secret.
	secretMarker = "nexovue-key-MARKER-7f3a9c"
)

var updateGolden = flag.Bool("update", false, "write the chart's golden renderings (testdata/chart/) instead of comparing (make manifests does)")

// renderSet renders one values set with extra helm arguments.
func renderSet(t *testing.T, set testenv.ValuesSet, extra ...string) string {
	t.Helper()
	return testenv.RenderChart(t, chartRelease, chartNamespace, append(set.Args(), extra...)...)
}

func TestChartAppVersionIsTheCollectors(t *testing.T) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(mustRead(t, repoPath(t, testenv.Chart, "Chart.yaml")), &chart); err != nil {
		t.Fatal(err)
	}
	if want := distVersion(t); chart.AppVersion != want {
		t.Errorf("Chart.yaml appVersion %q, want dist.version of builder-config.yaml, %q", chart.AppVersion, want)
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal(mustRead(t, repoPath(t, testenv.Chart, "values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Repository != imageRepo(t) || values.Image.Tag != "" {
		t.Errorf("values image %+v: want repository %s (IMAGE in distributions/dist.mk) and no tag (appVersion)", values.Image, imageRepo(t))
	}
}

// The chart's configs start from copies of the shipped ones (Helm reads no
// file outside the chart): they must be the same bytes.
func TestChartConfigsAreTheShippedConfigs(t *testing.T) {
	for _, f := range []struct{ dir, name string }{
		{"otelcol-nexovue", "agent.yaml"}, {"otelcol-nexovue", "agent-to-gateway.yaml"}, {"otelcol-nexovue", "gateway.yaml"},
		{"monitoring", "otelcol-nexovue-rules.yaml"}, {"monitoring", "otelcol-nexovue-dashboard.json"},
	} {
		chart := mustRead(t, repoPath(t, testenv.Chart, "files", f.name))
		shipped := mustRead(t, repoPath(t, "distributions", f.dir, f.name))
		if !bytes.Equal(chart, shipped) {
			t.Errorf("%s/files/%s differs from distributions/%s/%s: run `make manifests` (edit the one in distributions/)", testenv.Chart, f.name, f.dir, f.name)
		}
	}
}

// With the default values, the configs the chart renders are the shipped
// ones (the agent's with k8s_attributes): the values only change what they
// name.
func TestChartConfigsMatchShippedConfigs(t *testing.T) {
	for _, tc := range []struct {
		set, configMap, shipped string
		k8s                     bool
	}{
		{"default", chartAgent, "agent.yaml", true},
		{"gateway", chartAgent, "agent-to-gateway.yaml", true},
		{"gateway", chartGateway, "gateway.yaml", false},
	} {
		t.Run(tc.set+"/"+tc.configMap, func(t *testing.T) {
			cm := find[corev1.ConfigMap](t, chartObjects(t, chartSet(t, tc.set)), "", "ConfigMap", tc.configMap)
			checkMatchesShipped(t, "values set "+tc.set+": ConfigMap "+tc.configMap, parseConfig(t, tc.configMap, []byte(cm.Data["config.yaml"])), tc.shipped, tc.k8s)
		})
	}
}

func TestChartLint(t *testing.T) {
	for _, set := range testenv.ChartValuesSets(t) {
		t.Run(set.Name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", testenv.Chart, "--kube-version", testenv.KubeVersion, "--namespace", chartNamespace}, set.Args()...)
			out, errs, err := testenv.RunHelm(t, nil, args...)
			if err != nil || !strings.Contains(out, "0 chart(s) failed") {
				t.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, errs)
			}
		})
	}
}

// TestChartRenderingIsGolden compares each values set's rendering with its
// golden file (testdata/chart/<set>.yaml, written by `make manifests`), and
// decodes it strictly.
func TestChartRenderingIsGolden(t *testing.T) {
	for _, set := range testenv.ChartValuesSets(t) {
		t.Run(set.Name, func(t *testing.T) {
			rendered := renderSet(t, set)
			// The chart's generated certificates are new at each rendering:
			// the golden file holds a placeholder for each (checked by
			// TestChartGeneratedCertificates).
			got := generatedTLSData.ReplaceAllString(rendered, "${1}${2}<generated>")
			golden := filepath.Join("testdata", "chart", set.Name+".yaml")
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v: run `make manifests`", err)
			}
			if got != string(want) {
				t.Errorf("the rendering of values set %s differs from tests/manifests/%s: run `make manifests` and review the diff", set.Name, golden)
			}
			objs, err := decodeDocuments("helm template "+set.Name, []byte(rendered))
			if err != nil {
				t.Fatal(err)
			}
			// Helm v4 waits on hooks: none may need a kubelet, so there is none.
			if strings.Contains(got, "helm.sh/hook") {
				t.Error("the chart renders a hook")
			}
			t.Logf("values set %s: %d objects", set.Name, len(objs))
		})
	}
}

// generatedTLSData matches the data lines of the Secrets of the chart's
// generated certificates (templates/tls.yaml) and their expiry
// annotations, up to their value.
var generatedTLSData = regexp.MustCompile(`(?m)^(  (?:tls\.crt|tls\.key|ca\.crt): )LS0t[A-Za-z0-9+/=]+$|^(    otelcol-nexovue/not-after: )"[0-9TZ:-]+"$`)

// chartObjects renders and decodes one values set.
func chartObjects(t *testing.T, set testenv.ValuesSet, extra ...string) []object {
	t.Helper()
	objs, err := decodeDocuments("helm template "+set.Name, []byte(renderSet(t, set, extra...)))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func chartSet(t *testing.T, name string) testenv.ValuesSet {
	t.Helper()
	for _, s := range testenv.ChartValuesSets(t) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no values set %s in %s/ci", name, testenv.Chart)
	return testenv.ValuesSet{}
}

// What each values set must render: the agent as the kustomize bases have
// it, the gateway tier, the team keys, least privilege or privileged, the
// view.
func TestChartRenderedObjects(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		objs := chartObjects(t, chartSet(t, "default"))
		ds := find[appsv1.DaemonSet](t, objs, "", "DaemonSet", chartAgent)
		checkCollectorContainer(t, "agent", &ds.Spec.Template.Spec, chartAgent, true)
		sc := container(t, &ds.Spec.Template.Spec).SecurityContext
		if sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("the default agent's security context %+v: want least privilege", sc)
		}
		if !ds.Spec.Template.Spec.HostPID {
			t.Error("no hostPID")
		}
	})
	t.Run("privileged", func(t *testing.T) {
		ds := find[appsv1.DaemonSet](t, chartObjects(t, chartSet(t, "privileged")), "", "DaemonSet", chartAgent)
		if sc := container(t, &ds.Spec.Template.Spec).SecurityContext; sc.Privileged == nil || !*sc.Privileged {
			t.Errorf("security context %+v: want privileged", sc)
		}
	})
	t.Run("gateway", func(t *testing.T) {
		objs := chartObjects(t, chartSet(t, "gateway"))
		ds := find[appsv1.DaemonSet](t, objs, "", "DaemonSet", chartAgent)
		checkCollectorContainer(t, "agent", &ds.Spec.Template.Spec, chartAgent, false)
		want := "dns:///" + chartGateway + "-headless." + chartNamespace + ".svc:4317"
		if gw := envVar(container(t, &ds.Spec.Template.Spec), gatewayEnvVar); gw == nil || gw.Value != want {
			t.Errorf("agent %s = %+v, want %s", gatewayEnvVar, gw, want)
		}
		dep := find[appsv1.Deployment](t, objs, "", "Deployment", chartGateway)
		c := checkCollectorContainer(t, "gateway", &dep.Spec.Template.Spec, chartGateway, true)
		checkGatewayScaling(t, objs, dep, c)
		find[corev1.Service](t, objs, "", "Service", chartGateway+"-headless")
	})
	t.Run("multi-key", func(t *testing.T) {
		objs := chartObjects(t, chartSet(t, "multi-key"))
		ds := find[appsv1.DaemonSet](t, objs, "", "DaemonSet", chartAgent)
		v := volume(&ds.Spec.Template.Spec, "team-keys")
		if v == nil || v.Projected == nil || len(v.Projected.Sources) != 2 {
			t.Fatalf("team-keys volume %+v: want one projected Secret per rule", v)
		}
		for i, team := range []string{"payments", "search"} {
			s := v.Projected.Sources[i].Secret
			if s == nil || s.Name != "nexovue-ingest-key-"+team || len(s.Items) != 1 || s.Items[0].Path != team {
				t.Errorf("team-keys source %d: %+v, want Secret nexovue-ingest-key-%s as file %s", i, s, team, team)
			}
		}
		cfg := parseConfig(t, "agent", []byte(find[corev1.ConfigMap](t, objs, "", "ConfigMap", chartAgent).Data["config.yaml"]))
		rules, _ := get(cfg, "exporters", "nexovue", "routing", "rules").([]any)
		if len(rules) != 2 || get(rules[0].(map[string]any), "key_file") != "/etc/nexovue/keys/payments" {
			t.Errorf("routing rules %v: want payments then search, each reading its key file", rules)
		}
	})
	t.Run("view", func(t *testing.T) {
		objs := chartObjects(t, chartSet(t, "view"))
		ds := find[appsv1.DaemonSet](t, objs, "", "DaemonSet", chartAgent)
		tok := envVar(container(t, &ds.Spec.Template.Spec), "NEXOVUE_VIEW_TOKEN")
		if tok == nil || tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil || tok.ValueFrom.SecretKeyRef.Name != "nexovue-view-token" {
			t.Errorf("NEXOVUE_VIEW_TOKEN %+v: want it from Secret nexovue-view-token", tok)
		}
		cfg := parseConfig(t, "agent", []byte(find[corev1.ConfigMap](t, objs, "", "ConfigMap", chartAgent).Data["config.yaml"]))
		if get(cfg, "exporters", "profileview", "auth", "authenticator") != "bearertokenauth/view" {
			t.Errorf("profileview %v: want bearertokenauth/view in front", get(cfg, "exporters", "profileview"))
		}
		if get(cfg, "receivers", "profiling", "off_cpu_threshold") == nil || get(cfg, "processors", "symbolize", "debuginfod", "urls") == nil {
			t.Error("off-CPU or debuginfod is not on")
		}
	})
	t.Run("profile-metrics", func(t *testing.T) {
		cm := find[corev1.ConfigMap](t, chartObjects(t, chartSet(t, "profile-metrics")), "", "ConfigMap", chartAgent)
		checkMetricsPipelines(t, parseConfig(t, "agent", []byte(cm.Data["config.yaml"])))
	})
	t.Run("network policies", func(t *testing.T) {
		objs := chartObjects(t, chartSet(t, "gateway"),
			"--set-json", `networkPolicy.allowIngressFrom=[{"namespaceSelector":{"matchLabels":{"team":"obs"}}}]`,
			"--set-json", `networkPolicy.extraIngressRules=[{"ports":[{"port":9999}]}]`)
		gw := find[networkingv1.NetworkPolicy](t, objs, "", "NetworkPolicy", chartGateway)
		if len(gw.Spec.Ingress) != 3 || len(gw.Spec.Ingress[0].From) != 2 ||
			gw.Spec.Ingress[0].From[0].PodSelector.MatchLabels["app.kubernetes.io/component"] != "agent" ||
			gw.Spec.Ingress[0].From[1].NamespaceSelector.MatchLabels["team"] != "obs" {
			t.Errorf("gateway NetworkPolicy ingress %+v: want OTLP from the agents and allowIngressFrom, metrics, then the extra rule", gw.Spec.Ingress)
		}
		agent := find[networkingv1.NetworkPolicy](t, objs, "", "NetworkPolicy", chartAgent)
		if n := len(agent.Spec.Ingress); n != 2 || agent.Spec.Ingress[1].Ports[0].Port.IntValue() != 9999 {
			t.Errorf("agent NetworkPolicy ingress %+v: want metrics, then the extra rule", agent.Spec.Ingress)
		}
	})
	t.Run("monitors", func(t *testing.T) {
		// The Prometheus Operator's kinds, which the strict decoder does not
		// know: read generically.
		out := renderSet(t, chartSet(t, "gateway"), "--set", "podMonitor.enabled=true", "--set", "serviceMonitor.enabled=true")
		kinds := map[string]map[string]any{}
		var metricsPort bool
		for _, doc := range docSeparator.Split(out, -1) {
			var o map[string]any
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatal(err)
			}
			switch k, _ := o["kind"].(string); k {
			case "PodMonitor", "ServiceMonitor":
				kinds[k] = o
			case "Service":
				if get(o, "metadata", "name") == chartGateway {
					ports, _ := get(o, "spec", "ports").([]any)
					metricsPort = slices.ContainsFunc(ports, func(p any) bool { return get(p.(map[string]any), "name") == "metrics" })
				}
			}
		}
		if get(kinds["PodMonitor"], "spec", "podMetricsEndpoints") == nil || get(kinds["ServiceMonitor"], "spec", "endpoints") == nil {
			t.Fatalf("want a PodMonitor and a ServiceMonitor with endpoints, got %v", kinds)
		}
		if !metricsPort {
			t.Error("with serviceMonitor on, the gateway's Service lists no metrics port")
		}
	})
	t.Run("alert rules and dashboard", func(t *testing.T) {
		// The PrometheusRule's spec is the rules file (promtool checks it
		// as rendered), the dashboard's ConfigMap holds the dashboard, with
		// the sidecar's label; neither is there by default.
		out := renderSet(t, chartSet(t, "gateway"), "--set", "prometheusRule.enabled=true", "--set", "dashboards.enabled=true",
			"--set", "prometheusRule.extraLabels.release=kube-prometheus")
		var rule, dash map[string]any
		for _, doc := range docSeparator.Split(out, -1) {
			var o map[string]any
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatal(err)
			}
			switch get(o, "kind") {
			case "PrometheusRule":
				rule = o
			case "ConfigMap":
				if get(o, "metadata", "name") == chartRelease+"-dashboard" {
					dash = o
				}
			}
		}
		if rule == nil || dash == nil {
			t.Fatalf("want a PrometheusRule and the dashboard's ConfigMap, got rule %v, dashboard %v", rule != nil, dash != nil)
		}
		var shipped map[string]any
		if err := yaml.Unmarshal(mustRead(t, repoPath(t, "distributions", "monitoring", "otelcol-nexovue-rules.yaml")), &shipped); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rule["spec"], shipped) {
			t.Errorf("the PrometheusRule's spec differs from distributions/monitoring/otelcol-nexovue-rules.yaml")
		}
		if get(rule, "metadata", "labels", "release") != "kube-prometheus" {
			t.Errorf("prometheusRule.extraLabels not on the PrometheusRule: %v", get(rule, "metadata", "labels"))
		}
		spec, err := yaml.Marshal(rule["spec"])
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "rendered-rules.yaml")
		if err := os.WriteFile(path, spec, 0o600); err != nil {
			t.Fatal(err)
		}
		checkRules(t, path)
		dashboard := strings.TrimRight(string(mustRead(t, repoPath(t, "distributions", "monitoring", "otelcol-nexovue-dashboard.json"))), "\n")
		if get(dash, "data", "otelcol-nexovue-dashboard.json") != dashboard {
			t.Errorf("the dashboard's ConfigMap does not hold distributions/monitoring/otelcol-nexovue-dashboard.json")
		}
		if get(dash, "metadata", "labels", "grafana_dashboard") != "1" {
			t.Errorf("the dashboard's ConfigMap lacks the sidecar's label grafana_dashboard: \"1\": %v", get(dash, "metadata", "labels"))
		}
		for _, doc := range docSeparator.Split(renderSet(t, chartSet(t, "gateway")), -1) {
			if strings.Contains(doc, "kind: PrometheusRule") || strings.Contains(doc, chartRelease+"-dashboard") {
				t.Errorf("rendered by default:\n%s", doc)
			}
		}
	})
	t.Run("view on the network without a token", func(t *testing.T) {
		_, errs, err := testenv.RunHelm(t, nil, "template", chartRelease, testenv.Chart, "--kube-version", testenv.KubeVersion,
			"--set", "agent.view.enabled=true", "--set", "agent.view.endpoint=0.0.0.0:4390")
		if err == nil || !strings.Contains(errs, "agent.view.bearerToken.existingSecret") {
			t.Errorf("a view on 0.0.0.0 without a token: want an error naming agent.view.bearerToken.existingSecret, got %v\n%s", err, errs)
		}
	})
	t.Run("routing with the gateway tier", func(t *testing.T) {
		_, errs, err := testenv.RunHelm(t, nil, "template", chartRelease, testenv.Chart, "--kube-version", testenv.KubeVersion,
			"-f", chartSet(t, "gateway").File, "-f", chartSet(t, "multi-key").File)
		if err == nil || !strings.Contains(errs, "nexovue.routing.rules cannot be used with gateway.enabled") {
			t.Errorf("routing rules with the gateway tier (whose config has no sending queue, which routing needs): want an error naming both values, got %v\n%s", err, errs)
		}
	})
	t.Run("config merged", func(t *testing.T) {
		objs := chartObjects(t, chartSet(t, "default"), "--set", "agent.config.processors.memory_limiter.check_interval=2s",
			"--set", "agent.config.exporters.debug.verbosity=basic")
		cfg := parseConfig(t, "agent", []byte(find[corev1.ConfigMap](t, objs, "", "ConfigMap", chartAgent).Data["config.yaml"]))
		if get(cfg, "processors", "memory_limiter", "check_interval") != "2s" || get(cfg, "processors", "memory_limiter", "limit_percentage") == nil ||
			get(cfg, "exporters", "debug", "verbosity") != "basic" || get(cfg, "exporters", "nexovue") == nil {
			t.Errorf("agent.config was not merged over the rendered config: %v", cfg)
		}
	})
}

// TestChartCollectorConfigsValidate: every collector config the chart
// renders, for every values set, passes `otelcol-nexovue validate`.
func TestChartCollectorConfigsValidate(t *testing.T) {
	bin := testenv.Binary(t)
	env := cleanEnv("NEXOVUE_KEY="+validateKey, nodeNameEnv+"=validate-node", "NEXOVUE_VIEW_TOKEN=validate-only-token")
	n := 0
	for _, set := range testenv.ChartValuesSets(t) {
		for _, o := range chartObjects(t, set) {
			if o.Kind != "ConfigMap" {
				continue
			}
			n++
			t.Run(set.Name+"/"+o.Name, func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "config.yaml")
				if err := os.WriteFile(p, []byte(o.Obj.(*corev1.ConfigMap).Data["config.yaml"]), 0o600); err != nil {
					t.Fatal(err)
				}
				if out, err := validate(t, bin, p, env, testenv.FeatureGate); err != nil {
					t.Fatalf("validate the %s config of values set %s: %v\n%s", o.Name, set.Name, err, out)
				}
			})
		}
	}
	if n < 6 {
		t.Errorf("validated %d rendered configs, want one per agent and gateway of each set", n)
	}
}

// TestChartSchemaRejects: values.schema.json makes helm fail, naming the
// value's path, on a wrong type, an unknown key under our sections and a
// routing rule without its key's Secret.
func TestChartSchemaRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"wrong type", []string{"agent.samplesPerSecond=many"}, "at '/agent/samplesPerSecond': got string, want integer"},
		{"unknown key", []string{"nexovue.samplesPerSecnd=100"}, "at '/nexovue': additional properties 'samplesPerSecnd' not allowed"},
		{"unknown key in the gateway", []string{"gateway.autoscaling.maxReplica=3"}, "at '/gateway/autoscaling': additional properties 'maxReplica' not allowed"},
		{"unknown key under tls", []string{"tls.certManager.issuer=corp"}, "at '/tls/certManager': additional properties 'issuer' not allowed"},
		{"API server port not a number", []string{"networkPolicy.apiServer.ports[0]=https"}, "at '/networkPolicy/apiServer/ports/0': got string, want integer"},
		{"routing rule without key", []string{"nexovue.routing.rules[0].name=payments", "nexovue.routing.rules[0].values[0]=payments"},
			"at '/nexovue/routing/rules/0': missing property 'existingSecret'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", chartRelease, testenv.Chart, "--kube-version", testenv.KubeVersion}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, errs, err := testenv.RunHelm(t, nil, args...)
			if err == nil || !strings.Contains(errs, tc.want) {
				t.Errorf("helm %s: want an error with %q, got %v\n%s", strings.Join(args, " "), tc.want, err, errs)
			}
		})
	}
}

// TestChartKeyOnlyInSecret renders every values set with a marker given as
// the key (nexovue.key) and looks for it in every object but the Secret
// that must hold it, and in the NOTES of an install (dry run).
func TestChartKeyOnlyInSecret(t *testing.T) {
	for _, set := range testenv.ChartValuesSets(t) {
		t.Run(set.Name, func(t *testing.T) {
			rendered := renderSet(t, set, "--set", "nexovue.key="+secretMarker)
			objs, err := decodeDocuments("helm template "+set.Name, []byte(rendered))
			if err != nil {
				t.Fatal(err)
			}
			held := false
			for _, o := range objs {
				js, err := yaml.Marshal(o.Obj)
				if err != nil {
					t.Fatal(err)
				}
				if o.Kind == "Secret" {
					held = held || string(o.Obj.(*corev1.Secret).Data["key"]) == secretMarker
					continue
				}
				if strings.Contains(string(js), secretMarker) {
					t.Errorf("%s %s holds the key", o.Kind, o.Name)
				}
			}
			if !held {
				t.Error("no Secret holds the key given as nexovue.key")
			}
			// The whole text too (comments), less the Secret's documents.
			for _, doc := range docSeparator.Split(rendered, -1) {
				if !strings.Contains(doc, "\nkind: Secret\n") && strings.Contains(doc, secretMarker) {
					t.Errorf("a rendered document holds the key:\n%s", doc)
				}
			}
			args := append([]string{"install", chartRelease, testenv.Chart, "--dry-run=client", "--hide-secret", "--namespace", chartNamespace,
				"--set", "nexovue.key=" + secretMarker}, set.Args()...)
			out, errs, err := testenv.RunHelm(t, nil, args...)
			if err != nil || !strings.Contains(out, "NOTES:") {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, errs)
			}
			if strings.Contains(out+errs, secretMarker) {
				t.Errorf("helm install --dry-run --hide-secret printed the key (NOTES or an object):\n%s", out)
			}
		})
	}
}

// TestChartChecksumsFollowConfigAndSecret: a change of the rendered config
// or of the key changes the pods' checksum annotations (what rolls them).
func TestChartChecksumsFollowConfigAndSecret(t *testing.T) {
	set := chartSet(t, "gateway")
	annotations := func(extra ...string) (agent, gateway map[string]string) {
		objs := chartObjects(t, set, extra...)
		return find[appsv1.DaemonSet](t, objs, "", "DaemonSet", chartAgent).Spec.Template.Annotations,
			find[appsv1.Deployment](t, objs, "", "Deployment", chartGateway).Spec.Template.Annotations
	}
	a0, g0 := annotations("--set", "nexovue.key=first")
	a1, g1 := annotations("--set", "nexovue.key=first", "--set", "agent.samplesPerSecond=29", "--set", "nexovue.samplesPerSecond=15000")
	a2, g2 := annotations("--set", "nexovue.key=second")
	for what, pair := range map[string][2]string{
		"agent config after agent.samplesPerSecond":     {a0["checksum/config"], a1["checksum/config"]},
		"gateway config after nexovue.samplesPerSecond": {g0["checksum/config"], g1["checksum/config"]},
		"gateway secrets after a new nexovue.key":       {g0["checksum/secrets"], g2["checksum/secrets"]},
	} {
		if pair[0] == "" || pair[0] == pair[1] {
			t.Errorf("%s: checksum %q then %q, want a change", what, pair[0], pair[1])
		}
	}
	if g0["checksum/config"] != g2["checksum/config"] || a0["checksum/config"] != a2["checksum/config"] {
		t.Error("a new key changed a config checksum: is the key in a ConfigMap?")
	}
}

// basesNamespace is the namespace of the kustomize bases.
const basesNamespace = namespace

// TestBasesAreChartRenderings: each base of distributions/kubernetes with
// a values.yaml holds otelcol-nexovue.yaml, the chart rendered with those
// values (`make manifests` writes them, with -update).
func TestBasesAreChartRenderings(t *testing.T) {
	values, err := filepath.Glob(repoPath(t, "distributions", "kubernetes", "*", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(values) < 4 {
		t.Fatalf("found %d bases with a values.yaml in distributions/kubernetes, want the agent, gateway, least-privilege and agent-multi-key", len(values))
	}
	for _, v := range values {
		base := filepath.Base(filepath.Dir(v))
		t.Run(base, func(t *testing.T) {
			got := testenv.RenderChart(t, chartRelease, basesNamespace, "-f", v)
			rendered := filepath.Join(filepath.Dir(v), "otelcol-nexovue.yaml")
			if *updateGolden {
				if err := os.WriteFile(rendered, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := string(mustRead(t, rendered)); got != want {
				t.Errorf("distributions/kubernetes/%s/otelcol-nexovue.yaml is not the chart rendered with its values.yaml: run `make manifests` (edit the chart or values.yaml, not the rendering)", base)
			}
		})
	}
}
