// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/nexovue/otelcol-nexovue/internal/dwarftest"
	"github.com/nexovue/otelcol-nexovue/processor/symbolizeprocessor/internal/metadata"
)

// bound is how long a test lets a batch take before it calls it held up:
// generous, for a loaded machine; no test waits for it to pass.
const bound = time.Minute

// processAsync symbolizes pd in a goroutine of its own; the channel is
// closed when it returns.
func processAsync(t *testing.T, p *symbolizeProcessor, pd pprofile.Profiles) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := p.processProfiles(context.Background(), pd)
		assert.NoError(t, err)
	}()
	return done
}

func returns(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("%s did not return within %s", what, bound)
	}
}

// TestLoadWaitFirstBatchNamed: the first batch that holds a file (a stripped
// -g -O2 program whose symbols and DWARF are in its debug file) waits for
// the loader to read it, both readings, and goes out named, with lines and
// the inlined call; with load_wait 0 it goes out unnamed.
func TestLoadWaitFirstBatchNamed(t *testing.T) {
	prog := buildInlProgram(t, t.TempDir(), true)
	pid := startWaiting(t, prog.Bin)
	addrs := dwarftest.InlinedAddrs(t, prog.Oracle, "nxv_inl_hot")

	cfg := testConfig()
	cfg.LoadWait = bound // the default, 2 s, could run out on a loaded machine
	pd, locs := prog.batch(t, pid, addrs)
	processOnce(t, newTestProcessorWith(t, cfg, processortest.NewNopSettings(metadata.Type)), pd)
	checkInlined(t, prog, pd, locs, addrs)

	pd, locs = prog.batch(t, pid, addrs)
	processOnce(t, newTestProcessor(t), pd) // load_wait 0
	assert.Equal(t, []frameName{{}}, names(pd, locs[0]), "without the wait, the first batch goes out before the file is read")
}

// TestLoadWaitOtherBatchNotHeld: while the loader reads a slow file (held
// in its reading by the test), a batch that needs that file waits for it,
// and a batch that needs only files already read goes through at once,
// named, the processor's lock free; once the slow file is read, the
// waiting batch goes out named. With a short load_wait, a batch that needs
// the slow file goes out unnamed when the wait runs out.
func TestLoadWaitOtherBatchNotHeld(t *testing.T) {
	fast := buildLeafProgram(t)
	slow := buildInlProgram(t, t.TempDir(), true)
	slowPid := startWaiting(t, slow.Bin)
	addrs := dwarftest.InlinedAddrs(t, slow.Oracle, "nxv_inl_hot")
	slowKey := fileIdentity{htlhash: fileID(t, slow.Bin)}.key()

	for _, tc := range []struct {
		name     string
		loadWait time.Duration
	}{{"waits", bound}, {"wait runs out", 50 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.LoadWait = tc.loadWait
			p := newTestProcessorWith(t, cfg, processortest.NewNopSettings(metadata.Type))
			entered, release := make(chan struct{}), make(chan struct{})
			p.load.beforeLoad = func(req loadRequest) {
				if req.key == slowKey && !req.full {
					close(entered)
					<-release
				}
			}
			released := false
			defer func() {
				if !released {
					close(release)
				}
			}()
			// The fast file is read and cached first.
			pd, leaf := fast.batch(0, fast.bin, mappingSpec{htlhash: fast.id})
			processOnce(t, p, pd)
			require.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", fast.bin}}, names(pd, leaf))

			slowPd, slowLocs := slow.batch(t, slowPid, addrs)
			slowDone := processAsync(t, p, slowPd)
			returns(t, entered, "the loader's reading of the slow file")

			pd, leaf = fast.batch(0, fast.bin, mappingSpec{htlhash: fast.id})
			returns(t, processAsync(t, p, pd), "a batch of a file already read, while another file is read")
			assert.Equal(t, []frameName{{"nxv_leaf", "nxv_leaf", fast.bin}}, names(pd, leaf))

			if tc.loadWait == bound {
				select {
				case <-slowDone:
					t.Fatal("the batch that needs the slow file went out before it was read")
				default:
				}
				close(release)
				released = true
				returns(t, slowDone, "the batch that needs the slow file, once it is read")
				checkInlined(t, slow, slowPd, slowLocs, addrs)
				return
			}
			returns(t, slowDone, "the batch that needs the slow file, once load_wait ran out")
			assert.Equal(t, []frameName{{}}, names(slowPd, slowLocs[0]), "the wait ran out before the file was read")
			close(release)
			released = true
			p.load.wait()
			slowPd, slowLocs = slow.batch(t, slowPid, addrs)
			processOnce(t, p, slowPd)
			checkInlined(t, slow, slowPd, slowLocs, addrs)
		})
	}
}
