// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

var noTrace, noSpan = pcommon.TraceID{}, pcommon.SpanID{}

// halves is a service that burned CPU in main.first four minutes ago and in
// main.second one minute ago, with main.common on both sides: the two halves
// of the 5-minute window.
func halves(t testing.TB, v *view, now time.Time) {
	b := newBatch()
	p := b.profile("halves", "host-a", "samples", "count", 50_000_000)
	common := b.stack("main.common", "main.main")
	b.samples(p, b.stack("main.first", "main.main"), 300, now.Add(-4*time.Minute), noTrace, noSpan)
	b.samples(p, common, 100, now.Add(-4*time.Minute), noTrace, noSpan)
	b.samples(p, b.stack("main.second", "main.main"), 500, now.Add(-time.Minute), noTrace, noSpan)
	b.samples(p, common, 100, now.Add(-time.Minute), noTrace, noSpan)
	require.NoError(t, v.consume(context.Background(), b.pd))
}

type changeRow struct {
	fn, mark           string
	baseSelf, thisSelf int64
}

var changeRowRE = regexp.MustCompile(`data-function="([^"]*)" data-mark="([^"]*)" data-base-self="(\d+)" data-this-self="(\d+)"`)

func changeRows(t testing.TB, body string) []changeRow {
	var out []changeRow
	for _, m := range changeRowRE.FindAllStringSubmatch(body, -1) {
		b, err := strconv.ParseInt(m[3], 10, 64)
		require.NoError(t, err)
		th, err := strconv.ParseInt(m[4], 10, 64)
		require.NoError(t, err)
		out = append(out, changeRow{html.UnescapeString(m[1]), m[2], b, th})
	}
	return out
}

// indexLink returns the href of the index's link of class cls for service.
func indexLink(t testing.TB, srvURL, service, cls string) string {
	code, body := get(t, srvURL+"/")
	require.Equal(t, http.StatusOK, code, body)
	row := body[strings.Index(body, `data-service="`+service+`"`):]
	m := regexp.MustCompile(`class="` + cls + `"[^>]* href="([^"]+)"`).FindStringSubmatch(row)
	require.NotNil(t, m, "no %s link for %s in:\n%s", cls, service, body)
	return html.UnescapeString(m[1])
}

// TestCompareHalves: the index's "compare with the previous window" compares
// the newer half of the window with the older: main.second is new and
// ranked first, main.first gone; by share (normalised) and in absolute
// values; pprof's diff UI shows both, main.first negative.
func TestCompareHalves(t *testing.T) {
	v, srv := newTestView(t, nil)
	halves(t, v, time.Now())

	link := indexLink(t, srv.URL, "halves", "compare")
	u, err := url.Parse(link)
	require.NoError(t, err)
	require.Equal(t, "/compare", u.Path)
	for _, k := range []string{"from", "to", "base.from", "base.to"} {
		_, err := time.Parse(time.RFC3339, u.Query().Get(k))
		require.NoError(t, err, "%s in %s: absolute, so the link can be shared", k, link)
	}
	code, body := get(t, srv.URL+link)
	require.Equal(t, http.StatusOK, code, body)
	rows := changeRows(t, body)
	require.Len(t, rows, 4, body) // second, first, common, main.main
	assert.Equal(t, changeRow{"main.second", "new", 0, 500}, rows[0])
	assert.Equal(t, changeRow{"main.first", "gone", 300, 0}, rows[1])
	assert.Equal(t, changeRow{"main.common", "", 100, 100}, rows[2])
	assert.Contains(t, body, `<span id="this-samples">600</span>`)
	assert.Contains(t, body, `<span id="base-samples">400</span>`)
	assert.Contains(t, body, "0.0% → 83.3%")  // main.second's self share
	assert.Contains(t, body, "25.0% → 16.7%") // main.common's
	assert.NotContains(t, body, `class="note"`, "both sides have 200 samples or more")
	assert.Contains(t, body, "Normalised")
	// The form that chooses another base keeps this side.
	assert.Contains(t, body, `<input type="hidden" name="from" value="`+u.Query().Get("from")+`">`)
	assert.Contains(t, body, `<input name="base.to" value="`+u.Query().Get("base.to")+`"`)

	// Absolute values: ranked by the change of the value itself.
	code, body = get(t, srv.URL+link+"&normalize=0")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "Absolute values")
	rows = changeRows(t, body)
	require.Len(t, rows, 4, body)
	assert.Equal(t, changeRow{"main.second", "new", 0, 500}, rows[0])
	assert.Equal(t, changeRow{"main.first", "gone", 300, 0}, rows[1])

	// pprof's own diff: the top table of the comparison, absolute, has
	// main.first at -300 samples and main.second at +500.
	q := u.Query()
	q.Set("normalize", "0")
	ui := uiPath("halves", "samples_count", keep(q, "from", "to", "base.from", "base.to", "normalize"))
	require.Contains(t, body, html.EscapeString(ui)+"flamegraph", "the page embeds pprof's diff flame graph")
	code, top := get(t, srv.URL+ui+"top?si=samples")
	require.Equal(t, http.StatusOK, code, top)
	assert.Regexp(t, `"Name":"main.first","InlineLabel":"[^"]*","Flat":-300,`, top)
	assert.Regexp(t, `"Name":"main.second","InlineLabel":"[^"]*","Flat":500,`, top)
	// Normalised, this side (600) is scaled to the base's total (400).
	q.Del("normalize")
	ui = uiPath("halves", "samples_count", keep(q, "from", "to", "base.from", "base.to"))
	code, top = get(t, srv.URL+ui+"top?si=samples")
	require.Equal(t, http.StatusOK, code, top)
	assert.Regexp(t, `"Name":"main.second","InlineLabel":"[^"]*","Flat":333,`, top)
	assert.Regexp(t, `"Name":"main.first","InlineLabel":"[^"]*","Flat":-300,`, top)
	// And a plain view after it is not normalised (pprof keeps its
	// settings between runs).
	code, top = get(t, srv.URL+uiPath("halves", "samples_count", nil)+"top?si=samples")
	require.Equal(t, http.StatusOK, code, top)
	assert.Regexp(t, `"Name":"main.second","InlineLabel":"[^"]*","Flat":500,`, top)
	code, fg := get(t, srv.URL+ui+"flamegraph")
	require.Equal(t, http.StatusOK, code, fg)
	assert.Contains(t, fg, "main.first")
	assert.Contains(t, fg, "main.second")
}

func keep(q url.Values, keys ...string) url.Values {
	out := url.Values{}
	for _, k := range keys {
		if s := q.Get(k); s != "" {
			out.Set(k, s)
		}
	}
	return out
}

// TestCompareVersions: two versions of one service over the same time: the
// index links v2 against v1, and v2's own hot function is new and first.
func TestCompareVersions(t *testing.T) {
	v, srv := newTestView(t, nil)
	now := time.Now()
	b := newBatch()
	for _, ver := range []struct {
		version, fn string
		n           int
	}{{"v1", "main.oldHot", 200}, {"v2", "main.newHot", 300}} {
		p := b.profile("versioned", "host-a", "samples", "count", 50_000_000)
		b.pd.ResourceProfiles().At(b.pd.ResourceProfiles().Len()-1).Resource().Attributes().PutStr("service.version", ver.version)
		b.samples(p, b.stack(ver.fn, "main.main"), ver.n, now, noTrace, noSpan)
		b.samples(p, b.stack("main.common", "main.main"), 100, now, noTrace, noSpan)
	}
	require.NoError(t, v.consume(context.Background(), b.pd))
	code, body := get(t, srv.URL+"/")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `<small class="versions">(v1, v2)</small>`)

	link := indexLink(t, srv.URL, "versioned", "compare-version")
	u, err := url.Parse(link)
	require.NoError(t, err)
	assert.Equal(t, "v2", u.Query().Get("service.version"))
	assert.Equal(t, "v1", u.Query().Get("base.service.version"))
	code, body = get(t, srv.URL+link)
	require.Equal(t, http.StatusOK, code, body)
	rows := changeRows(t, body)
	require.GreaterOrEqual(t, len(rows), 2, body)
	assert.Equal(t, changeRow{"main.newHot", "new", 0, 300}, rows[0])
	assert.Equal(t, changeRow{"main.oldHot", "gone", 200, 0}, rows[1])
	assert.Contains(t, body, `<span id="this-samples">400</span>`)
	assert.Contains(t, body, `<span id="base-samples">300</span>`)

	// The compare page's form sends its empty fields: an empty base.from
	// and base.to keep this side's range (last=5m), the version compares.
	code, body = get(t, srv.URL+"/compare?service=versioned&type=samples_count&last=5m&service.version=v2&base.from=&base.to=&base.service.version=v1")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, changeRow{"main.newHot", "new", 0, 300}, changeRows(t, body)[0])
	assert.Regexp(t, `<b>base</b>: \d{4}-\d\d-\d\dT[\d:]+Z to now, service.version=v1,`, body)

	// The version filter alone, on the plain views.
	code, top := get(t, srv.URL+uiPath("versioned", "samples_count", url.Values{"service.version": {"v1"}})+"top")
	require.Equal(t, http.StatusOK, code, top)
	assert.Contains(t, top, "main.oldHot")
	assert.NotContains(t, top, "main.newHot")
}

// TestCompareFewSamples: a side under minCompareSamples gets the note.
func TestCompareFewSamples(t *testing.T) {
	v, srv := newTestView(t, nil)
	now := time.Now()
	b := newBatch()
	p := b.profile("few", "", "samples", "count", 1)
	b.samples(p, b.stack("main.a"), minCompareSamples-1, now.Add(-4*time.Minute), noTrace, noSpan)
	b.samples(p, b.stack("main.b"), minCompareSamples, now.Add(-time.Minute), noTrace, noSpan)
	require.NoError(t, v.consume(context.Background(), b.pd))
	code, body := get(t, srv.URL+indexLink(t, srv.URL, "few", "compare"))
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "The base side has 199 samples, fewer than 200")
	assert.NotContains(t, body, "This side has")
	assert.NotContains(t, body, `id="more"`)
}

// TestCompareRowsBounded: the table keeps the maxChangeRows largest
// changes and says how many more there are.
func TestCompareRowsBounded(t *testing.T) {
	v, srv := newTestView(t, nil)
	now := time.Now()
	b := newBatch()
	p := b.profile("many", "", "samples", "count", 1)
	for i := range maxChangeRows + 5 {
		b.samples(p, b.stack(fnName(i)), 10+i, now.Add(-time.Minute), noTrace, noSpan)
	}
	b.samples(p, b.stack("main.base"), 300, now.Add(-4*time.Minute), noTrace, noSpan)
	require.NoError(t, v.consume(context.Background(), b.pd))
	code, body := get(t, srv.URL+indexLink(t, srv.URL, "many", "compare")+"&normalize=0")
	require.Equal(t, http.StatusOK, code, body)
	rows := changeRows(t, body)
	require.Len(t, rows, maxChangeRows)
	assert.Equal(t, changeRow{"main.base", "gone", 300, 0}, rows[0])
	assert.Equal(t, changeRow{fnName(maxChangeRows + 4), "new", 0, int64(14 + maxChangeRows)}, rows[1], "the largest change after main.base")
	assert.Contains(t, body, `<p id="more">and 6 more functions`)
}

// TestCompareBadInput: each bad or empty selection is a 400 naming the
// parameter; a side the memory cap dropped says so; the view keeps serving.
func TestCompareBadInput(t *testing.T) {
	v, srv := newTestView(t, nil)
	now := time.Now()
	halves(t, v, now)
	rfcAt := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339) }
	base := "/compare?service=halves&type=samples_count"
	for _, tc := range []struct{ query, want string }{
		{"/compare?type=samples_count&base.service.version=v1", "service: missing"},
		{"/compare?service=halves&base.service.version=v1", "type: missing"},
		{base, "base.from and base.to, base.last or base.service.version: missing"},
		{base + "&base.from=&base.to=&base.service.version=", "base.from and base.to, base.last or base.service.version: missing"},
		{base + "&base.from=banana", `base.from: "banana" is not an RFC 3339 time`},
		{base + "&base.last=-1m", `base.last: "-1m" is not a positive duration`},
		{base + "&last=1m&base.last=2m&normalize=maybe", `normalize: "maybe" is not 1`},
		{base + "&from=" + rfcAt(0) + "&to=" + rfcAt(-time.Minute) + "&base.last=5m", "to: the range"},
		{base + "&last=2m&base.from=" + rfcAt(-5*time.Minute) + "&base.to=" + rfcAt(-270*time.Second), `base: no samples_count profile of service "halves" in`},
		{base + "&base.service.version=v9", "base: no samples_count profile of service \"halves\" in the window, service.version=v9"},
		{"/compare?service=nope&type=samples_count&base.last=1m", `this: no samples_count profile of service "nope"`},
	} {
		code, body := get(t, srv.URL+tc.query)
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", tc.query, body)
		assert.Contains(t, body, tc.want, tc.query)
		// The same comparison through pprof's UI path answers the same.
		if u, err := url.Parse(tc.query); err == nil && u.Query().Get("service") == "halves" && u.Query().Get("type") != "" {
			q := u.Query()
			q.Del("service")
			q.Del("type")
			if isComparison(q) {
				code, body = get(t, srv.URL+uiPath("halves", "samples_count", q)+"flamegraph")
				assert.Equal(t, http.StatusBadRequest, code, "%s: %s", tc.query, body)
				assert.Contains(t, body, tc.want, tc.query)
			}
		}
	}
	code, body := get(t, srv.URL+"/")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `data-service="halves"`)
}

// TestCompareSideOverMemoryCap: a side that starts before what the memory
// cap dropped is refused with the time it could start from; a comparison of
// what is kept still works.
func TestCompareSideOverMemoryCap(t *testing.T) {
	v, srv := newTestView(t, nil)
	now := time.Unix(1_800_000_000, 0)
	start := now
	v.store = newStore(5*time.Minute, 1<<20, func() time.Time { return now })
	for m := range 25 {
		now = now.Add(10 * time.Second)
		b := newBatch()
		p := b.profile("svc", "", "samples", "count", 1)
		for i := range 100 {
			b.samples(p, b.stack(fnName(m*100+i), "main"), 3, now, noTrace, noSpan)
		}
		require.NoError(t, v.consume(context.Background(), b.pd))
	}
	require.NotZero(t, v.store.capDroppedBefore, "the cap dropped slots")
	kept := time.Unix(0, v.store.capDroppedBefore).UTC()
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	q := url.Values{"service": {"svc"}, "type": {"samples_count"},
		"from": {rfc(now.Add(-20 * time.Second))}, "to": {rfc(now.Add(time.Second))},
		"base.from": {rfc(start)}, "base.to": {rfc(now.Add(-20 * time.Second))}}
	code, body := get(t, srv.URL+"/compare?"+q.Encode())
	assert.Equal(t, http.StatusBadRequest, code, body)
	assert.Contains(t, body, "base.from: the base side starts at "+rfc(start)+", but profiles before "+rfc(kept)+" were dropped to stay under max_memory_mib")

	q.Set("base.from", rfc(kept))
	code, body = get(t, srv.URL+"/compare?"+q.Encode())
	assert.Equal(t, http.StatusOK, code, body)
	assert.NotEmpty(t, changeRows(t, body))
	assert.NotContains(t, body, "were dropped to stay under max_memory_mib")

	// A base side given only as base.to starts at the window's start: it
	// is served, and the page says the cap dropped its oldest profiles.
	q.Del("base.from")
	code, body = get(t, srv.URL+"/compare?"+q.Encode())
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "The base side starts at "+rfc(kept)+": profiles before it were dropped to stay under max_memory_mib")
	assert.NotContains(t, body, "The this side starts at")
}

// TestPreviousWindow: the selection against the same length before it when
// that fits in the window, else the newer half of the window against the
// older.
func TestPreviousWindow(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	const width = 10 * time.Second
	this, base, ok := previousWindow(selection{}, now, 5*time.Minute, width)
	assert.True(t, ok)
	assert.Equal(t, [2]time.Time{now.Add(-150 * time.Second), now}, this)
	assert.Equal(t, [2]time.Time{now.Add(-5 * time.Minute), now.Add(-150 * time.Second)}, base)
	this, base, ok = previousWindow(selection{from: now.Add(-time.Minute).UnixNano()}, now, 5*time.Minute, width)
	assert.True(t, ok)
	assert.Equal(t, [2]time.Time{now.Add(-time.Minute), now}, this)
	assert.Equal(t, [2]time.Time{now.Add(-2 * time.Minute), now.Add(-time.Minute)}, base)
	// No link when a side would be shorter than a slot (a range of a slot's
	// length or more holds the middle of one slot at least): a selection
	// that ends before the window starts, or one shorter than two slots.
	_, _, ok = previousWindow(selection{to: now.Add(-10 * time.Minute).UnixNano()}, now, 5*time.Minute, width)
	assert.False(t, ok)
	_, _, ok = previousWindow(selection{from: now.Add(-8 * time.Second).UnixNano()}, now, 5*time.Minute, width)
	assert.False(t, ok)
	_, _, ok = previousWindow(selection{from: now.Add(-20 * time.Second).UnixNano()}, now, 5*time.Minute, width)
	assert.True(t, ok)
}

// TestCompareIndexOmitsAnEmptyPreviousWindow: an index selection shorter
// than a slot (10 s of the default 5-minute window) has no "compare with the previous window" link (it would
// be a 400), and keeps its other links.
func TestCompareIndexOmitsAnEmptyPreviousWindow(t *testing.T) {
	v, srv := newTestView(t, nil)
	halves(t, v, time.Now())
	code, body := get(t, srv.URL+"/?last=8s")
	require.Equal(t, http.StatusOK, code, body)
	assert.NotContains(t, body, `class="compare"`)
	code, body = get(t, srv.URL+"/?last=2m")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `class="compare"`)
}

// TestCompareDownloadsHoldWhatThePageCompares: two adjacent sides whose
// boundary falls inside a slot: the page counts the slot on the side that
// holds its middle, and so do the page's two downloads (slots=middle), so
// go tool pprof -diff_base on them compares the same samples; a plain
// download of the same range counts every slot it overlaps.
func TestCompareDownloadsHoldWhatThePageCompares(t *testing.T) {
	v, srv := newTestView(t, nil)
	now := time.Now()
	slot := time.Unix(0, now.Add(-2*time.Minute).UnixNano()/v.store.width*v.store.width)
	b := newBatch()
	p := b.profile("edge", "", "samples", "count", 1)
	b.samples(p, b.stack("main.before"), 210, slot.Add(-30*time.Second), noTrace, noSpan)
	b.samples(p, b.stack("main.edge"), 220, slot.Add(time.Second), noTrace, noSpan)
	b.samples(p, b.stack("main.after"), 230, slot.Add(30*time.Second), noTrace, noSpan)
	require.NoError(t, v.consume(context.Background(), b.pd))
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	boundary := slot.Add(3 * time.Second) // before the slot's middle: the slot is this side's
	q := url.Values{"service": {"edge"}, "type": {"samples_count"},
		"from": {rfc(boundary)}, "to": {rfc(now)},
		"base.from": {rfc(slot.Add(-time.Minute))}, "base.to": {rfc(boundary)}}
	code, body := get(t, srv.URL+"/compare?"+q.Encode())
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `<span id="this-samples">450</span>`)
	assert.Contains(t, body, `<span id="base-samples">210</span>`)
	for _, side := range []struct {
		cls  string
		want int64
	}{{"this", 450}, {"base", 210}} {
		m := regexp.MustCompile(`class="download" href="([^"]+)">` + side.cls + `<`).FindStringSubmatch(body)
		require.NotNil(t, m, body)
		code, pb := get(t, srv.URL+html.UnescapeString(m[1]))
		require.Equal(t, http.StatusOK, code, pb)
		prof, err := profile.Parse(strings.NewReader(pb))
		require.NoError(t, err)
		assert.Equal(t, side.want, sumValues(prof), "the %s download", side.cls)
	}
	// A plain download of the base range takes the slot it overlaps too.
	code, pb := get(t, srv.URL+downloadPath("edge", "samples_count", url.Values{"from": q["base.from"], "to": q["base.to"]}))
	require.Equal(t, http.StatusOK, code, pb)
	prof, err := profile.Parse(strings.NewReader(pb))
	require.NoError(t, err)
	assert.Equal(t, int64(430), sumValues(prof))
	code, body = get(t, srv.URL+downloadPath("edge", "samples_count", url.Values{"slots": {"half"}}))
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `slots: "half" is not overlap`)
}

// TestCompareFormKeepsEveryBaseFilter: the form that chooses the base side
// has a field for each base.<filter>, filled with the comparison's, so
// submitting it again keeps base.last, the namespace and the host.
func TestCompareFormKeepsEveryBaseFilter(t *testing.T) {
	v, srv := newTestView(t, nil)
	halves(t, v, time.Now())
	q := url.Values{"service": {"halves"}, "type": {"samples_count"}, "last": {"2m"},
		"base.last": {"5m"}, "base.host.name": {"host-a"}}
	code, body := get(t, srv.URL+"/compare?"+q.Encode())
	require.Equal(t, http.StatusOK, code, body)
	for _, k := range filterKeys {
		want := `<input name="base.` + k + `" value="` + html.EscapeString(q.Get("base."+k)) + `"`
		assert.Contains(t, body, want)
	}
	assert.Contains(t, body, `<input name="base.last" value="5m"`)
	assert.Contains(t, body, `<input name="base.host.name" value="host-a"`)
}
