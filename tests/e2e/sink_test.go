package e2e

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// sink is what a file exporter (JSON lines) next to the nexovue exporter
// wrote: the double keeps only service.name of each resource and mixes the
// profile types of a service, so the tests read the rest here.
type sink struct {
	// attrs: per service.name, every resource attribute seen (as strings).
	attrs map[string]map[string]string
	// functions: per service.name and sample type ("type/unit"), how many
	// samples had each function anywhere in their stack.
	functions map[string]map[string]map[string]int
}

// readSink reads the file exporter's output; a missing file is empty and a
// line still being written is skipped.
func readSink(path string) (sink, error) {
	s := sink{attrs: map[string]map[string]string{}, functions: map[string]map[string]map[string]int{}}
	return s, testenv.ReadProfileLines(path, s.add)
}

func (s sink) add(pd pprofile.Profiles) {
	dict := pd.Dictionary()
	str := func(i int32) string { return dict.StringTable().At(int(i)) }
	for _, rp := range pd.ResourceProfiles().All() {
		service := ""
		if v, ok := rp.Resource().Attributes().Get("service.name"); ok {
			service = v.AsString()
		}
		attrs := s.attrs[service]
		if attrs == nil {
			attrs = map[string]string{}
			s.attrs[service] = attrs
		}
		for k, v := range rp.Resource().Attributes().All() {
			attrs[k] = v.AsString()
		}
		byType := s.functions[service]
		if byType == nil {
			byType = map[string]map[string]int{}
			s.functions[service] = byType
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				typ := str(p.SampleType().TypeStrindex()) + "/" + str(p.SampleType().UnitStrindex())
				fns := byType[typ]
				if fns == nil {
					fns = map[string]int{}
					byType[typ] = fns
				}
				for _, smp := range p.Samples().All() {
					seen := map[string]bool{}
					for _, li := range dict.StackTable().At(int(smp.StackIndex())).LocationIndices().All() {
						for _, line := range dict.LocationTable().At(int(li)).Lines().All() {
							name := str(dict.FunctionTable().At(int(line.FunctionIndex())).NameStrindex())
							if !seen[name] {
								seen[name] = true
								fns[name]++
							}
						}
					}
				}
			}
		}
	}
}

// typesWith returns the sample types of service in whose stacks a function
// whose name contains fn appears.
func (s sink) typesWith(service, fn string) []string {
	var out []string
	for typ, fns := range s.functions[service] {
		for name := range fns {
			if strings.Contains(name, fn) {
				out = append(out, typ)
				break
			}
		}
	}
	return out
}
