// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter // import "github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter"

import (
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// A comparison is two selections of one service and profile type: "this"
// (the usual filters) and "base" (the same filters, each overridden by its
// base.<key>: base.last, base.from, base.to, base.k8s.namespace.name,
// base.host.name, base.service.version). A base time range replaces this
// side's whole time range. pprof's own diff (-diff_base, -normalize) draws
// it; the "what changed" table is computed here from the same two profiles.

const basePrefix = "base."

// minCompareSamples is the samples a side needs for its shares to say
// anything. A share p measured on n samples has a standard error of
// sqrt(p(1-p)/n): at most 3.5 percentage points at n = 200, so the
// difference of two sides of 200 samples has a standard error of up to 5
// points and a change under 10 points (two standard errors) can be chance.
// Below 200 the error grows past that quickly (7 points of difference at
// 100), so the page says so instead of ranking noise.
const minCompareSamples = 200

// maxChangeRows bounds the "what changed" table (pprof's diff top below it
// lists every function).
const maxChangeRows = 20

// comparison is a parsed compare request.
type comparison struct {
	this, base selection
	normalize  bool
	query      url.Values // this side's filters, base.*, normalize: what a link keeps
}

// isComparison: the query names a base side.
func isComparison(q url.Values) bool {
	for _, k := range filterKeys {
		if q.Get(basePrefix+k) != "" {
			return true
		}
	}
	return false
}

// parseComparison reads both sides and normalize. Errors name the parameter.
func parseComparison(q url.Values, now time.Time) (comparison, error) {
	var c comparison
	if !isComparison(q) {
		return c, errors.New("base.from and base.to, base.last or base.service.version: missing: a comparison needs a base side to compare against")
	}
	var err error
	if c.this, err = parseSelection(q, now); err != nil {
		return c, err
	}
	if c.base, err = parseSelection(baseFilters(q), now); err != nil {
		return c, fmt.Errorf("%s%w", basePrefix, err)
	}
	c.this.midpoint, c.base.midpoint = true, true
	switch s := q.Get("normalize"); s {
	case "", "1", "true":
		c.normalize = true
	case "0", "false":
	default:
		return c, fmt.Errorf("normalize: %q is not 1 (compare by share, the default) or 0 (absolute values)", s)
	}
	c.query = selectionQuery(q)
	for _, k := range filterKeys {
		if s := q.Get(basePrefix + k); s != "" {
			c.query.Set(basePrefix+k, s)
		}
	}
	if !c.normalize {
		c.query.Set("normalize", "0")
	}
	return c, nil
}

// capLoss is the time before which the memory cap dropped profiles that sel
// asks for (it starts earlier, or at the window's start, and that time is
// still inside the window), or 0.
func (st *store) capLoss(sel selection) int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.capDroppedBefore == 0 || (sel.from != 0 && sel.from >= st.capDroppedBefore) {
		return 0
	}
	if st.capDroppedBefore <= st.now().UnixNano()-st.window {
		return 0 // the window has moved past what the cap dropped
	}
	return st.capDroppedBefore
}

// capNotes say, for each side open at the window's start, that the memory
// cap dropped its oldest profiles.
func (v *view) capNotes(c comparison) []string {
	var notes []string
	for _, side := range []bool{false, true} {
		sel := c.this
		if side {
			sel = c.base
		}
		if t := v.store.capLoss(sel); t != 0 && sel.from == 0 {
			notes = append(notes, fmt.Sprintf("The %s side starts at %s: profiles before it were dropped to stay under max_memory_mib (%d MiB), so its values cover less time than the window.", sideName(side), rfc(t), v.cfg.MaxMemoryMiB))
		}
	}
	return notes
}

// sideName is how errors and the page name a side.
func sideName(base bool) string {
	if base {
		return "base"
	}
	return "this"
}

// describe is a side's selection in words.
func describe(sel selection) string {
	s := "the window"
	switch {
	case sel.from != 0 && sel.to != 0:
		s = rfc(sel.from) + " to " + rfc(sel.to)
	case sel.from != 0:
		s = rfc(sel.from) + " to now"
	case sel.to != 0:
		s = "the window up to " + rfc(sel.to)
	}
	for _, f := range []struct{ k, v string }{{"service.version", sel.version}, {"k8s.namespace.name", sel.namespace}, {"host.name", sel.host}} {
		if f.v != "" {
			s += ", " + f.k + "=" + f.v
		}
	}
	return s
}

func rfc(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }

// renderComparison takes one render slot and builds both sides (at most two
// windows' aggregation at once), or answers (503, 400) and returns false.
// The caller releases the slot when ok.
func (v *view) renderComparison(w http.ResponseWriter, service, ptype string, c comparison) (this, base *profile.Profile, thisN, baseN int64, ok bool) {
	for _, side := range []bool{false, true} {
		sel := c.this
		if side {
			sel = c.base
		}
		// A side open at the window's start (no from) holds what the window
		// kept: the page says what the cap dropped (capNotes), a side that
		// asks for an earlier from gets a 400.
		if t := v.store.capLoss(sel); t != 0 && sel.from != 0 {
			param := "from"
			if side {
				param = basePrefix + "from"
			}
			http.Error(w, fmt.Sprintf("%s: the %s side starts at %s, but profiles before %s were dropped to stay under max_memory_mib (%d MiB): choose a range from %s on",
				param, sideName(side), rfc(sel.from), rfc(t), v.cfg.MaxMemoryMiB, rfc(t)), http.StatusBadRequest)
			return nil, nil, 0, 0, false
		}
	}
	if !v.acquire(w) {
		return nil, nil, 0, 0, false
	}
	this, thisN = v.store.build(service, ptype, c.this)
	base, baseN = v.store.build(service, ptype, c.base)
	for _, side := range []struct {
		p    *profile.Profile
		base bool
		sel  selection
	}{{this, false, c.this}, {base, true, c.base}} {
		if side.p == nil {
			v.release()
			http.Error(w, fmt.Sprintf("%s: no %s profile of service %q in %s: nothing to compare", sideName(side.base), ptype, service, describe(side.sel)), http.StatusBadRequest)
			return nil, nil, 0, 0, false
		}
	}
	return this, base, thisN, baseN, true
}

// fnChange is one row of the "what changed" table: a function's self
// (flat) and total (cum) values on each side and their shares, in percent
// of the side's total.
type fnChange struct {
	Name                                                 string
	BaseSelf, ThisSelf, BaseTotal, ThisTotal             int64
	BaseSelfPct, ThisSelfPct, BaseTotalPct, ThisTotalPct float64
	New, Gone                                            bool
}

func (c fnChange) DSelfPct() float64  { return c.ThisSelfPct - c.BaseSelfPct }
func (c fnChange) DTotalPct() float64 { return c.ThisTotalPct - c.BaseTotalPct }
func (c fnChange) DSelf() int64       { return c.ThisSelf - c.BaseSelf }
func (c fnChange) DTotal() int64      { return c.ThisTotal - c.BaseTotal }

// Mark is "new" (not in the base side at all), "gone" (not in this side) or "".
func (c fnChange) Mark() string {
	switch {
	case c.New:
		return "new"
	case c.Gone:
		return "gone"
	}
	return ""
}

// functionValues sums the profile's first value per function: self for the
// leaf (the innermost line of the first location), total once per sample
// for every function of its stack.
func functionValues(p *profile.Profile) (self, total map[string]int64, sum int64) {
	self, total = map[string]int64{}, map[string]int64{}
	for _, s := range p.Sample {
		v := s.Value[0]
		sum += v
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 {
			self[s.Location[0].Line[0].Function.Name] += v
		}
		seen := map[string]bool{}
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if n := ln.Function.Name; !seen[n] {
					seen[n] = true
					total[n] += v
				}
			}
		}
	}
	return self, total, sum
}

// changes ranks the functions of both sides by the change of their self
// share (normalize) or of their self value (absolute), then of their total,
// then by name; at most maxChangeRows, and how many more there are.
func changes(this, base *profile.Profile, normalize bool) ([]fnChange, int) {
	tSelf, tTotal, tSum := functionValues(this)
	bSelf, bTotal, bSum := functionValues(base)
	pct := func(v, sum int64) float64 {
		if sum == 0 {
			return 0
		}
		return 100 * float64(v) / float64(sum)
	}
	var out []fnChange
	for name := range union(tTotal, bTotal) {
		c := fnChange{Name: name, ThisSelf: tSelf[name], BaseSelf: bSelf[name], ThisTotal: tTotal[name], BaseTotal: bTotal[name]}
		c.ThisSelfPct, c.BaseSelfPct = pct(c.ThisSelf, tSum), pct(c.BaseSelf, bSum)
		c.ThisTotalPct, c.BaseTotalPct = pct(c.ThisTotal, tSum), pct(c.BaseTotal, bSum)
		c.New, c.Gone = c.BaseTotal == 0, c.ThisTotal == 0
		out = append(out, c)
	}
	key := func(c fnChange) (float64, float64) {
		if normalize {
			return math.Abs(c.DSelfPct()), math.Abs(c.DTotalPct())
		}
		return math.Abs(float64(c.DSelf())), math.Abs(float64(c.DTotal()))
	}
	sort.Slice(out, func(i, j int) bool {
		si, ti := key(out[i])
		sj, tj := key(out[j])
		if si != sj {
			return si > sj
		}
		if ti != tj {
			return ti > tj
		}
		return out[i].Name < out[j].Name
	})
	if len(out) > maxChangeRows {
		return out[:maxChangeRows], len(out) - maxChangeRows
	}
	return out, 0
}

func union(a, b map[string]int64) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// previousWindow is the index's "compare with the previous window": the
// selection's range against the range of the same length just before it;
// when that would start before the window, the newer half of what the window
// holds of the selection against the older half. Times are whole seconds.
// ok is false when either side would be shorter than a slot (width): a
// side's slots count by their middle, and only a range of a slot's length
// or more surely holds one (not so a selection that ends before the
// window, or one shorter than a slot).
func previousWindow(sel selection, now time.Time, window, width time.Duration) (this, base [2]time.Time, ok bool) {
	oldest := now.Add(-window)
	to := now
	if sel.to != 0 && time.Unix(0, sel.to).Before(now) {
		to = time.Unix(0, sel.to)
	}
	from := oldest
	if sel.from != 0 && time.Unix(0, sel.from).After(oldest) {
		from = time.Unix(0, sel.from)
	}
	d := to.Sub(from)
	if from.Add(-d).Before(oldest) {
		d = to.Sub(oldest) / 2
		from = to.Add(-d)
	}
	sec := func(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }
	this, base = [2]time.Time{sec(from), sec(to)}, [2]time.Time{sec(from.Add(-d)), sec(from)}
	ok = this[1].Sub(this[0]) >= width && base[1].Sub(base[0]) >= width
	return this, base, ok
}

// comparePath is the compare page of a comparison's query.
func comparePath(service, ptype string, q url.Values) string {
	return pagePath("/compare", service, ptype, q)
}

var compareTemplate = template.Must(template.New("compare").Funcs(template.FuncMap{
	"pct":  func(f float64) string { return fmt.Sprintf("%.1f%%", f) },
	"dpct": func(f float64) string { return fmt.Sprintf("%+.1f", f) },
	"dval": func(v int64) string { return fmt.Sprintf("%+d", v) },
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Service}} · {{.Type}}: what changed</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{padding:.2em .6em;text-align:left;border-bottom:1px solid #ddd}td.n{text-align:right}tr.new td.mark{color:#b00;font-weight:bold}tr.gone td.mark{color:#070;font-weight:bold}.note{color:#b60}iframe{width:100%;height:640px;border:1px solid #ccc}</style>
</head><body>
<p><a href="./">all services</a></p>
<h1>{{.Service}} · {{.Title}}: what changed</h1>
<p id="sides"><b>this</b>: {{.ThisDesc}}, <span id="this-samples">{{.ThisSamples}}</span> samples ({{.ThisSum}} {{.Unit}}) · <b>base</b>: {{.BaseDesc}}, <span id="base-samples">{{.BaseSamples}}</span> samples ({{.BaseSum}} {{.Unit}})</p>
{{range .Notes}}<p class="note">{{.}}</p>{{end}}
<form id="choose" method="get" action="compare">{{range $k, $vs := .Hidden}}{{range $vs}}<input type="hidden" name="{{$k}}" value="{{.}}">{{end}}{{end}}
compare with: {{range .BaseInputs}}<label>{{.Name}} <input name="{{.Name}}" value="{{.Value}}"{{if .Placeholder}} placeholder="{{.Placeholder}}"{{end}}></label>
{{end}}
<button type="submit">Compare</button></form>
<p id="mode">{{if .Normalize}}Normalised: this side is scaled to the base side's total, so the two compare by share whatever their load or length; ranked by the change of each function's self share. <a id="switch" href="{{.AbsoluteURL}}">absolute values</a>{{else}}Absolute values: neither side is scaled; ranked by the change of each function's self value. <a id="switch" href="{{.NormalizedURL}}">normalise by share</a>{{end}}</p>
<table id="changes"><thead><tr><th>function</th><th></th><th>self share base → this</th><th>Δ points</th><th>self base → this ({{.Unit}})</th><th>Δ</th><th>total share base → this</th><th>Δ points</th><th>total base → this ({{.Unit}})</th></tr></thead><tbody>
{{range .Changes}}<tr class="change {{.Mark}}" data-function="{{.Name}}" data-mark="{{.Mark}}" data-base-self="{{.BaseSelf}}" data-this-self="{{.ThisSelf}}"><td class="name">{{.Name}}</td><td class="mark">{{.Mark}}</td>
<td class="n">{{pct .BaseSelfPct}} → {{pct .ThisSelfPct}}</td><td class="n">{{dpct .DSelfPct}}</td><td class="n">{{.BaseSelf}} → {{.ThisSelf}}</td><td class="n">{{dval .DSelf}}</td>
<td class="n">{{pct .BaseTotalPct}} → {{pct .ThisTotalPct}}</td><td class="n">{{dpct .DTotalPct}}</td><td class="n">{{.BaseTotal}} → {{.ThisTotal}}</td></tr>
{{end}}</tbody></table>
{{if .More}}<p id="more">and {{.More}} more functions (pprof's <a href="{{.UI}}top">top</a> lists them all)</p>{{end}}
<p>pprof's diff of the two (<code>-diff_base</code>{{if .Normalize}} <code>-normalize</code>{{end}}): red grew, green shrank.
<a href="{{.UI}}flamegraph">flame graph</a> · <a href="{{.UI}}top">top</a> · <a href="{{.UI}}peek">peek</a> · <a href="{{.UI}}source">source</a> ·
downloads <a class="download" href="{{.ThisDownload}}">this</a>, <a class="download" href="{{.BaseDownload}}">base</a> (<code>go tool pprof -diff_base base.pb.gz this.pb.gz</code>)</p>
<iframe id="diff" src="{{.UI}}flamegraph"></iframe>
</body></html>
`))

type compareData struct {
	Service, Type, Title, Unit                 string
	ThisDesc, BaseDesc                         string
	ThisSamples, BaseSamples, ThisSum, BaseSum int64
	Notes                                      []string
	Normalize                                  bool
	AbsoluteURL, NormalizedURL, UI             string
	ThisDownload, BaseDownload                 string
	Changes                                    []fnChange
	More                                       int
	// Hidden keeps this side (and normalize) in the form that chooses the
	// base side; BaseInputs are its fields, one per base.<filter>, filled
	// with the comparison's.
	Hidden     url.Values
	BaseInputs []baseInput
}

// baseInput is a field of the form that chooses the base side.
type baseInput struct{ Name, Value, Placeholder string }

// basePlaceholders hint at the format of the base side's fields.
var basePlaceholders = map[string]string{"last": "e.g. 10m", "from": "RFC 3339", "to": "RFC 3339"}

// compare serves /compare?service=…&type=…&<this side's filters>&base.<…>[&normalize=0].
func (v *view) compare(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > maxQueryBytes {
		http.Error(w, "query too long", http.StatusRequestURITooLong)
		return
	}
	q := r.URL.Query()
	service, ptype := q.Get("service"), q.Get("type")
	for _, p := range []struct{ k, v string }{{"service", service}, {"type", ptype}} {
		if p.v == "" {
			http.Error(w, p.k+": missing: a comparison is of one service and profile type", http.StatusBadRequest)
			return
		}
	}
	c, err := parseComparison(q, v.store.now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	this, base, thisN, baseN, ok := v.renderComparison(w, service, ptype, c)
	if !ok {
		return
	}
	defer v.release()
	d := compareData{
		Service: service, Type: ptype, Title: typeTitleOf(this), Unit: this.SampleType[0].Unit,
		ThisDesc: describe(c.this), BaseDesc: describe(c.base), ThisSamples: thisN, BaseSamples: baseN,
		ThisSum: sumValues(this), BaseSum: sumValues(base), Normalize: c.normalize,
		UI: uiPath(service, ptype, c.query),
	}
	d.Changes, d.More = changes(this, base, c.normalize)
	d.Hidden = url.Values{"service": {service}, "type": {ptype}}
	for k, vs := range c.query {
		if !strings.HasPrefix(k, basePrefix) {
			d.Hidden[k] = vs
		}
	}
	for _, k := range filterKeys {
		d.BaseInputs = append(d.BaseInputs, baseInput{Name: basePrefix + k, Value: c.query.Get(basePrefix + k), Placeholder: basePlaceholders[k]})
	}
	d.Notes = v.capNotes(c)
	for _, side := range []struct {
		name string
		n    int64
	}{{"This side", thisN}, {"The base side", baseN}} {
		if side.n < minCompareSamples {
			d.Notes = append(d.Notes, fmt.Sprintf("%s has %d samples, fewer than %d: its shares can be off by more than 5 percentage points by chance alone, so changes under about 10 points say nothing.", side.name, side.n, minCompareSamples))
		}
	}
	abs, norm := cloneValues(c.query), cloneValues(c.query)
	abs.Set("normalize", "0")
	norm.Del("normalize")
	d.AbsoluteURL, d.NormalizedURL = comparePath(service, ptype, abs), comparePath(service, ptype, norm)
	// The downloads hold what the page compares: each side's slots by the
	// middle rule (slots=middle), the base side with its own filters
	// (inherited ones too).
	thisQ, baseQ := selectionQuery(q), baseFilters(q)
	thisQ.Set(slotsParam, slotsMiddle)
	baseQ.Set(slotsParam, slotsMiddle)
	d.ThisDownload, d.BaseDownload = downloadPath(service, ptype, thisQ), downloadPath(service, ptype, baseQ)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := compareTemplate.Execute(w, d); err != nil {
		v.set.Logger.Debug("profile view: comparison not written", zapErr(err))
	}
}

// baseFilters are the base side's filters as plain keys: this side's,
// overridden by base.*.
func baseFilters(q url.Values) url.Values {
	out := url.Values{}
	timeGiven := q.Get(basePrefix+"last") != "" || q.Get(basePrefix+"from") != "" || q.Get(basePrefix+"to") != ""
	for _, k := range filterKeys {
		s := q.Get(k)
		if timeGiven && (k == "last" || k == "from" || k == "to") {
			s = ""
		}
		if q.Get(basePrefix+k) != "" {
			s = q.Get(basePrefix + k)
		}
		if s != "" {
			out.Set(k, s)
		}
	}
	return out
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, vs := range q {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func sumValues(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
	}
	return n
}

func typeTitleOf(p *profile.Profile) string {
	m := typeMeta{sampleType: p.SampleType[0].Type, sampleUnit: p.SampleType[0].Unit}
	if p.PeriodType != nil {
		m.periodType, m.periodUnit, m.period = p.PeriodType.Type, p.PeriodType.Unit, p.Period
	}
	return typeTitle(m)
}
