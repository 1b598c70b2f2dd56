// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// BenchmarkAgentCostWithK8sAttributes measures what k8s_attributes costs the
// agent on a cluster of 2,000 pods of which 100 are on the agent's node: the
// agent with the shipped DaemonSet config and the same agent without
// k8s_attributes run side by side, in the same run, against the same API
// server; their RSS and CPU are read from /proc over the same window. The
// pods are objects only (no processes). Run with
//
//	go test ./tests/kubernetes/ -run '^$' -bench AgentCost -benchtime 1x -v
//
// It reports rss_MiB and cpu_% of each, and their ratios.
func BenchmarkAgentCostWithK8sAttributes(b *testing.B) {
	const (
		pods     = 2000
		onNode   = 100
		window   = 30 * time.Second
		settling = 15 * time.Second
	)
	c := startCluster(b)
	installChart(b, c)
	node := "nxv-node-" + randHex(b, 3)
	var namespaces []any
	for _, ns := range []string{"bench-a", "bench-b", "bench-c", "bench-d"} {
		namespaces = append(namespaces, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	}
	c.applyList(b, namespaces)
	var list strings.Builder
	list.WriteString(`{"apiVersion":"v1","kind":"List","items":[`)
	for i := range pods {
		n := node
		if i >= onNode {
			n = fmt.Sprintf("other-node-%d", i%40)
		}
		if i > 0 {
			list.WriteString(",")
		}
		fmt.Fprintf(&list, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bench-%d-%s","namespace":"bench-%c","labels":{"app.kubernetes.io/name":"bench-%d","pod-template-hash":"5d8f7c6b4"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"bench-%d-5d8f7c6b4","uid":"%08d-0000-4000-8000-000000000000","controller":true}]},"spec":{"nodeName":%q,"containers":[{"name":"app","image":"example.invalid/app:1"},{"name":"sidecar","image":"example.invalid/sidecar:1"}]}}`,
			i, randHex(b, 3), 'a'+rune(i%4), i%50, i%50, i, n)
	}
	list.WriteString("]}")
	created := time.Now()
	if _, err := c.kubectlIn(list.String(), "create", "-f", "-"); err != nil {
		b.Fatal(err)
	}
	b.Logf("created %d pods (%d on %s) in %s", pods, onNode, node, time.Since(created).Round(time.Second))

	with := startAgent(b, c, node, true)
	without := startAgent(b, c, node, false)
	// Let both sync (k8s_attributes lists the node's pods at start) and
	// settle before the window.
	testenv.WaitFor(b, 2*time.Minute, "both agents to send profiles", func() (bool, error) {
		return with.srv.SamplesAccepted() > 0 && without.srv.SamplesAccepted() > 0, nil
	})
	readyAt := time.Now()
	testenv.WaitFor(b, settling+time.Second, "the agents to settle", func() (bool, error) {
		return time.Since(readyAt) >= settling, nil
	})
	b.ResetTimer()
	cpu0w, cpu0o := cpuTicks(b, with.proc.Cmd.Process.Pid), cpuTicks(b, without.proc.Cmd.Process.Pid)
	start := time.Now()
	var peakW, peakO int64
	testenv.WaitFor(b, window+10*time.Second, "the measurement window", func() (bool, error) {
		peakW = max(peakW, rssKiB(b, with.proc.Cmd.Process.Pid))
		peakO = max(peakO, rssKiB(b, without.proc.Cmd.Process.Pid))
		return time.Since(start) >= window, nil
	})
	elapsed := time.Since(start).Seconds()
	cpuW := float64(cpuTicks(b, with.proc.Cmd.Process.Pid)-cpu0w) / 100 / elapsed * 100
	cpuO := float64(cpuTicks(b, without.proc.Cmd.Process.Pid)-cpu0o) / 100 / elapsed * 100
	b.StopTimer()
	b.ReportMetric(float64(peakW)/1024, "rss_MiB_k8s")
	b.ReportMetric(float64(peakO)/1024, "rss_MiB_base")
	b.ReportMetric(float64(peakW)/float64(peakO), "rss_ratio")
	b.ReportMetric(cpuW, "cpu_%_k8s")
	b.ReportMetric(cpuO, "cpu_%_base")
	b.Logf("figure: 2,000 pods, 100 on the node: agent with k8s_attributes RSS %.1f MiB, CPU %.1f%%; without %.1f MiB, %.1f%% (RSS x%.2f) over %.0f s",
		float64(peakW)/1024, cpuW, float64(peakO)/1024, cpuO, float64(peakW)/float64(peakO), elapsed)
}

// rssKiB is the VmRSS of pid.
func rssKiB(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}

// cpuTicks is the user and system CPU time of pid in clock ticks (USER_HZ,
// 100 a second on Linux).
func cpuTicks(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// Fields after the command: state is f[0]; utime is field 14 of the
	// line, f[11]; stime f[12].
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}
