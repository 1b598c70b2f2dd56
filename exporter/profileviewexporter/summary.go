// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profileviewexporter // import "github.com/nexovue/otelcol-nexovue/exporter/profileviewexporter"

import "sort"

// serviceSummary is one row of the index.
type serviceSummary struct {
	Name     string
	CPUNanos int64   // on-CPU time in the selection
	Samples  int64   // samples of every type
	Share    float64 // of all services' on-CPU time, in percent
	Types    []typeSummary
	Versions []string // service.version values, sorted

	cpuFromSamples, cpuFromNanos int64
}

type typeSummary struct {
	Key, Title, Unit string
	Samples, Total   int64
	// Compare is the index's link to this type compared with the previous
	// window; Versions, to each version compared with the one before it.
	Compare  string
	Versions []versionLink
}

type versionLink struct{ This, Base, URL string }

// summary lists the services of the selection, busiest (on-CPU time) first,
// then by samples, then by name.
func (st *store) summary(sel selection) (services []*serviceSummary, namespaces, hosts []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	byName := map[string]*serviceSummary{}
	types := map[string]map[string]*typeSummary{}
	nsSet, hostSet := map[string]bool{}, map[string]bool{}
	versions := map[string]map[string]bool{}
	var allCPU int64
	for _, sl := range st.slots {
		if !st.inRange(sel, sl) {
			continue
		}
		for k, se := range sl.series {
			if k.namespace != "" {
				nsSet[k.namespace] = true
			}
			if k.host != "" {
				hostSet[k.host] = true
			}
			if !sel.matches(k) {
				continue
			}
			s := byName[k.service]
			if s == nil {
				s = &serviceSummary{Name: k.service}
				byName[k.service] = s
				types[k.service] = map[string]*typeSummary{}
				versions[k.service] = map[string]bool{}
			}
			if k.version != "" {
				versions[k.service][k.version] = true
			}
			t := types[k.service][k.ptype]
			if t == nil {
				t = &typeSummary{Key: k.ptype, Title: typeTitle(se.meta), Unit: se.meta.sampleUnit}
				types[k.service][k.ptype] = t
			}
			t.Samples += se.events
			t.Total += se.values
			s.Samples += se.events
			// A Go CPU profile through the pprof receiver arrives as two
			// types, samples/count and cpu/nanoseconds, of the same CPU
			// time: the service's is the larger of the two sums.
			if se.meta.cpuSamples() {
				s.cpuFromSamples += se.meta.cpuNanos(se.values)
			} else {
				s.cpuFromNanos += se.meta.cpuNanos(se.values)
			}
		}
	}
	for _, s := range byName {
		s.CPUNanos = max(s.cpuFromSamples, s.cpuFromNanos)
		allCPU += s.CPUNanos
	}
	for name, s := range byName {
		for _, t := range types[name] {
			s.Types = append(s.Types, *t)
		}
		sort.Slice(s.Types, func(i, j int) bool { return s.Types[i].Key < s.Types[j].Key })
		s.Versions = sortedKeys(versions[name])
		if allCPU > 0 {
			s.Share = 100 * float64(s.CPUNanos) / float64(allCPU)
		}
		services = append(services, s)
	}
	sort.Slice(services, func(i, j int) bool {
		a, b := services[i], services[j]
		if a.CPUNanos != b.CPUNanos {
			return a.CPUNanos > b.CPUNanos
		}
		if a.Samples != b.Samples {
			return a.Samples > b.Samples
		}
		return a.Name < b.Name
	})
	return services, sortedKeys(nsSet), sortedKeys(hostSet)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
