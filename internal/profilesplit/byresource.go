package profilesplit // import "github.com/nexovue/otelcol-nexovue/internal/profilesplit"

import (
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// ByResource splits pd by resource into n groups: group(resource) names the
// group (0 to n-1) each resource of pd goes to. parts[g] holds group g's
// resources in their order, over its own compacted dictionary; present[g]
// tells whether g got any resource (parts[g] is the zero value when not).
// When every resource goes to one group, that group's part is pd itself,
// untouched (no copy).
//
// When pd is not read-only its resources are moved into the parts and pd
// must not be used afterwards. The error names the field of an index outside
// pd's dictionary; no parts are returned then.
func ByResource(pd pprofile.Profiles, n int, group func(pcommon.Resource) int) (parts []pprofile.Profiles, present []bool, err error) {
	rps := pd.ResourceProfiles()
	groups := make([]int, rps.Len())
	present = make([]bool, n)
	distinct := 0
	for i := 0; i < rps.Len(); i++ {
		g := group(rps.At(i).Resource())
		if g < 0 || g >= n {
			return nil, nil, fmt.Errorf("resource_profiles[%d]: group %d outside 0..%d", i, g, n-1)
		}
		groups[i] = g
		if !present[g] {
			present[g] = true
			distinct++
		}
	}
	parts = make([]pprofile.Profiles, n)
	if distinct <= 1 {
		for g := range present {
			if present[g] {
				parts[g] = pd
			}
		}
		return parts, present, nil
	}
	owned := !pd.IsReadOnly()
	var c compactor
	c.init(pd.Dictionary(), math.MaxInt)
	for g := 0; g < n; g++ {
		if !present[g] {
			continue
		}
		out := pprofile.NewProfiles()
		if err := c.begin(out.Dictionary()); err != nil {
			return nil, nil, err
		}
		for ri := 0; ri < rps.Len(); ri++ {
			if groups[ri] != g {
				continue
			}
			// Moving leaves rps.At(ri) empty: the indices of rps stay valid.
			if err := c.takeResource(out, rps.At(ri), owned, ri); err != nil {
				return nil, nil, err
			}
		}
		if err := c.finish(); err != nil {
			return nil, nil, err
		}
		parts[g] = out
	}
	return parts, present, nil
}

// takeResource moves (owned) or copies rp, resource ri of the source, to the
// end of out's resources and maps its dictionary references into the open part.
func (c *compactor) takeResource(out pprofile.Profiles, rp pprofile.ResourceProfiles, owned bool, ri int) error {
	drp := out.ResourceProfiles().AppendEmpty()
	if owned {
		rp.MoveTo(drp)
	} else {
		rp.CopyTo(drp)
	}
	return c.mapResource(drp, ri)
}

// mapResource rewrites the dictionary references of every profile and
// sample of rp, resource ri of the source now placed in the open part.
func (c *compactor) mapResource(rp pprofile.ResourceProfiles, ri int) error {
	sps := rp.ScopeProfiles()
	for si := 0; si < sps.Len(); si++ {
		profs := sps.At(si).Profiles()
		for pi := 0; pi < profs.Len(); pi++ {
			p := profs.At(pi)
			path := samplePath{ri, si, pi, 0}
			if err := c.mapProfileFields(p, path); err != nil {
				return err
			}
			samples := p.Samples()
			for k := 0; k < samples.Len(); k++ {
				path.sample = k
				if _, err := c.mapSample(samples.At(k), path); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
