// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package symbolizeprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVaddr: lld's layout, where the executable segment's file offset and
// virtual address differ by a page (offset 0x13090 loads at 0x14090), with
// the mapping the eBPF profiler sends (file offset 0x13000 page-aligned,
// start 0x14000 in the file's addresses) and the one pprof's convention
// sends (the process's addresses).
func TestVaddr(t *testing.T) {
	st := &symtab{segments: []loadSegment{{off: 0x13090, vaddr: 0x14090, filesz: 0x3dba0}}}
	for _, tc := range []struct {
		name                    string
		addr, start, limit, off uint64
		want                    uint64
		ok                      bool
	}{
		{"ebpf", 0x14411, 0x14000, 0x51c30, 0x13000, 0x14411, true},
		{"process addresses", 0x7f0000000411, 0x7f0000000000, 0x7f000003e000, 0x13000, 0x14411, true},
		{"no range", 0x14411, 0, 0, 0, 0x14411, true},
		{"below the mapping", 0x13fff, 0x14000, 0x51c30, 0x13000, 0, false},
		{"offset in no executable segment", 0x1000, 0x1000, 0x2000, 0x1000, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := st.vaddr(tc.addr, tc.start, tc.limit, tc.off)
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}
