package ingest

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// RequestInfo is the metadata kept about one recent request. It never holds
// the ingest key.
type RequestInfo struct {
	Time            time.Time `json:"time"`
	Status          int       `json:"status"` // 0: connection closed without answer
	Samples         int64     `json:"samples"`
	Frames          int64     `json:"frames"`
	BodyBytes       int       `json:"body_bytes"`
	ContentType     string    `json:"content_type,omitempty"`
	ContentEncoding string    `json:"content_encoding,omitempty"`
	Reason          string    `json:"reason,omitempty"` // why it was refused
	EarlyRetry      bool      `json:"early_retry,omitempty"`
	// Client is the Config.ClientHeader value; ClientEarlyRetry: it arrived
	// inside a Retry-After period this client was given.
	Client           string `json:"client,omitempty"`
	ClientEarlyRetry bool   `json:"client_early_retry,omitempty"`
	// Key is the key's name in Config.KeyNames (never the key itself).
	Key string `json:"key,omitempty"`
}

// KeyStats is what was answered and accepted for one key named in
// Config.KeyNames.
type KeyStats struct {
	RequestsByStatus map[int]int `json:"requests_by_status"`
	SamplesAccepted  int64       `json:"samples_accepted"`
	Seq              SeqStats    `json:"seq"`
	// LastAccepted is when the key's last request was accepted.
	LastAccepted time.Time `json:"last_accepted"`
	// Services is the samples accepted per service.name.
	Services map[string]int64 `json:"services"`
}

// FunctionCount is a function and its sample count.
type FunctionCount struct {
	Function string `json:"function"`
	Samples  int64  `json:"samples"`
}

// ServiceStats is what was accepted for one service.name.
type ServiceStats struct {
	Samples      int64                `json:"samples"`
	Linked       int64                `json:"samples_linked"` // samples with a link to a span
	SampleTypes  []SampleType         `json:"sample_types"`
	ByType       map[string]TypeStats `json:"by_type"`
	TopLeaf      []FunctionCount      `json:"top_leaf"`
	TopInclusive []FunctionCount      `json:"top_inclusive"`
}

// SeqStats summarises the seq attribute of accepted samples.
type SeqStats struct {
	Distinct   int   `json:"distinct"`
	Duplicates int64 `json:"duplicates"` // samples whose seq was already seen
	Min        int64 `json:"min"`
	Max        int64 `json:"max"`
}

// Stats is a snapshot of what the server answered and accepted. It is also
// served as JSON on GET /stats.
type Stats struct {
	RequestsByStatus map[int]int `json:"requests_by_status"`
	Dropped          int         `json:"dropped_connections"`
	EarlyRetries     int         `json:"early_retries"`
	// ClientEarlyRetries: requests inside a Retry-After period their own
	// client was given (only with Config.ClientHeader).
	ClientEarlyRetries int   `json:"client_early_retries"`
	AcceptedRequests   int   `json:"accepted_requests"`
	SamplesAccepted    int64 `json:"samples_accepted"`
	// SamplesTaken: the accepted samples as the profiler took them
	// (TakenCount), however they were packed into Sample messages.
	SamplesTaken   int64 `json:"samples_taken"`
	SamplesLinked  int64 `json:"samples_linked"` // accepted samples with a link to a span
	FramesAccepted int64 `json:"frames_accepted"`
	// ByType is what was accepted per sample type ("type/unit"), all
	// services together.
	ByType     map[string]TypeStats    `json:"by_type"`
	Services   map[string]ServiceStats `json:"services"`
	Seq        SeqStats                `json:"seq"`
	Recent     []RequestInfo           `json:"recent_requests"`
	MissingSeq []int64                 `json:"missing_seq,omitempty"` // only on /stats?missing_below=N
	// Keys holds the statistics of each key named in Config.KeyNames, by name.
	Keys map[string]KeyStats `json:"keys,omitempty"`
}

// statsTopN is how many functions per service Stats lists (leaf and inclusive).
const statsTopN = 10

// Window is what was received between two calls of Server.TakeWindow.
type Window struct {
	Start    time.Time
	End      time.Time
	Samples  int64                       // samples accepted, of every type
	Linked   int64                       // of which with a link to a span
	Services map[string]int64            // samples accepted per service.name, off-CPU ones aside
	OffCPU   map[string]int64            // off-CPU samples accepted per service.name
	Leaf     map[string]map[string]int64 // per service: leaf function -> samples
	Statuses map[int]int                 // answers by status code
	Dropped  int                         // connections closed without answer
}

func newWindow(start time.Time) *Window {
	return &Window{Start: start, Services: map[string]int64{}, OffCPU: map[string]int64{}, Leaf: map[string]map[string]int64{}, Statuses: map[int]int{}}
}

// serviceAgg is the running aggregate for one service.
type serviceAgg struct {
	samples     int64
	byType      map[string]*TypeStats
	linked      int64
	sampleTypes []SampleType
	leaf        map[string]int64
	inclusive   map[string]int64
}

// aggregates holds everything the server keeps; guarded by Server.mu.
type aggregates struct {
	byStatus     map[int]int
	dropped      int
	earlyRetries int
	clientEarly  int
	accepted     int
	samples      int64
	taken        int64 // samples as the profiler took them (TakenCount)
	linked       int64
	frames       int64
	services     map[string]*serviceAgg
	seq          map[int64]int64 // seq -> times seen
	seqDup       int64
	recent       []RequestInfo // ring buffer
	recentNext   int
	keepRecent   int
	window       *Window
	keys         map[string]*keyAgg // by Config.KeyNames name
}

// keyAgg is the running aggregate of one named key.
type keyAgg struct {
	byStatus map[int]int
	samples  int64
	seq      map[int64]int64
	seqDup   int64
	last     time.Time
	services map[string]int64
}

func (a *aggregates) key(name string) *keyAgg {
	k := a.keys[name]
	if k == nil {
		k = &keyAgg{byStatus: map[int]int{}, seq: map[int64]int64{}, services: map[string]int64{}}
		a.keys[name] = k
	}
	return k
}

// mergeKey counts an accepted request of the key named name ("" : none).
func (a *aggregates) mergeKey(name string, sum *summary, samples int64, now time.Time) {
	if name == "" {
		return
	}
	k := a.key(name)
	k.samples += samples
	k.last = now
	for name, ss := range sum.services {
		k.services[name] += ss.samples
	}
	for _, q := range sum.seqs {
		if k.seq[q] > 0 {
			k.seqDup++
		}
		k.seq[q]++
	}
}

func newAggregates(keepRecent int, now time.Time) *aggregates {
	return &aggregates{
		byStatus:   map[int]int{},
		services:   map[string]*serviceAgg{},
		seq:        map[int64]int64{},
		keys:       map[string]*keyAgg{},
		keepRecent: keepRecent,
		window:     newWindow(now),
	}
}

func (a *aggregates) record(info RequestInfo) {
	if info.Status == 0 {
		a.dropped++
		a.window.Dropped++
	} else {
		a.byStatus[info.Status]++
		a.window.Statuses[info.Status]++
	}
	if info.Key != "" {
		a.key(info.Key).byStatus[info.Status]++
	}
	if info.ClientEarlyRetry {
		a.clientEarly++
	}
	if info.EarlyRetry {
		a.earlyRetries++
	}
	if len(a.recent) < a.keepRecent {
		a.recent = append(a.recent, info)
		return
	}
	a.recent[a.recentNext] = info
	a.recentNext = (a.recentNext + 1) % a.keepRecent
}

func (a *aggregates) merge(sum *summary, samples, frames int64) {
	a.accepted++
	a.samples += samples
	a.frames += frames
	a.window.Samples += samples
	for name, ss := range sum.services {
		agg := a.services[name]
		if agg == nil {
			agg = &serviceAgg{leaf: map[string]int64{}, inclusive: map[string]int64{}, byType: map[string]*TypeStats{}}
			a.services[name] = agg
		}
		agg.samples += ss.samples
		for typ, ts := range ss.byType {
			if agg.byType[typ] == nil {
				agg.byType[typ] = &TypeStats{}
			}
			agg.byType[typ].add(*ts)
			a.taken += ts.Taken
		}
		agg.linked += ss.linked
		a.linked += ss.linked
		a.window.Linked += ss.linked
		for _, st := range ss.sampleTypes {
			agg.sampleTypes = appendUnique(agg.sampleTypes, st)
		}
		addCounts(agg.leaf, ss.leaf)
		addCounts(agg.inclusive, ss.inclusive)
		a.window.OffCPU[name] += ss.offCPU
		if cpu := ss.samples - ss.offCPU; cpu > 0 {
			a.window.Services[name] += cpu
			wl := a.window.Leaf[name]
			if wl == nil {
				wl = map[string]int64{}
				a.window.Leaf[name] = wl
			}
			addCounts(wl, ss.leaf)
		}
	}
	for _, q := range sum.seqs {
		if a.seq[q] > 0 {
			a.seqDup++
		}
		a.seq[q]++
	}
}

// maxFunctionsPerService bounds the distinct function names kept per
// service (and per service in a window); further names are counted as
// OtherFunctions.
const maxFunctionsPerService = 10_000

// OtherFunctions is the name samples of functions beyond the per-service
// bound of distinct names are counted under.
const OtherFunctions = "(other functions)"

func addCounts(dst, src map[string]int64) {
	for k, v := range src {
		if _, ok := dst[k]; !ok && len(dst) >= maxFunctionsPerService {
			k = OtherFunctions
		}
		dst[k] += v
	}
}

// TopCounts returns the n largest entries of counts, largest first, ties by
// name; n <= 0 means all.
func TopCounts(counts map[string]int64, n int) []FunctionCount {
	out := make([]FunctionCount, 0, len(counts))
	for k, v := range counts {
		out = append(out, FunctionCount{Function: k, Samples: v})
	}
	slices.SortFunc(out, func(x, y FunctionCount) int {
		if c := cmp.Compare(y.Samples, x.Samples); c != 0 {
			return c
		}
		return cmp.Compare(x.Function, y.Function)
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

func (a *aggregates) seqStats() SeqStats { return seqStatsOf(a.seq, a.seqDup) }

func seqStatsOf(seqs map[int64]int64, dup int64) SeqStats {
	st := SeqStats{Distinct: len(seqs), Duplicates: dup}
	first := true
	for q := range seqs {
		if first || q < st.Min {
			st.Min = q
		}
		if first || q > st.Max {
			st.Max = q
		}
		first = false
	}
	return st
}

func (a *aggregates) missingSeq(n int64) []int64 {
	var out []int64
	for q := int64(0); q < n; q++ {
		if a.seq[q] == 0 {
			out = append(out, q)
		}
	}
	return out
}

func (a *aggregates) snapshot() Stats {
	st := Stats{
		RequestsByStatus:   maps.Clone(a.byStatus),
		Dropped:            a.dropped,
		EarlyRetries:       a.earlyRetries,
		ClientEarlyRetries: a.clientEarly,
		AcceptedRequests:   a.accepted,
		SamplesAccepted:    a.samples,
		SamplesTaken:       a.taken,
		SamplesLinked:      a.linked,
		FramesAccepted:     a.frames,
		Services:           make(map[string]ServiceStats, len(a.services)),
		Seq:                a.seqStats(),
		Recent:             a.recentInOrder(),
		ByType:             map[string]TypeStats{},
	}
	if len(a.keys) > 0 {
		st.Keys = make(map[string]KeyStats, len(a.keys))
		for name, k := range a.keys {
			st.Keys[name] = KeyStats{RequestsByStatus: maps.Clone(k.byStatus), SamplesAccepted: k.samples, Seq: seqStatsOf(k.seq, k.seqDup), LastAccepted: k.last, Services: maps.Clone(k.services)}
		}
	}
	for name, agg := range a.services {
		byType := make(map[string]TypeStats, len(agg.byType))
		for typ, ts := range agg.byType {
			byType[typ] = *ts
			all := st.ByType[typ]
			all.add(*ts)
			st.ByType[typ] = all
		}
		st.Services[name] = ServiceStats{
			Samples:      agg.samples,
			Linked:       agg.linked,
			SampleTypes:  slices.Clone(agg.sampleTypes),
			ByType:       byType,
			TopLeaf:      TopCounts(agg.leaf, statsTopN),
			TopInclusive: TopCounts(agg.inclusive, statsTopN),
		}
	}
	return st
}

func (a *aggregates) recentInOrder() []RequestInfo {
	out := make([]RequestInfo, 0, len(a.recent))
	if len(a.recent) < a.keepRecent {
		return append(out, a.recent...)
	}
	out = append(out, a.recent[a.recentNext:]...)
	return append(out, a.recent[:a.recentNext]...)
}
