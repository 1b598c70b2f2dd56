package main

import (
	"bytes"
	"strings"
	"testing"
)

// Two samples of `perf script` output: a bbolt write under the exporter's
// persistent queue, and gzip inside the nexovue exporter.
const ours = `otelcol-nexovue 29178   778.709215:    2004008 cpu-clock:pppH: 
	ffffffff8226e861 _raw_spin_unlock_irq+0x11 ([kernel.kallsyms])
	          1c59bb internal/poll.(*FD).Pwrite+0x47b (/work/main/_build/otelcol-nexovue)
	         3ba694c go.etcd.io/bbolt.(*Tx).write+0xcc (/work/main/_build/otelcol-nexovue)
	         3ba6c05 github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage.(*fileStorageClient).Batch+0xc5 (/work/main/_build/otelcol-nexovue)
	         3ba6d05 go.opentelemetry.io/collector/exporter/exporterhelper/internal/queuebatch.(*persistentQueue[...]).Offer+0x15 (/work/main/_build/otelcol-nexovue)

otelcol-nexovue 29178   778.711215:    2004008 cpu-clock:pppH: 
	          1c59bb github.com/klauspost/compress/flate.(*compressor).deflate+0x47b (/work/main/_build/otelcol-nexovue)
	         3ba694c github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter.(*encoder).encode+0xcc (/work/main/_build/otelcol-nexovue)
	         3ba6d05 go.opentelemetry.io/collector/exporter/exporterhelper/internal/queuebatch.(*persistentQueue[...]).Read+0x15 (/work/main/_build/otelcol-nexovue)

`

// One sample in the Go runtime, whose file path names a component: only
// the function decides.
const plain = `otelcol-nexovue 29179   778.709215:    2004008 cpu-clock:pppH: 
	          1c59bb runtime.findRunnable+0x47b (/tmp/prometheus/otelcol-nexovue)
	          1c59cb runtime.schedule+0x4b (/tmp/prometheus/otelcol-nexovue)
`

func TestAttribute(t *testing.T) {
	p, err := attribute("ours", strings.NewReader(ours))
	if err != nil {
		t.Fatal(err)
	}
	if p.total != 2 {
		t.Fatalf("total %d, want 2", p.total)
	}
	queue := "persistent queue (queue_storage or bbolt file_storage, request encoding)"
	exp := "gzip"
	if p.samples[queue] != 1 || p.samples[exp] != 1 {
		t.Fatalf("samples %v, want one for %q and one for %q", p.samples, queue, exp)
	}
	q, err := attribute("plain", strings.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	if sched := "Go runtime: sysmon and scheduler"; q.samples[sched] != 1 {
		t.Fatalf("samples %v, want one for %q", q.samples, sched)
	}
	var out bytes.Buffer
	table(&out, p, q)
	for _, want := range []string{
		"| " + queue + " | 1 (50.0%) | 0 (0.0%) | +100.00% |",
		"| Go runtime: sysmon and scheduler | 0 (0.0%) | 1 (100.0%) | -100.00% |",
		"| **all** | 2 | 1 | **+100.00%** |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table has no %q:\n%s", want, out.String())
		}
	}
}

func TestAttributeRejectsOtherInput(t *testing.T) {
	if _, err := attribute("x", strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Fatalf("empty input: err %v, want one saying there are no samples", err)
	}
	if _, err := attribute("x", strings.NewReader("\tffff foo+0x1 (bin)\n")); err == nil || !strings.Contains(err.Error(), "before any sample header") {
		t.Fatalf("frame without header: err %v", err)
	}
	if err := run([]string{"-a", "ours.txt"}, &bytes.Buffer{}); err == nil {
		t.Fatal("run without -b: no error")
	}
}
