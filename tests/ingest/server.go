package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// Server is the nexovue ingest double. Create it with New, then Start it.
// All methods are safe for concurrent use.
type Server struct {
	cfg     Config
	srv     *http.Server
	ln      net.Listener
	closing chan struct{}
	once    sync.Once

	mu        sync.Mutex
	limits    limits
	fault     Fault
	rng       *rand.Rand
	keys      map[string]*keyWindow
	agg       *aggregates
	validKeys map[string]struct{}
	revoked   map[string]struct{} // keys answered 401 until restored
	delaying  atomic.Int64        // requests being held by Fault.Delay now
	bodies    [][]byte            // accepted bodies, up to Config.KeepBodies
}

type limits struct {
	samplesPerSecond int64
	maxFrames        int64
}

// New returns a server for cfg (see Config for defaults). It does not listen
// until Start.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:       cfg,
		closing:   make(chan struct{}),
		limits:    limits{samplesPerSecond: cfg.SamplesPerSecond, maxFrames: cfg.MaxFrames},
		keys:      map[string]*keyWindow{},
		agg:       newAggregates(cfg.KeepRecent, cfg.Now()),
		validKeys: map[string]struct{}{},
		revoked:   map[string]struct{}{},
	}
	for _, k := range cfg.Keys {
		s.validKeys[k] = struct{}{}
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	return s
}

// Start listens on Config.Addr and serves in the background.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("ingest: listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	go func() { _ = s.srv.Serve(ln) }()
	return nil
}

// URL is the base URL, e.g. "http://127.0.0.1:41234"; profiles go to
// URL()+ProfilesPath.
func (s *Server) URL() string {
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// Endpoint is URL()+ProfilesPath.
func (s *Server) Endpoint() string { return s.URL() + ProfilesPath }

// Close stops listening, closes all connections and ends delayed answers.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closing) })
	_ = s.srv.Close()
}

// SetFault replaces the current fault injection; Fault{} ends it.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
	s.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
}

// Fault returns the fault injection in force (DropFirst and UnavailableFirst
// count down as requests use them).
func (s *Server) Fault() Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fault
}

// SetLimits changes the rate and frame limits at run time; a value <= 0
// keeps the current one.
func (s *Server) SetLimits(samplesPerSecond, maxFrames int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if samplesPerSecond > 0 {
		s.limits.samplesPerSecond = samplesPerSecond
	}
	if maxFrames > 0 {
		s.limits.maxFrames = maxFrames
	}
}

// SetKeyLimit gives key a samples-per-second limit of its own at run time
// (see Config.KeyLimits); n <= 0 returns it to the server-wide limit.
func (s *Server) SetKeyLimit(key string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.KeyLimits == nil {
		s.cfg.KeyLimits = map[string]int64{}
	}
	if n <= 0 {
		delete(s.cfg.KeyLimits, key)
		return
	}
	s.cfg.KeyLimits[key] = n
}

// RevokeKey makes the server refuse key as it refuses a key it does not
// know (401), until RestoreKey.
func (s *Server) RevokeKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked[key] = struct{}{}
}

// RestoreKey accepts a revoked key again.
func (s *Server) RestoreKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.revoked, key)
}

// ServeHTTP serves ProfilesPath and StatsPath.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case ProfilesPath:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			WriteStatus(w, r.Header.Get("Content-Type"), http.StatusMethodNotAllowed, "use POST")
			return
		}
		s.handleProfiles(w, r)
	case StatsPath:
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			WriteStatus(w, "", http.StatusMethodNotAllowed, "use GET")
			return
		}
		s.handleStats(w, r)
	default:
		WriteStatus(w, r.Header.Get("Content-Type"), http.StatusNotFound, "no such path "+r.URL.Path+"; profiles go to "+ProfilesPath)
	}
}

func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	st := s.Stats()
	if v := r.URL.Query().Get("missing_below"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 100_000_000 {
			WriteStatus(w, "", http.StatusBadRequest, "missing_below must be an integer in [0, 100000000]")
			return
		}
		st.MissingSeq = s.MissingSeq(n)
	}
	w.Header().Set("Content-Type", ContentTypeJSON)
	_ = json.NewEncoder(w).Encode(st)
}

// faultAction is what the fault injection decided for one request.
type faultAction struct {
	delay       time.Duration
	drop        bool
	unavailable bool
	retryAfter  time.Duration
	fixedStatus int
	fixedBody   string
}

func (s *Server) takeFault() faultAction {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &s.fault
	a := faultAction{delay: f.Delay}
	switch {
	case f.DropAll:
		a.drop = true
	case f.DropFirst > 0:
		f.DropFirst--
		a.drop = true
	case f.UnavailableFirst > 0:
		f.UnavailableFirst--
		a.unavailable, a.retryAfter = true, f.UnavailableRetryAfter
	case f.FixedStatus != 0:
		a.fixedStatus, a.fixedBody = f.FixedStatus, f.FixedBody
	}
	return a
}

func (s *Server) record(info RequestInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agg.record(info)
}

func (s *Server) handleProfiles(w http.ResponseWriter, r *http.Request) {
	ct := r.Header.Get("Content-Type")
	info := RequestInfo{Time: s.cfg.Now(), ContentType: ct, ContentEncoding: r.Header.Get("Content-Encoding")}
	refuse := func(status int, reason string) {
		info.Status, info.Reason = status, reason
		s.record(info)
		WriteStatus(w, ct, status, reason)
	}

	fa := s.takeFault()
	if fa.delay > 0 {
		s.delaying.Add(1)
		t := time.NewTimer(fa.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
		case <-s.closing:
		}
		t.Stop()
		s.delaying.Add(-1)
	}
	switch {
	case fa.drop:
		_, info.BodyBytes, _ = readBody(r, s.cfg.MaxBodyBytes)
		info.Reason = "fault: connection closed without answer"
		s.record(info)
		closeWithoutAnswer(w)
		return
	case fa.unavailable:
		if fa.retryAfter > 0 {
			h, _ := s.announce(s.cfg.Now(), fa.retryAfter)
			w.Header().Set("Retry-After", h)
		}
		refuse(http.StatusServiceUnavailable, "fault: service unavailable")
		return
	case fa.fixedStatus != 0:
		refuse(fa.fixedStatus, fa.fixedBody)
		return
	}

	// 1. key
	key := r.Header.Get(KeyHeader)
	info.Key = s.cfg.KeyNames[key]
	if !s.keyValid(key) {
		if key == "" {
			refuse(http.StatusUnauthorized, "missing "+KeyHeader+" header")
		} else {
			refuse(http.StatusUnauthorized, "unknown "+KeyHeader)
		}
		return
	}

	// 2. decoding
	mt := mediaType(ct)
	if mt != ContentTypeProto && mt != ContentTypeJSON {
		refuse(http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported Content-Type %q (want %s or %s)", ct, ContentTypeProto, ContentTypeJSON))
		return
	}
	body, n, err := readBody(r, s.cfg.MaxBodyBytes)
	info.BodyBytes = n
	if errors.Is(err, errTooLarge) {
		refuse(http.StatusRequestEntityTooLarge, err.Error())
		return
	}
	if err != nil {
		refuse(http.StatusBadRequest, err.Error())
		return
	}
	req := pprofileotlp.NewExportRequest()
	if mt == ContentTypeProto {
		err = req.UnmarshalProto(body)
	} else {
		err = req.UnmarshalJSON(body)
	}
	if err != nil {
		if lerr := linkIDError(mt, body); lerr != nil {
			refuse(http.StatusBadRequest, lerr.Error())
			return
		}
		refuse(http.StatusBadRequest, "cannot decode ExportProfilesServiceRequest ("+mt+"): "+err.Error())
		return
	}
	pd := req.Profiles()

	// 3. indices
	if err := Validate(pd); err != nil {
		refuse(http.StatusBadRequest, err.Error())
		return
	}

	// 4. frames
	info.Samples, info.Frames = countFrames(pd)
	s.mu.Lock()
	lim := s.limits
	if n, ok := s.cfg.KeyLimits[key]; ok {
		lim.samplesPerSecond = n
	}
	s.mu.Unlock()
	if info.Frames > lim.maxFrames {
		refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("request stacks write out to %d frames, more than the limit of %d; lower the batch size", info.Frames, lim.maxFrames))
		return
	}

	// 5. rate limit
	var client string
	if s.cfg.ClientHeader != "" {
		client = r.Header.Get(s.cfg.ClientHeader)
		info.Client = client
	}
	d := s.admit(key, client, info.Samples, lim.samplesPerSecond, info.Time)
	info.ClientEarlyRetry = d.clientEarly
	if d.refused {
		info.EarlyRetry = d.early
		if d.retryAfter != "" {
			w.Header().Set("Retry-After", d.retryAfter)
		}
		refuse(http.StatusTooManyRequests, d.reason)
		return
	}

	// 6. accepted
	sum := summarize(pd)
	info.Status = http.StatusOK
	s.mu.Lock()
	s.agg.merge(sum, info.Samples, info.Frames)
	s.agg.mergeKey(info.Key, sum, info.Samples, info.Time)
	s.agg.record(info)
	if len(s.bodies) < s.cfg.KeepBodies {
		s.bodies = append(s.bodies, body)
	}
	s.mu.Unlock()
	if s.cfg.OnAccepted != nil {
		s.cfg.OnAccepted(pd)
	}

	resp := pprofileotlp.NewExportResponse()
	var out []byte
	if mt == ContentTypeProto {
		out, err = resp.MarshalProto()
	} else {
		out, err = resp.MarshalJSON()
	}
	if err != nil {
		WriteStatus(w, ct, http.StatusInternalServerError, "cannot encode response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", mt)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// closeWithoutAnswer closes the request's connection without writing a
// response.
func closeWithoutAnswer(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // aborts the connection or stream silently
}

func (s *Server) keyValid(key string) bool {
	if key == "" {
		return false
	}
	s.mu.Lock()
	_, revoked := s.revoked[key]
	s.mu.Unlock()
	if revoked {
		return false
	}
	if len(s.validKeys) == 0 {
		return true
	}
	_, ok := s.validKeys[key]
	return ok
}

// Stats returns a snapshot of what was answered and accepted.
func (s *Server) Stats() Stats {
	return locked(s, func(a *aggregates) Stats { return a.snapshot() })
}

// Requests returns how many requests were answered with status.
func (s *Server) Requests(status int) int {
	return locked(s, func(a *aggregates) int { return a.byStatus[status] })
}

// Delaying returns how many requests Fault.Delay is holding right now.
func (s *Server) Delaying() int {
	return int(s.delaying.Load())
}

// Dropped returns how many connections were closed without answer.
func (s *Server) Dropped() int {
	return locked(s, func(a *aggregates) int { return a.dropped })
}

// EarlyRetries returns how many requests came from a key before the
// Retry-After it was given had passed.
func (s *Server) EarlyRetries() int {
	return locked(s, func(a *aggregates) int { return a.earlyRetries })
}

// SamplesAccepted returns the total samples accepted (answered 200).
func (s *Server) SamplesAccepted() int64 {
	return locked(s, func(a *aggregates) int64 { return a.samples })
}

// SamplesTaken returns the accepted samples as the profiler took them
// (TakenCount: timestamps, else a count value), which does not depend on
// how a sender packed them into Sample messages; SamplesAccepted counts the
// messages, as the rate limit does.
func (s *Server) SamplesTaken() int64 {
	return locked(s, func(a *aggregates) int64 { return a.taken })
}

// FramesAccepted returns the total frames accepted (answered 200).
func (s *Server) FramesAccepted() int64 {
	return locked(s, func(a *aggregates) int64 { return a.frames })
}

// ServiceSamples returns the samples accepted per service.name ("" for
// resources without one).
func (s *Server) ServiceSamples() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.agg.services))
	for name, a := range s.agg.services {
		out[name] = a.samples
	}
	return out
}

// TopLeafFunctions returns the n functions (n <= 0: all) a service's samples
// most often ended in: the function of the first line of the location at
// index 0 of the sample's stack.
func (s *Server) TopLeafFunctions(service string, n int) []FunctionCount {
	return withService(s, service, func(a *serviceAgg) []FunctionCount { return TopCounts(a.leaf, n) })
}

// TopInclusiveFunctions returns the n functions (n <= 0: all) most often
// anywhere in a service's stacks, each distinct function once per sample.
func (s *Server) TopInclusiveFunctions(service string, n int) []FunctionCount {
	return withService(s, service, func(a *serviceAgg) []FunctionCount { return TopCounts(a.inclusive, n) })
}

// SampleTypes returns the sample types (type and unit strings) of the
// profiles accepted for a service, in the order first seen.
func (s *Server) SampleTypes(service string) []SampleType {
	return withService(s, service, func(a *serviceAgg) []SampleType { return slices.Clone(a.sampleTypes) })
}

// locked applies f to the aggregates under the lock.
func locked[T any](s *Server, f func(*aggregates) T) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f(s.agg)
}

// withService applies f to a service's aggregate under the lock; the zero T
// for an unknown service.
func withService[T any](s *Server, service string, f func(*serviceAgg) T) T {
	return locked(s, func(agg *aggregates) T {
		if a := agg.services[service]; a != nil {
			return f(a)
		}
		var zero T
		return zero
	})
}

// Seq returns the distinct and duplicate counts of the seq attribute.
func (s *Server) Seq() SeqStats {
	return locked(s, func(a *aggregates) SeqStats { return a.seqStats() })
}

// MissingSeq returns, in order, the values in [0, n) that no accepted sample
// carried as its seq attribute.
func (s *Server) MissingSeq(n int64) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agg.missingSeq(n)
}

// RecentRequests returns the metadata of the most recent requests (at most
// Config.KeepRecent), oldest first.
func (s *Server) RecentRequests() []RequestInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agg.recentInOrder()
}

// AcceptedBodies returns the decompressed bodies of the first
// Config.KeepBodies accepted requests, in the order they were accepted.
func (s *Server) AcceptedBodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bodies)
}

// Reset forgets everything received and every key's rate window and block,
// and ends fault injection; limits stay as they are.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agg = newAggregates(s.cfg.KeepRecent, s.cfg.Now())
	s.keys = map[string]*keyWindow{}
	s.fault = Fault{}
	s.bodies = nil
}

// TakeWindow returns what was received since the previous call (or since
// New) and starts a new window.
func (s *Server) TakeWindow() Window {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	w := s.agg.window
	w.End = now
	s.agg.window = newWindow(now)
	return *w
}
