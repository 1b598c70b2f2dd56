package manifests

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/nexovue/otelcol-nexovue/internal/profiledict"
	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// wineProfile is one on-CPU profile of service nxv-wine whose every sample
// is in main.wineHot (called by main.main), as the OTLP receiver gets it.
func wineProfile() pprofile.Profiles {
	pd := pprofile.NewProfiles()
	d := pd.Dictionary()
	profiledict.AppendZeroEntries(d)
	strs := d.StringTable()
	str := func(s string) int32 { strs.Append(s); return int32(strs.Len() - 1) }
	st := d.StackTable().AppendEmpty()
	for _, fn := range []string{"main.wineHot", "main.main"} {
		f := d.FunctionTable().AppendEmpty()
		f.SetNameStrindex(str(fn))
		loc := d.LocationTable().AppendEmpty()
		loc.Lines().AppendEmpty().SetFunctionIndex(int32(d.FunctionTable().Len() - 1))
		st.LocationIndices().Append(int32(d.LocationTable().Len() - 1))
	}
	rp := pd.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutStr("service.name", "nxv-wine")
	p := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	p.SampleType().SetTypeStrindex(str("samples"))
	p.SampleType().SetUnitStrindex(str("count"))
	p.PeriodType().SetTypeStrindex(str("cpu"))
	p.PeriodType().SetUnitStrindex(str("nanoseconds"))
	p.SetPeriod(50_000_000)
	now := time.Now()
	p.SetTime(pcommon.NewTimestampFromTime(now))
	s := p.Samples().AppendEmpty()
	s.SetStackIndex(int32(d.StackTable().Len() - 1))
	for range 20 {
		s.TimestampsUnixNano().Append(uint64(now.UnixNano()))
	}
	return pd
}

// wineViewConfig is the configuration of the view test: an OTLP receiver on
// otlpAddr, the profile view on viewAddr.
func wineViewConfig(otlpAddr, viewAddr string) string {
	return fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  profileview:
    endpoint: %s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [profileview]
`, otlpAddr, viewAddr)
}

// windowsProfileView: the Windows binary, under Wine (in the prefix of
// TestWindowsValidateUnderWine), with an
// OTLP receiver and the profile view: a profile posted over OTLP shows on
// the index, and its flame graph page names the function.
func windowsProfileView(t *testing.T, exe, wine, prefix string, env []string) {
	otlpAddr, viewAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	config := filepath.Join(t.TempDir(), "view.yaml")
	if err := os.WriteFile(config, []byte(wineViewConfig(otlpAddr, viewAddr)), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	col := testenv.Start(t, append(env, wineEnv(prefix)...), wine, exe, "--config", winPath(config), testenv.FeatureGate)

	body, err := pprofileotlp.NewExportRequestFromProfiles(wineProfile()).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	testenv.WaitFor(t, 3*time.Minute, "the Windows binary's OTLP receiver to take the profile", func() (bool, error) {
		if done, err := col.Exited(); done {
			return false, fmt.Errorf("%s exited (%v):\n%s", filepath.Base(exe), err, col.Output())
		}
		resp, err := client.Post("http://"+otlpAddr+"/v1development/profiles", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			return false, nil // not listening yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	t.Logf("%s took the profile %.1fs after its start under Wine", filepath.Base(exe), time.Since(start).Seconds())
	get := func(path string) string {
		resp, err := client.Get("http://" + viewAddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, col.Output())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
		}
		return string(b)
	}
	if index := get("/"); !strings.Contains(index, `data-service="nxv-wine"`) {
		t.Fatalf("the Windows binary's index does not list nxv-wine:\n%s", index)
	}
	if fg := get("/ui/nxv-wine/samples_count/all/flamegraph"); !strings.Contains(fg, "main.wineHot") {
		t.Fatalf("the Windows binary's flame graph page does not name main.wineHot:\n%s", fg)
	}
}
