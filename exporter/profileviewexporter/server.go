// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter // import "github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter"

import (
	"errors"
	"flag"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/driver"
	"github.com/google/pprof/profile"
	"go.uber.org/zap"
)

func zapErr(err error) zap.Field { return zap.Error(err) }

// The pages of pprof's web UI served for a selection; the others (graph needs
// Graphviz, disasm the binaries, saveconfig writes files) are not.
var uiPages = map[string]bool{"/": true, "/flamegraph": true, "/top": true, "/peek": true, "/source": true}

const maxQueryBytes = 4096

func (v *view) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", v.index)
	mux.HandleFunc("GET /download", v.download)
	mux.HandleFunc("GET /compare", v.compare)
	mux.HandleFunc("GET /ui/", v.ui)
	return mux
}

// parseSelection reads the filters: last (a duration back from now), or
// from and to (RFC 3339); k8s.namespace.name and host.name.
func parseSelection(q url.Values, now time.Time) (selection, error) {
	var sel selection
	if s := q.Get("last"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return sel, fmt.Errorf("last: %q is not a positive duration (e.g. 2m)", s)
		}
		sel.from = now.Add(-d).UnixNano()
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"from", &sel.from}, {"to", &sel.to}} {
		if s := q.Get(f.name); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return sel, fmt.Errorf("%s: %q is not an RFC 3339 time (e.g. 2026-12-04T15:04:05Z)", f.name, s)
			}
			*f.dst = t.UnixNano()
		}
	}
	if sel.from != 0 && sel.to != 0 && sel.to <= sel.from {
		name := "to"
		if q.Get("to") == "" {
			name = "last"
		}
		return sel, fmt.Errorf("%s: the range %s to %s is empty", name, time.Unix(0, sel.from).UTC().Format(time.RFC3339), time.Unix(0, sel.to).UTC().Format(time.RFC3339))
	}
	switch s := q.Get(slotsParam); s {
	case "", slotsOverlap:
	case slotsMiddle:
		sel.midpoint = true
	default:
		return sel, fmt.Errorf("%s: %q is not %s (every slot that overlaps the range, the default) or %s (the slots whose middle is in it, as a comparison counts them)", slotsParam, s, slotsOverlap, slotsMiddle)
	}
	sel.namespace = q.Get("k8s.namespace.name")
	sel.host = q.Get("host.name")
	sel.version = q.Get("service.version")
	return sel, nil
}

// slotsParam says which slots a time range takes: slotsOverlap (the
// default) or slotsMiddle (a comparison's rule; its downloads carry it).
const (
	slotsParam   = "slots"
	slotsOverlap = "overlap"
	slotsMiddle  = "middle"
)

// filterKeys are a selection's query parameters, in a stable order.
var filterKeys = []string{"last", "from", "to", "k8s.namespace.name", "host.name", "service.version"}

// selectionQuery keeps only the filters, in a stable order.
func selectionQuery(q url.Values) url.Values {
	out := url.Values{}
	for _, k := range filterKeys {
		if s := q.Get(k); s != "" {
			out.Set(k, s)
		}
	}
	return out
}

// uiPath is where pprof's UI of a selection lives: the filters travel in the
// path (pprof's own links keep only its own query).
func uiPath(service, ptype string, filters url.Values) string {
	sel := filters.Encode()
	if sel == "" {
		sel = "all"
	}
	return "/ui/" + url.PathEscape(service) + "/" + url.PathEscape(ptype) + "/" + url.PathEscape(sel) + "/"
}

func downloadPath(service, ptype string, filters url.Values) string {
	return pagePath("/download", service, ptype, filters)
}

// pagePath is page with the service, the type and q as its query.
func pagePath(page, service, ptype string, q url.Values) string {
	out := url.Values{"service": {service}, "type": {ptype}}
	for k, vs := range q {
		out[k] = vs
	}
	return page + "?" + out.Encode()
}

var indexTemplate = template.Must(template.New("index").Funcs(template.FuncMap{
	"ui":       uiPath,
	"download": downloadPath,
	"inc":      func(i int) int { return i + 1 },
	"first": func(vs []string) string {
		if len(vs) == 0 {
			return ""
		}
		return vs[0]
	},
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>otelcol-nexovue profile view</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{padding:.25em .8em;text-align:left;border-bottom:1px solid #ddd}td.n{text-align:right}form input{width:12em}</style>
</head><body>
<h1>Profiles in this collector's window</h1>
<p>The last {{.Window}} of profiles this collector received, at most {{.MaxMiB}} MiB; busiest service (on-CPU time) first. Each profile type is its own view: on-CPU samples, off-CPU time and heap bytes are never mixed.</p>
<form method="get" action="./">
<label>last <input name="last" value="{{.Filters.Get "last"}}" placeholder="e.g. 2m"></label>
<label>from <input name="from" value="{{.Filters.Get "from"}}" placeholder="RFC 3339"></label>
<label>to <input name="to" value="{{.Filters.Get "to"}}" placeholder="RFC 3339"></label>
<label>k8s.namespace.name <input name="k8s.namespace.name" value="{{index .Filters "k8s.namespace.name" | first}}" list="ns"></label>
<label>host.name <input name="host.name" value="{{index .Filters "host.name" | first}}" list="hosts"></label>
<label>service.version <input name="service.version" value="{{index .Filters "service.version" | first}}"></label>
<datalist id="ns">{{range .Namespaces}}<option value="{{.}}">{{end}}</datalist>
<datalist id="hosts">{{range .Hosts}}<option value="{{.}}">{{end}}</datalist>
<button type="submit">Filter</button> <a href="./">clear</a>
</form>
{{if .Error}}<p id="error" style="color:#b00">{{.Error}}</p>{{end}}
{{if not .Services}}<p id="empty">No profiles in the window{{if .Filters}} for these filters{{end}} yet.</p>{{else}}
<table id="services"><thead><tr><th>#</th><th>service</th><th>samples</th><th>on-CPU share</th><th>profile types</th></tr></thead><tbody>
{{range $i, $s := .Services}}<tr class="service" data-service="{{$s.Name}}"><td class="n">{{inc $i}}</td><td class="name">{{$s.Name}}{{if $s.Versions}} <small class="versions">({{range $j, $v := $s.Versions}}{{if $j}}, {{end}}{{$v}}{{end}})</small>{{end}}</td><td class="n">{{$s.Samples}}</td><td class="n">{{printf "%.1f%%" $s.Share}}</td><td>
{{range $s.Types}}<span class="type" data-type="{{.Key}}">{{.Title}} ({{.Samples}} samples):
<a class="flamegraph" href="{{ui $s.Name .Key $.Filters}}flamegraph">flame graph</a>
<a href="{{ui $s.Name .Key $.Filters}}top">top</a>
<a href="{{ui $s.Name .Key $.Filters}}source">source</a>
<a class="download" href="{{download $s.Name .Key $.Filters}}">download</a>
{{if .Compare}}<a class="compare" href="{{.Compare}}">compare with the previous window</a>{{end}}
{{range .Versions}}<a class="compare-version" data-version="{{.This}}" data-base-version="{{.Base}}" href="{{.URL}}">compare {{.This}} with {{.Base}}</a> {{end}}</span><br>
{{end}}</td></tr>
{{end}}</tbody></table>{{end}}
</body></html>
`))

type indexData struct {
	Window     time.Duration
	MaxMiB     int
	Filters    url.Values
	Error      string
	Services   []*serviceSummary
	Namespaces []string
	Hosts      []string
}

func (v *view) index(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > maxQueryBytes {
		http.Error(w, "query too long", http.StatusRequestURITooLong)
		return
	}
	q := r.URL.Query()
	d := indexData{Window: v.cfg.Window, MaxMiB: v.cfg.MaxMemoryMiB, Filters: selectionQuery(q)}
	sel, err := parseSelection(q, v.store.now())
	if err != nil {
		d.Error = err.Error()
		w.WriteHeader(http.StatusBadRequest)
	} else {
		d.Services, d.Namespaces, d.Hosts = v.store.summary(sel)
		v.compareLinks(d.Services, sel, d.Filters)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := indexTemplate.Execute(w, d); err != nil {
		v.set.Logger.Debug("profile view: index not written", zapErr(err))
	}
}

// compareLinks sets each type's links to its comparisons: with the previous
// window (absolute times, so the link can be shared) and, for a service
// with several service.version values, each version against the one before
// it (sorted by name) over the same range.
func (v *view) compareLinks(services []*serviceSummary, sel selection, filters url.Values) {
	this, base, ok := previousWindow(sel, v.store.now(), v.cfg.Window, time.Duration(v.store.width))
	prev := url.Values{}
	for _, k := range []string{"k8s.namespace.name", "host.name", "service.version"} {
		if s := filters.Get(k); s != "" {
			prev.Set(k, s)
		}
	}
	prev.Set("from", this[0].Format(time.RFC3339))
	prev.Set("to", this[1].Format(time.RFC3339))
	prev.Set(basePrefix+"from", base[0].Format(time.RFC3339))
	prev.Set(basePrefix+"to", base[1].Format(time.RFC3339))
	for _, s := range services {
		for i := range s.Types {
			t := &s.Types[i]
			if ok {
				t.Compare = comparePath(s.Name, t.Key, prev)
			}
			for j := 1; j < len(s.Versions); j++ {
				q := cloneValues(filters)
				q.Set("service.version", s.Versions[j])
				q.Set(basePrefix+"service.version", s.Versions[j-1])
				t.Versions = append(t.Versions, versionLink{This: s.Versions[j], Base: s.Versions[j-1], URL: comparePath(s.Name, t.Key, q)})
			}
		}
	}
}

// acquire takes a render slot, or answers 503.
func (v *view) acquire(w http.ResponseWriter) bool {
	select {
	case v.renders <- struct{}{}:
		return true
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("%d pages are being rendered (max_concurrent_renders); try again", cap(v.renders)), http.StatusServiceUnavailable)
		return false
	}
}

func (v *view) release() { <-v.renders }

func (v *view) download(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > maxQueryBytes {
		http.Error(w, "query too long", http.StatusRequestURITooLong)
		return
	}
	q := r.URL.Query()
	service, ptype := q.Get("service"), q.Get("type")
	sel, err := parseSelection(q, v.store.now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v.writeProfile(w, service, ptype, sel)
}

// render takes a render slot and builds the selection's profile, or answers
// (503, 404) and returns nil. The caller releases the slot when p is not nil.
func (v *view) render(w http.ResponseWriter, service, ptype string, sel selection) *profile.Profile {
	if !v.acquire(w) {
		return nil
	}
	p, _ := v.store.build(service, ptype, sel)
	if p == nil {
		v.release()
		http.Error(w, fmt.Sprintf("no %s profile of service %q in the window", ptype, service), http.StatusNotFound)
	}
	return p
}

func (v *view) writeProfile(w http.ResponseWriter, service, ptype string, sel selection) {
	p := v.render(w, service, ptype, sel)
	if p == nil {
		return
	}
	defer v.release()
	w.Header().Set("Content-Type", "application/vnd.google.protobuf+gzip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", fileName(service, ptype)))
	if err := p.Write(w); err != nil { // gzipped
		v.set.Logger.Debug("profile view: download not written", zapErr(err))
	}
}

func fileName(service, ptype string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, service+"."+ptype)
	return clean + ".pb.gz"
}

// ui serves pprof's web UI for /ui/<service>/<type>/<filters>/<page>.
func (v *view) ui(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > maxQueryBytes || len(r.URL.EscapedPath()) > maxQueryBytes {
		http.Error(w, "request too long", http.StatusRequestURITooLong)
		return
	}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.EscapedPath(), "/ui/"), "/", 4)
	if len(parts) < 4 {
		http.NotFound(w, r)
		return
	}
	var dec [3]string
	for i := range dec {
		s, err := url.PathUnescape(parts[i])
		if err != nil {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
		dec[i] = s
	}
	service, ptype, filters := dec[0], dec[1], dec[2]
	if filters == "all" {
		filters = ""
	}
	fq, err := url.ParseQuery(filters)
	if err != nil {
		http.Error(w, "bad filters: "+err.Error(), http.StatusBadRequest)
		return
	}
	sel, err := parseSelection(fq, v.store.now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	page := "/" + parts[3]
	if page == "/download" {
		// Of a comparison: this side (the compare page links both), its
		// slots counted as the comparison counts them.
		sel.midpoint = sel.midpoint || isComparison(fq)
		v.writeProfile(w, service, ptype, sel)
		return
	}
	if !uiPages[page] {
		http.NotFound(w, r)
		return
	}
	var p, base *profile.Profile
	if isComparison(fq) {
		c, err := parseComparison(fq, v.store.now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var ok bool
		if p, base, _, _, ok = v.renderComparison(w, service, ptype, c); !ok {
			return
		}
		defer v.release()
		handlers, err := pprofDiffHandlers(p, base, service+" · "+ptype, c.normalize)
		v.servePprof(w, r, page, handlers, err)
		return
	}
	p = v.render(w, service, ptype, sel)
	if p == nil {
		return
	}
	defer v.release()
	handlers, err := pprofHandlers(p, service+" · "+ptype)
	v.servePprof(w, r, page, handlers, err)
}

func (v *view) servePprof(w http.ResponseWriter, r *http.Request, page string, handlers map[string]http.Handler, err error) {
	if err != nil {
		v.set.Logger.Warn("profile view: pprof's UI could not be made", zapErr(err))
		http.Error(w, "pprof's UI could not be made: "+err.Error(), http.StatusInternalServerError)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = page
	r2.URL.RawPath = ""
	handlers[page].ServeHTTP(w, r2)
}

// pprofMu: pprof's driver keeps some state in package variables, so one
// UI is made at a time (serving its pages runs in parallel).
var pprofMu sync.Mutex

// pprofHandlers runs pprof's driver on p as `pprof -http` would and returns
// the handlers of its web UI, without a server of its own.
func pprofHandlers(p *profile.Profile, name string) (map[string]http.Handler, error) {
	// -normalize=false: pprof keeps its settings between runs, and a
	// comparison's -normalize would otherwise carry over.
	return runPprof([]string{"-http=127.0.0.1:1", "-no_browser", "-symbolize=none", "-normalize=false", name}, fetcher{name: p})
}

// pprofDiffHandlers is pprof's UI of p against base, as `pprof -http
// -diff_base base [-normalize] p` would show it: pprof marks base's samples,
// scales p to base's total when normalizing, negates base and merges the
// two, so its flame graph, top, peek and source show the difference.
func pprofDiffHandlers(p, base *profile.Profile, name string, normalize bool) (map[string]http.Handler, error) {
	baseName := "base: " + name
	args := []string{"-http=127.0.0.1:1", "-no_browser", "-symbolize=none", "-diff_base=" + baseName}
	args = append(args, "-normalize="+strconv.FormatBool(normalize))
	return runPprof(append(args, name), fetcher{name: p, baseName: base})
}

func runPprof(args []string, f fetcher) (map[string]http.Handler, error) {
	pprofMu.Lock()
	defer pprofMu.Unlock()
	var handlers map[string]http.Handler
	err := driver.PProf(&driver.Options{
		Flagset: newFlags(args),
		Fetch:   f,
		UI:      quietUI{},
		HTTPServer: func(args *driver.HTTPServerArgs) error {
			handlers = args.Handlers
			return nil
		},
	})
	if err == nil && handlers == nil {
		err = errors.New("pprof served no handlers")
	}
	return handlers, err
}

// fetcher hands pprof the profiles by their source names.
type fetcher map[string]*profile.Profile

func (f fetcher) Fetch(src string, _, _ time.Duration) (*profile.Profile, string, error) {
	p := f[src]
	if p == nil {
		return nil, "", fmt.Errorf("no profile %q", src)
	}
	return p, src, nil
}

// quietUI: pprof's messages ("Serving web UI on …") are not the collector's.
type quietUI struct{}

func (quietUI) ReadLine(string) (string, error)     { return "", errors.New("no input") }
func (quietUI) Print(...any)                        {}
func (quietUI) PrintErr(...any)                     {}
func (quietUI) IsTerminal() bool                    { return false }
func (quietUI) WantBrowser() bool                   { return false }
func (quietUI) SetAutoComplete(func(string) string) {}

// flags is pprof's FlagSet over a standard one with fixed arguments.
type flags struct {
	*flag.FlagSet
	args []string
}

func newFlags(args []string) *flags {
	fs := flag.NewFlagSet("pprof", flag.ContinueOnError)
	fs.SetOutput(discard{})
	return &flags{FlagSet: fs, args: args}
}

func (f *flags) StringList(name, def, usage string) *[]*string {
	return &[]*string{f.String(name, def, usage)}
}
func (f *flags) ExtraUsage() string   { return "" }
func (f *flags) AddExtraUsage(string) {}
func (f *flags) Parse(usage func()) []string {
	if err := f.FlagSet.Parse(f.args); err != nil {
		usage()
		return nil
	}
	return f.FlagSet.Args()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
