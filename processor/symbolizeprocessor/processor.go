// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor // import "github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor"

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/internal/debugfile"
	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/dwarfindex"
	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/metadata"
)

// Attribute keys the eBPF profiler sets (OpenTelemetry semantic conventions).
const (
	attrPID       = "process.pid"
	attrExePath   = "process.executable.path"
	attrHtlhash   = "process.executable.build_id.htlhash"
	attrGNU       = "process.executable.build_id.gnu"
	attrFrameType = "profile.frame.type"
	frameNative   = "native"
	frameGo       = "go"
)

// maxProcsPerMapping bounds the processes tried to find one mapping's file.
const maxProcsPerMapping = 4

type symbolizeProcessor struct {
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	limits    loadLimits
	// loadWait is how long a batch waits for the files it needs that are
	// being read (load_wait).
	loadWait time.Duration
	// held are the executables the profiling receiver holds open
	// (debugfile.Held; a test's own).
	held *debugfile.HeldFiles

	mu    sync.Mutex // guards cache, and the symbols in it
	cache *symtabCache
	load  *loader
}

func newSymbolizeProcessor(set processor.Settings, cfg *Config) (*symbolizeProcessor, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	client, err := debugfile.NewDebuginfod(cfg.Debuginfod, set.Logger)
	if err != nil {
		return nil, err
	}
	p := &symbolizeProcessor{
		logger:    set.Logger,
		telemetry: tb,
		limits: loadLimits{
			maxFileSize: int64(cfg.MaxFileSizeMiB) << 20,
			indexBytes:  cfg.CacheSizeMiB << 20,
			debugDirs:   cfg.DebugDirs,
			debuginfod:  client,
		},
		loadWait: cfg.LoadWait,
		held:     debugfile.Held,
		cache:    newSymtabCache(cfg.CacheSizeMiB << 20),
	}
	p.load = newLoader(p)
	return p, nil
}

// debuginfodHas tells whether the debuginfod client has fetched a build
// ID's debug file; if not, it asks for it (again, once a miss's
// negative_cache_ttl is over), without waiting.
func (p *symbolizeProcessor) debuginfodHas(buildID string) bool {
	_, ok := p.limits.debuginfod.Lookup(buildID)
	return ok
}

// shutdown stops the loader (waiting for the file it reads).
func (p *symbolizeProcessor) shutdown(context.Context) error {
	p.load.stop()
	p.limits.debuginfod.Close()
	p.telemetry.Shutdown()
	return nil
}

// mappingState is what a batch knows of one of its mappings.
type mappingState struct {
	needed   bool
	key      string
	id       fileIdentity
	name     string
	syms     *symbols
	resolved bool // looked up (syms nil: not symbolized)
	reload   bool // read again: its debug file was fetched since
	// loading is the loader's channel closed once the file is read, for a
	// file that has no symbols in the cache yet (the batch waits for it).
	loading <-chan struct{}
	procs   []procRef
}

// processProfiles gives every native frame of the batch that has a mapping
// and no line its lines (innermost first: the inlined calls, then the
// function) where the mapped file's symbols are loaded. Files not loaded
// yet are handed to the loader, which reads them off the processor's lock;
// the batch waits for them, at most load_wait, and goes out without the
// names of those still being read then (a later batch gets them). A batch
// that needs no file being read does not wait.
func (p *symbolizeProcessor) processProfiles(ctx context.Context, pd pprofile.Profiles) (pprofile.Profiles, error) {
	p.mu.Lock()
	b := newBatch(pd)
	cands := b.candidates()
	if len(cands) == 0 {
		p.mu.Unlock()
		return pd, nil
	}
	waits := p.resolve(b)
	if len(waits) > 0 && p.loadWait > 0 {
		p.mu.Unlock()
		p.waitLoads(ctx, waits)
		p.mu.Lock()
		for mi := range b.maps {
			if m := &b.maps[mi]; m.loading != nil {
				m.syms, _ = p.cache.get(m.key)
			}
		}
	}
	defer p.mu.Unlock()
	named := map[string]int64{} // by source
	var unnamed, goKept int64
	for _, c := range cands {
		loc := b.locs.At(int(c.loc))
		m := &b.maps[loc.MappingIndex()]
		switch {
		case c.goFrame:
			if !b.symbolizeGo(loc, m, p.cache, named) {
				goKept++
			}
		case !b.symbolize(loc, m, p.cache, named):
			unnamed++
		}
	}
	for src, n := range named {
		p.telemetry.ProcessorSymbolizeFramesNamed.Add(ctx, n, metric.WithAttributeSet(attribute.NewSet(attribute.String("source", src))))
	}
	// Added even when 0: the series then exist from the first batch, so a
	// hit rate (named / (named + unsymbolized)) has a value on a host where
	// every frame was named, instead of none.
	p.telemetry.ProcessorSymbolizeFramesUnsymbolized.Add(ctx, unnamed)
	p.telemetry.ProcessorSymbolizeGoFramesKept.Add(ctx, goKept)
	return pd, nil
}

// resolve finds the batch's mappings' symbols in the cache and hands the
// files not there to the loader. It returns the channels of the files the
// batch needs that are being read (closed once each is read). p.mu is held.
func (p *symbolizeProcessor) resolve(b *batch) []<-chan struct{} {
	missing := false
	for mi := range b.maps {
		m := &b.maps[mi]
		if !m.needed {
			continue
		}
		b.identify(int32(mi))
		if m.key == "" {
			m.resolved = true
			continue
		}
		syms, failed := p.cache.get(m.key)
		// Lookup asks again for a debug file that missed, once its
		// negative_cache_ttl is over (the server may have it since).
		if syms != nil && syms.awaitBuildID != "" && p.debuginfodHas(syms.awaitBuildID) {
			// Named as before for this batch; read again with the
			// fetched debug file for the next ones.
			syms.awaitBuildID = ""
			m.syms, m.resolved, m.reload = syms, true, true
			missing = true
			continue
		}
		if syms != nil || failed {
			m.syms, m.resolved = syms, true
			continue
		}
		if ch := p.load.finished(m.key); ch != nil {
			// Asked for by an earlier batch, not read yet.
			m.resolved, m.loading = true, ch
			continue
		}
		missing = true
	}
	if missing {
		b.findProcesses()
		for mi := range b.maps {
			m := &b.maps[mi]
			if m.needed && (!m.resolved || m.reload) {
				p.load.enqueue(loadRequest{key: m.key, id: m.id, name: m.name, procs: m.procs, full: m.reload})
				if !m.reload {
					m.loading = p.load.finished(m.key) // nil: the loader's queue is full
				}
				m.resolved = true
			}
		}
	}
	var waits []<-chan struct{}
	for mi := range b.maps {
		if ch := b.maps[mi].loading; ch != nil {
			waits = append(waits, ch)
		}
	}
	return waits
}

// waitLoads waits until every channel is closed, load_wait has passed, or
// ctx is done, whichever comes first.
func (p *symbolizeProcessor) waitLoads(ctx context.Context, waits []<-chan struct{}) {
	timer := time.NewTimer(p.loadWait)
	defer timer.Stop()
	for _, ch := range waits {
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// symbolize gives a location its lines from its mapping's symbols, and
// counts it by source. It returns false when it names nothing.
func (b *batch) symbolize(loc pprofile.Location, m *mappingState, cache *symtabCache, named map[string]int64) bool {
	if m.syms == nil {
		return false
	}
	mp := b.dict.MappingTable().At(int(loc.MappingIndex()))
	tab := m.syms.tab
	addr, ok := tab.vaddr(loc.Address(), mp.MemoryStart(), mp.MemoryLimit(), mp.FileOffset())
	if !ok {
		return false
	}
	if m.syms.inGoText(addr) {
		// A Go function (a producer that types Go frames native): named
		// as a Go frame.
		return b.nameGo(loc, m, addr, cache, named)
	}
	si := tab.lookup(addr)
	var frames []dwarfindex.Frame
	if m.syms.lines != nil {
		frames = m.syms.lines.Lookup(addr)
	}
	if len(frames) == 0 {
		if si < 0 {
			return false
		}
		loc.Lines().AppendEmpty().SetFunctionIndex(b.function(m, si, cache))
		named[m.syms.namedBy(m.syms.tabSource)]++
		return true
	}
	last := len(frames) - 1
	if frames[last].Name == "" && si >= 0 {
		// No subprogram in the DWARF for this address: the symbol's name.
		n, grown := tab.name(si)
		cache.grew(m.key, m.syms, grown)
		frames[last].Name, frames[last].SystemName = n.name, n.raw
	}
	if frames[last].Name == "" {
		return false
	}
	for i, f := range frames {
		if f.Name == "" && i < last {
			// An inlined function whose name the DWARF does not give (in a
			// DWZ alternate file): its caller's frame, at the call's line,
			// follows.
			continue
		}
		ln := loc.Lines().AppendEmpty()
		ln.SetFunctionIndex(b.lineFunction(f))
		ln.SetLine(f.Line)
	}
	named[m.syms.namedBy(m.syms.linesSource)]++
	return true
}

// symbolizeGo names a Go frame again from its binary's .gopclntab: the
// calls inlined at its address, innermost first, then the function, each
// with its start line. It returns false when it leaves the frame as the
// profiler named it.
func (b *batch) symbolizeGo(loc pprofile.Location, m *mappingState, cache *symtabCache, named map[string]int64) bool {
	if m.syms == nil || m.syms.gotab == nil {
		return false
	}
	mp := b.dict.MappingTable().At(int(loc.MappingIndex()))
	addr, ok := m.syms.tab.vaddr(loc.Address(), mp.MemoryStart(), mp.MemoryLimit(), mp.FileOffset())
	if !ok {
		return false
	}
	return b.nameGo(loc, m, addr, cache, named)
}

// nameGo gives a location the Go frames at its file address, in place of
// its lines, and counts it under gopclntab. It returns false when no Go
// function holds the address.
func (b *batch) nameGo(loc pprofile.Location, m *mappingState, addr uint64, cache *symtabCache, named map[string]int64) bool {
	kept := cache.holds(m.key, m.syms)
	frames, grown := m.syms.goFrames(addr, kept)
	cache.grew(m.key, m.syms, grown)
	if len(frames) == 0 {
		return false
	}
	if b.funcIndex == nil {
		b.indexDictionary()
	}
	lines := loc.Lines()
	lines.RemoveIf(func(pprofile.Line) bool { return true })
	lines.EnsureCapacity(len(frames))
	for _, f := range frames {
		ln := lines.AppendEmpty()
		ln.SetFunctionIndex(b.functionIndex(f.Function, f.SystemName, f.File, f.StartLine))
		ln.SetLine(f.Line)
	}
	named[sourceGopclntab]++
	return true
}

// loaded is called by the loader with a file's symbols (nil when it
// failed) and why parts of it could not be used.
func (p *symbolizeProcessor) loaded(req loadRequest, syms *symbols, failures []string) {
	ctx := context.Background()
	for _, r := range failures {
		p.telemetry.ProcessorSymbolizeFilesFailed.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r))))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case syms != nil:
		p.cache.add(req.key, syms)
	case !req.full:
		p.cache.fail(req.key)
	}
	// A second reading that failed (the process gone since the first)
	// leaves the symbol table of the first.
}

// loadMapping finds, verifies and reads a mapping's file and its debug
// file (run by the loader, off the batch's path and its lock). It returns
// nil when the file could not be used, and the reasons of the failures.
func (p *symbolizeProcessor) loadMapping(req loadRequest) (*symbols, []string) {
	if debugfile.IsVDSO(req.name) {
		syms, err := loadVDSO(req)
		if err != nil {
			p.logger.Debug("native frames of the vDSO stay unsymbolized", zap.String("identity", req.key), zap.Error(err))
			return nil, []string{reasonOf(err)}
		}
		return syms, nil
	}
	var lastErr error
	maps := map[int64][]mappedFile{}
	mapsOf := func(pid int64) []mappedFile {
		if files, ok := maps[pid]; ok {
			return files
		}
		files, _ := mappedFiles(pid) // a process gone: its executable on the host only
		maps[pid] = files
		return files
	}
	for _, c := range candidates(req.name, req.procs, mapsOf) {
		lim := p.limits
		lim.symtabOnly = lim.symtabOnly || !req.full
		syms, err := loadSymbols(c, req.id, lim)
		if err == nil {
			if len(syms.failures) > 0 {
				p.logger.Debug("parts of a mapping's debug information could not be used",
					zap.String("mapping", req.name), zap.String("identity", req.key), zap.Strings("reasons", syms.failures))
			}
			return syms, syms.failures
		}
		lastErr = err
		if errors.Is(err, errUnusable) {
			break // the mapping's file, too large or unreadable
		}
		// Not there, not allowed (map_files needs CAP_SYS_ADMIN or
		// CAP_CHECKPOINT_RESTORE), or another file: the next place.
	}
	if syms, ok := loadHeld(p.held, req, p.limits); ok {
		return syms, syms.failures
	}
	if lastErr == nil {
		lastErr = os.ErrNotExist
	}
	p.logger.Debug("native frames of a mapping stay unsymbolized",
		zap.String("mapping", req.name), zap.String("identity", req.key), zap.Error(lastErr))
	return nil, []string{reasonOf(lastErr)}
}

// batch is one request's dictionary, with what the processor learns of it.
type batch struct {
	pd   pprofile.Profiles
	dict pprofile.ProfilesDictionary
	locs pprofile.LocationSlice
	strs pcommon.StringSlice
	maps []mappingState

	// Built when the first function is added.
	strIndex  map[string]int32
	funcIndex map[funcKey]int32
	symFuncs  map[symRef]int32
}

// funcKey identifies a function of the dictionary.
type funcKey struct {
	name, system, file int32
	startLine          int64
}

// frameCandidate is a location to symbolize: a native frame, or a Go frame the
// profiler named (goFrame).
type frameCandidate struct {
	loc     int32
	goFrame bool
}

type symRef struct {
	tab *symtab
	i   int
}

func newBatch(pd pprofile.Profiles) *batch {
	dict := pd.Dictionary()
	return &batch{pd: pd, dict: dict, locs: dict.LocationTable(), strs: dict.StringTable()}
}

func (b *batch) str(i int32) string {
	if i < 0 || int(i) >= b.strs.Len() {
		return ""
	}
	return b.strs.At(int(i))
}

// candidates returns the locations to symbolize: those with a mapping and
// no line, whose frame type, when set, is native; and the Go frames (frame
// type go, with a mapping) the profiler named with one line. It marks their
// mappings needed.
func (b *batch) candidates() []frameCandidate {
	nm := b.dict.MappingTable().Len()
	attrs := b.dict.AttributeTable()
	var out []frameCandidate
	for li := 1; li < b.locs.Len(); li++ {
		loc := b.locs.At(li)
		mi := loc.MappingIndex()
		if mi <= 0 || int(mi) >= nm {
			continue
		}
		frameType := ""
		for _, ai := range loc.AttributeIndices().All() {
			if ai <= 0 || int(ai) >= attrs.Len() {
				continue
			}
			a := attrs.At(int(ai))
			if b.str(a.KeyStrindex()) == attrFrameType {
				frameType = a.Value().AsString()
			}
		}
		goFrame := frameType == frameGo
		switch {
		case goFrame:
			if loc.Lines().Len() > 1 {
				continue // named already with its inlined calls
			}
		case loc.Lines().Len() > 0 || (frameType != "" && frameType != frameNative):
			continue
		}
		if b.maps == nil {
			b.maps = make([]mappingState, nm)
		}
		b.maps[mi].needed = true
		out = append(out, frameCandidate{loc: int32(li), goFrame: goFrame})
	}
	return out
}

// identify reads a mapping's file identity and name.
func (b *batch) identify(mi int32) {
	m := &b.maps[mi]
	mp := b.dict.MappingTable().At(int(mi))
	attrs := b.dict.AttributeTable()
	for _, ai := range mp.AttributeIndices().All() {
		if ai <= 0 || int(ai) >= attrs.Len() {
			continue
		}
		a := attrs.At(int(ai))
		switch b.str(a.KeyStrindex()) {
		case attrHtlhash:
			m.id.htlhash = a.Value().AsString()
		case attrGNU:
			m.id.gnu = a.Value().AsString()
		}
	}
	m.key = m.id.key()
	m.name = b.str(mp.FilenameStrindex())
	if m.name == "" {
		m.key = "" // nothing to look for
	}
}

// findProcesses walks the samples to find, for each mapping still to load,
// the processes whose stacks hold it (process.pid of the sample, else of the
// resource; process.executable.path of the resource).
func (b *batch) findProcesses() {
	attrs := b.dict.AttributeTable()
	stacks := b.dict.StackTable()
	// Attribute indices that are process.pid, with their value.
	pidAttr := map[int32]int64{}
	for i := 1; i < attrs.Len(); i++ {
		a := attrs.At(i)
		if b.str(a.KeyStrindex()) == attrPID && a.Value().Type() == pcommon.ValueTypeInt {
			pidAttr[int32(i)] = a.Value().Int()
		}
	}
	for _, rp := range b.pd.ResourceProfiles().All() {
		res := procRef{}
		if v, ok := rp.Resource().Attributes().Get(attrPID); ok && v.Type() == pcommon.ValueTypeInt {
			res.pid = v.Int()
		}
		if v, ok := rp.Resource().Attributes().Get(attrExePath); ok {
			res.exe = v.AsString()
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, prof := range sp.Profiles().All() {
				for _, s := range prof.Samples().All() {
					pr := res
					for _, ai := range s.AttributeIndices().All() {
						if pid, ok := pidAttr[ai]; ok {
							pr.pid = pid
						}
					}
					si := s.StackIndex()
					if si < 0 || int(si) >= stacks.Len() {
						continue
					}
					for _, li := range stacks.At(int(si)).LocationIndices().All() {
						if li <= 0 || int(li) >= b.locs.Len() {
							continue
						}
						mi := b.locs.At(int(li)).MappingIndex()
						if mi <= 0 || int(mi) >= len(b.maps) {
							continue
						}
						m := &b.maps[mi]
						if !m.needed || m.resolved || len(m.procs) >= maxProcsPerMapping {
							continue
						}
						known := false
						for _, q := range m.procs {
							known = known || q == pr
						}
						if !known {
							m.procs = append(m.procs, pr)
						}
					}
				}
			}
		}
	}
}

// function returns the index of the function naming symbol si of the
// mapping's table, adding it (and its strings) to the dictionary when the
// batch has no such function yet.
func (b *batch) function(m *mappingState, si int, cache *symtabCache) int32 {
	ref := symRef{m.syms.tab, si}
	if fi, ok := b.symFuncs[ref]; ok {
		return fi
	}
	if b.funcIndex == nil {
		b.indexDictionary()
	}
	n, grown := m.syms.tab.name(si)
	cache.grew(m.key, m.syms, grown)
	fi := b.functionIndex(n.name, n.raw, m.syms.tab.path, 0)
	b.symFuncs[ref] = fi
	return fi
}

// lineFunction returns the index of the function of a DWARF frame.
func (b *batch) lineFunction(f dwarfindex.Frame) int32 {
	if b.funcIndex == nil {
		b.indexDictionary()
	}
	return b.functionIndex(f.Name, f.SystemName, f.File, 0)
}

// functionIndex returns the index of the function of those names, file
// and start line, adding it when the batch has none.
func (b *batch) functionIndex(name, sys, file string, startLine int64) int32 {
	key := funcKey{b.stringIndex(name), b.stringIndex(sys), b.stringIndex(file), startLine}
	fi, ok := b.funcIndex[key]
	if !ok {
		funcs := b.dict.FunctionTable()
		if funcs.Len() == 0 {
			funcs.AppendEmpty() // the zero-value function every table starts with
		}
		fi = int32(funcs.Len())
		f := funcs.AppendEmpty()
		f.SetNameStrindex(key.name)
		f.SetSystemNameStrindex(key.system)
		f.SetFilenameStrindex(key.file)
		f.SetStartLine(key.startLine)
		b.funcIndex[key] = fi
	}
	return fi
}

// indexDictionary indexes the batch's strings and functions, so that a
// function or string already there is reused rather than added again.
func (b *batch) indexDictionary() {
	b.strIndex = make(map[string]int32, b.strs.Len())
	for i := b.strs.Len() - 1; i >= 0; i-- {
		b.strIndex[b.strs.At(i)] = int32(i) // the first of duplicates wins
	}
	funcs := b.dict.FunctionTable()
	b.funcIndex = make(map[funcKey]int32, funcs.Len())
	for i := funcs.Len() - 1; i >= 1; i-- {
		f := funcs.At(i)
		b.funcIndex[funcKey{f.NameStrindex(), f.SystemNameStrindex(), f.FilenameStrindex(), f.StartLine()}] = int32(i)
	}
	b.symFuncs = map[symRef]int32{}
}

func (b *batch) stringIndex(s string) int32 {
	if i, ok := b.strIndex[s]; ok {
		return i
	}
	if b.strs.Len() == 0 {
		b.strs.Append("") // the empty string every table starts with
		b.strIndex[""] = 0
		if s == "" {
			return 0
		}
	}
	i := int32(b.strs.Len())
	b.strs.Append(s)
	b.strIndex[s] = i
	return i
}
