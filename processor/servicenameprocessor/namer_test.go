// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

const (
	envSvc = keyEnvServiceName
	envRA  = keyEnvResAttrs
)

// ebpfResource returns the attributes the eBPF profiler puts on a process's
// resource, plus extra.
func ebpfResource(extra map[string]any) map[string]any {
	m := map[string]any{
		"process.pid":             int64(4242),
		"process.executable.name": "java",
		"process.executable.path": "/usr/lib/jvm/bin/java",
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func runNamer(t *testing.T, cfg *Config, in map[string]any) (map[string]any, source, int) {
	t.Helper()
	attrs := pcommon.NewMap()
	require.NoError(t, attrs.FromRaw(in))
	src, skipped := newNamer(cfg).name(attrs)
	return attrs.AsRaw(), src, skipped
}

func defaultCfg() *Config { return createDefaultConfig().(*Config) }

func TestNameRules(t *testing.T) {
	long300 := strings.Repeat("a", 300)
	// 200 two-byte runes: 400 bytes, cut at 255 must land on 254.
	longMultiByte := strings.Repeat("é", 200)

	tests := []struct {
		name        string
		in          map[string]any
		want        map[string]any
		wantSource  source
		wantSkipped int
	}{
		// Rule 1: an existing non-empty service.name.
		{
			name:       "existing service.name is kept, env attributes removed",
			in:         ebpfResource(map[string]any{"service.name": "from-k8s", envSvc: "from-env"}),
			want:       ebpfResource(map[string]any{"service.name": "from-k8s"}),
			wantSource: sourceExisting,
		},
		{
			name:       "existing service.name is kept as it is, even when long",
			in:         map[string]any{"service.name": long300},
			want:       map[string]any{"service.name": long300},
			wantSource: sourceExisting,
		},
		{
			name: "existing service.name still gets the other OTEL_RESOURCE_ATTRIBUTES keys",
			in: ebpfResource(map[string]any{
				"service.name": "from-k8s",
				envRA:          "service.name=from-ra,deployment.environment.name=prod",
			}),
			want:       ebpfResource(map[string]any{"service.name": "from-k8s", "deployment.environment.name": "prod"}),
			wantSource: sourceExisting,
		},
		{
			name:       "empty existing service.name is replaced",
			in:         ebpfResource(map[string]any{"service.name": "", envSvc: "checkout"}),
			want:       ebpfResource(map[string]any{"service.name": "checkout"}),
			wantSource: sourceOTelServiceName,
		},
		{
			name:       "whitespace existing service.name is replaced",
			in:         ebpfResource(map[string]any{"service.name": " \t "}),
			want:       ebpfResource(map[string]any{"service.name": "unknown_service:java"}),
			wantSource: sourceUnknownService,
		},
		{
			name:       "non-string existing service.name is replaced",
			in:         ebpfResource(map[string]any{"service.name": int64(7), envSvc: "checkout"}),
			want:       ebpfResource(map[string]any{"service.name": "checkout"}),
			wantSource: sourceOTelServiceName,
		},

		// Rule 2: OTEL_SERVICE_NAME.
		{
			name:       "OTEL_SERVICE_NAME",
			in:         ebpfResource(map[string]any{envSvc: "checkout"}),
			want:       ebpfResource(map[string]any{"service.name": "checkout"}),
			wantSource: sourceOTelServiceName,
		},
		{
			name:       "OTEL_SERVICE_NAME is trimmed",
			in:         ebpfResource(map[string]any{envSvc: " \t checkout api \n"}),
			want:       ebpfResource(map[string]any{"service.name": "checkout api"}),
			wantSource: sourceOTelServiceName,
		},
		{
			name:       "empty OTEL_SERVICE_NAME falls through and is removed",
			in:         ebpfResource(map[string]any{envSvc: ""}),
			want:       ebpfResource(map[string]any{"service.name": "unknown_service:java"}),
			wantSource: sourceUnknownService,
		},
		{
			name:       "whitespace OTEL_SERVICE_NAME falls through to OTEL_RESOURCE_ATTRIBUTES",
			in:         ebpfResource(map[string]any{envSvc: "   ", envRA: "service.name=cart"}),
			want:       ebpfResource(map[string]any{"service.name": "cart"}),
			wantSource: sourceOTelResourceAttributes,
		},
		{
			name:       "non-string OTEL_SERVICE_NAME is ignored and removed",
			in:         ebpfResource(map[string]any{envSvc: int64(3)}),
			want:       ebpfResource(map[string]any{"service.name": "unknown_service:java"}),
			wantSource: sourceUnknownService,
		},
		{
			name: "OTEL_SERVICE_NAME wins over service.name in OTEL_RESOURCE_ATTRIBUTES, other keys apply",
			in: ebpfResource(map[string]any{
				envSvc: "checkout",
				envRA:  "service.name=cart,service.namespace=shop",
			}),
			want:       ebpfResource(map[string]any{"service.name": "checkout", "service.namespace": "shop"}),
			wantSource: sourceOTelServiceName,
		},
		{
			name:       "long OTEL_SERVICE_NAME is cut to 255 bytes",
			in:         map[string]any{envSvc: long300},
			want:       map[string]any{"service.name": long300[:255]},
			wantSource: sourceOTelServiceName,
		},
		{
			name:       "long multi-byte OTEL_SERVICE_NAME is cut on a UTF-8 boundary",
			in:         map[string]any{envSvc: longMultiByte},
			want:       map[string]any{"service.name": longMultiByte[:254]},
			wantSource: sourceOTelServiceName,
		},
		{
			name:       "invalid UTF-8 in OTEL_SERVICE_NAME is repaired",
			in:         map[string]any{envSvc: "chec\xff\xfekout"},
			want:       map[string]any{"service.name": "chec\uFFFDkout"},
			wantSource: sourceOTelServiceName,
		},

		// Rule 3: OTEL_RESOURCE_ATTRIBUTES.
		{
			name: "service.name and other keys from OTEL_RESOURCE_ATTRIBUTES",
			in: ebpfResource(map[string]any{
				envRA: "service.name=cart,service.namespace=shop,deployment.environment.name=prod",
			}),
			want: ebpfResource(map[string]any{
				"service.name":                "cart",
				"service.namespace":           "shop",
				"deployment.environment.name": "prod",
			}),
			wantSource: sourceOTelResourceAttributes,
		},
		{
			name:       "values are percent-decoded",
			in:         map[string]any{envRA: "service.name=my%20svc%2C%3D%25,team=a%2Fb%3bc"},
			want:       map[string]any{"service.name": "my svc,=%", "team": "a/b;c"},
			wantSource: sourceOTelResourceAttributes,
		},
		{
			name:       "plus is not a space",
			in:         map[string]any{envRA: "service.name=a+b"},
			want:       map[string]any{"service.name": "a+b"},
			wantSource: sourceOTelResourceAttributes,
		},
		{
			name:       "keys and values are trimmed of spaces and tabs",
			in:         map[string]any{envRA: " service.name = cart\t, team =\ta b "},
			want:       map[string]any{"service.name": "cart", "team": "a b"},
			wantSource: sourceOTelResourceAttributes,
		},
		{
			name: "malformed entries are skipped, the rest applies",
			in: ebpfResource(map[string]any{
				envRA: "noequals,service.name=cart,=empty-key, =blank-key,bad=%zz,short=%4,tail=%,team=a",
			}),
			want:        ebpfResource(map[string]any{"service.name": "cart", "team": "a"}),
			wantSource:  sourceOTelResourceAttributes,
			wantSkipped: 6,
		},
		{
			name:        "service.name that fails to decode is skipped",
			in:          ebpfResource(map[string]any{envRA: "service.name=cart%G1,team=a"}),
			want:        ebpfResource(map[string]any{"service.name": "unknown_service:java", "team": "a"}),
			wantSource:  sourceUnknownService,
			wantSkipped: 1,
		},
		{
			name:       "stray commas are not malformed entries",
			in:         map[string]any{envRA: ",,service.name=cart, ,"},
			want:       map[string]any{"service.name": "cart"},
			wantSource: sourceOTelResourceAttributes,
		},
		{
			name:       "the last of duplicate keys wins",
			in:         map[string]any{envRA: "service.name=a,team=x,service.name=b,team=y"},
			want:       map[string]any{"service.name": "b", "team": "y"},
			wantSource: sourceOTelResourceAttributes,
		},
		{
			name:       "the last service.name wins even when empty",
			in:         ebpfResource(map[string]any{envRA: "service.name=a,service.name="}),
			want:       ebpfResource(map[string]any{"service.name": "unknown_service:java"}),
			wantSource: sourceUnknownService,
		},
		{
			name:       "empty service.name in OTEL_RESOURCE_ATTRIBUTES falls through, other keys apply",
			in:         ebpfResource(map[string]any{envRA: "service.name=%20,team=a"}),
			want:       ebpfResource(map[string]any{"service.name": "unknown_service:java", "team": "a"}),
			wantSource: sourceUnknownService,
		},
		{
			name:       "empty values of other keys are kept",
			in:         map[string]any{envRA: "team="},
			want:       map[string]any{"service.name": "unknown_service", "team": ""},
			wantSource: sourceUnknownService,
		},
		{
			name: "attributes already there are not replaced",
			in: ebpfResource(map[string]any{
				"service.namespace": "set-by-k8s",
				envRA:               "service.name=cart,service.namespace=shop,process.pid=1,process.executable.name=evil",
			}),
			want: ebpfResource(map[string]any{
				"service.name":      "cart",
				"service.namespace": "set-by-k8s",
			}),
			wantSource: sourceOTelResourceAttributes,
		},
		{
			name: "keys under process.environment_variable. are never added",
			in: map[string]any{
				envRA: "process.environment_variable.OTEL_SERVICE_NAME=fake,process.environment_variable.X=y,team=a",
			},
			want:       map[string]any{"service.name": "unknown_service", "team": "a"},
			wantSource: sourceUnknownService,
		},
		{
			name:       "long values are cut to 255 bytes",
			in:         map[string]any{envRA: "service.name=" + long300 + ",team=" + longMultiByte},
			want:       map[string]any{"service.name": long300[:255], "team": longMultiByte[:254]},
			wantSource: sourceOTelResourceAttributes,
		},
		{
			name:       "invalid UTF-8 in values is repaired, raw or percent-encoded",
			in:         map[string]any{envRA: "service.name=a%FFb,team=c\xffd"},
			want:       map[string]any{"service.name": "a\uFFFDb", "team": "c\uFFFDd"},
			wantSource: sourceOTelResourceAttributes,
		},
		{
			name:        "long and invalid UTF-8 keys are skipped",
			in:          map[string]any{envRA: long300[:256] + "=x,k\xff=y," + long300[:255] + "=z"},
			want:        map[string]any{"service.name": "unknown_service", long300[:255]: "z"},
			wantSource:  sourceUnknownService,
			wantSkipped: 2,
		},
		{
			name:       "empty OTEL_RESOURCE_ATTRIBUTES is removed",
			in:         ebpfResource(map[string]any{envRA: ""}),
			want:       ebpfResource(map[string]any{"service.name": "unknown_service:java"}),
			wantSource: sourceUnknownService,
		},

		// Rule 4: unknown_service.
		{
			name:       "unknown_service with the executable name",
			in:         ebpfResource(nil),
			want:       ebpfResource(map[string]any{"service.name": "unknown_service:java"}),
			wantSource: sourceUnknownService,
		},
		{
			name:       "unknown_service with the last element of the path",
			in:         map[string]any{"process.executable.path": "/usr/bin/python3.12"},
			want:       map[string]any{"process.executable.path": "/usr/bin/python3.12", "service.name": "unknown_service:python3.12"},
			wantSource: sourceUnknownService,
		},
		{
			name: "whitespace executable name falls back to the path",
			in:   map[string]any{"process.executable.name": " ", "process.executable.path": "/opt/app/"},
			want: map[string]any{
				"process.executable.name": " ", "process.executable.path": "/opt/app/",
				"service.name": "unknown_service:app",
			},
			wantSource: sourceUnknownService,
		},
		{
			name:       "a Windows path",
			in:         map[string]any{"process.executable.path": `C:\svc\api.exe`},
			want:       map[string]any{"process.executable.path": `C:\svc\api.exe`, "service.name": "unknown_service:api.exe"},
			wantSource: sourceUnknownService,
		},
		{
			name: "a replaced binary keeps its name",
			in:   map[string]any{"process.executable.name": "nginx (deleted)", "process.executable.path": "/usr/sbin/nginx (deleted)"},
			want: map[string]any{
				"process.executable.name": "nginx (deleted)", "process.executable.path": "/usr/sbin/nginx (deleted)",
				"service.name": "unknown_service:nginx",
			},
			wantSource: sourceUnknownService,
		},
		{
			name:       "a replaced binary known by its path only",
			in:         map[string]any{"process.executable.path": "/usr/sbin/nginx (deleted)"},
			want:       map[string]any{"process.executable.path": "/usr/sbin/nginx (deleted)", "service.name": "unknown_service:nginx"},
			wantSource: sourceUnknownService,
		},
		{
			name:       "a bare executable path",
			in:         map[string]any{"process.executable.path": "nginx"},
			want:       map[string]any{"process.executable.path": "nginx", "service.name": "unknown_service:nginx"},
			wantSource: sourceUnknownService,
		},
		{
			name:       "a path without an element",
			in:         map[string]any{"process.executable.path": "/"},
			want:       map[string]any{"process.executable.path": "/", "service.name": "unknown_service"},
			wantSource: sourceUnknownService,
		},
		{
			name:       "no executable fields",
			in:         map[string]any{"process.pid": int64(1)},
			want:       map[string]any{"process.pid": int64(1), "service.name": "unknown_service"},
			wantSource: sourceUnknownService,
		},
		{
			name:       "empty resource",
			in:         map[string]any{},
			want:       map[string]any{"service.name": "unknown_service"},
			wantSource: sourceUnknownService,
		},
		{
			name:       "non-string executable name falls back to the path",
			in:         map[string]any{"process.executable.name": int64(5), "process.executable.path": "/bin/sh"},
			want:       map[string]any{"process.executable.name": int64(5), "process.executable.path": "/bin/sh", "service.name": "unknown_service:sh"},
			wantSource: sourceUnknownService,
		},
		{
			name:       "long executable name is cut to 255 bytes",
			in:         map[string]any{"process.executable.name": long300},
			want:       map[string]any{"process.executable.name": long300, "service.name": ("unknown_service:" + long300)[:255]},
			wantSource: sourceUnknownService,
		},
		{
			name:       "invalid UTF-8 executable name is repaired",
			in:         map[string]any{"process.executable.name": "app\xc3"},
			want:       map[string]any{"process.executable.name": "app\xc3", "service.name": "unknown_service:app\uFFFD"},
			wantSource: sourceUnknownService,
		},

		// Env attributes that were not read stay.
		{
			name:       "other process.environment_variable attributes are left alone",
			in:         ebpfResource(map[string]any{envSvc: "checkout", "process.environment_variable.DEPLOY_ZONE": "eu-1"}),
			want:       ebpfResource(map[string]any{"service.name": "checkout", "process.environment_variable.DEPLOY_ZONE": "eu-1"}),
			wantSource: sourceOTelServiceName,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, src, skipped := runNamer(t, defaultCfg(), tt.in)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantSource, src)
			assert.Equal(t, tt.wantSkipped, skipped)
			name, ok := got["service.name"].(string)
			require.True(t, ok, "service.name must be a string")
			assert.True(t, utf8.ValidString(name))
		})
	}
}

func TestKeepEnvAttributes(t *testing.T) {
	cfg := defaultCfg()
	cfg.KeepEnvAttributes = true
	in := ebpfResource(map[string]any{envSvc: "checkout", envRA: "team=a"})
	got, src, _ := runNamer(t, cfg, in)
	want := ebpfResource(map[string]any{
		envSvc: "checkout", envRA: "team=a",
		"service.name": "checkout", "team": "a",
	})
	assert.Equal(t, want, got)
	assert.Equal(t, sourceOTelServiceName, src)
}

func TestMaxValueLength(t *testing.T) {
	cfg := defaultCfg()
	cfg.MaxValueLength = 40
	got, _, skipped := runNamer(t, cfg, map[string]any{
		envSvc: strings.Repeat("s", 50),
		envRA:  "team=" + strings.Repeat("t", 50) + "," + strings.Repeat("k", 41) + "=v",
	})
	assert.Equal(t, map[string]any{"service.name": strings.Repeat("s", 40), "team": strings.Repeat("t", 40)}, got)
	assert.Equal(t, 1, skipped, "a key longer than max_value_length is skipped")
}

func TestResourceAttributesEntryLimit(t *testing.T) {
	entries := make([]string, 0, 200)
	for i := range 200 {
		entries = append(entries, fmt.Sprintf("k%d=v%d", i, i))
	}
	// service.name as the 181st entry is past the limit and not read.
	entries[180] = "service.name=late"
	got, src, skipped := runNamer(t, defaultCfg(), map[string]any{envRA: strings.Join(entries, ",")})
	assert.Equal(t, sourceUnknownService, src)
	assert.Equal(t, 20, skipped)
	assert.Len(t, got, 180+1, "the first 180 entries and service.name")
	assert.Equal(t, "v179", got["k179"])
	assert.NotContains(t, got, "k181")
}

// A malformed entry's text, which may be a secret, appears nowhere in the
// result, and neither do the env attributes.
func TestSecretsDoNotLeak(t *testing.T) {
	const secret = "s3cr3t-token"
	got, _, skipped := runNamer(t, defaultCfg(), ebpfResource(map[string]any{
		envSvc: "checkout",
		envRA:  "=" + secret + ",password" + secret + ",token=" + secret + "%zz,team=a",
	}))
	assert.Equal(t, 3, skipped)
	for k, v := range got {
		assert.NotContains(t, k, secret)
		assert.NotContains(t, fmt.Sprint(v), secret)
		assert.False(t, strings.HasPrefix(k, envAttrPrefix), k)
	}
}

func TestNameExistingDoesNotAllocate(t *testing.T) {
	keepEnv := defaultCfg()
	keepEnv.KeepEnvAttributes = true
	tests := []struct {
		name string
		cfg  *Config
		in   map[string]any
	}{
		{
			name: "service.name only",
			cfg:  defaultCfg(),
			in:   ebpfResource(map[string]any{"service.name": "checkout"}),
		},
		{
			// The env attributes are kept so that every run reads them again;
			// the one OTEL_RESOURCE_ATTRIBUTES key is already there.
			name: "service.name with env attributes read",
			cfg:  keepEnv,
			in: ebpfResource(map[string]any{
				"service.name": "checkout",
				envSvc:         "checkout-env",
				envRA:          "service.name=cart%20x,process.pid=1,bad%entry",
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attrs := pcommon.NewMap()
			require.NoError(t, attrs.FromRaw(tt.in))
			n := newNamer(tt.cfg)
			allocs := testing.AllocsPerRun(1000, func() {
				if src, _ := n.name(attrs); src != sourceExisting {
					t.Fatalf("source = %v, want existing", src)
				}
			})
			assert.Zero(t, allocs)
			assert.Equal(t, tt.in, attrs.AsRaw(), "nothing was changed")
		})
	}
}

func TestBoundValue(t *testing.T) {
	tests := []struct {
		in, want string
		maxLen   int
	}{
		{in: "", want: "", maxLen: 4},
		{in: "abcd", want: "abcd", maxLen: 4},
		{in: "abcde", want: "abcd", maxLen: 4},
		{in: "ab€", want: "ab", maxLen: 4}, // € is 3 bytes: cut before it
		{in: "a€", want: "a€", maxLen: 4},
		{in: "\xff\xff", want: "\uFFFD", maxLen: 4},
		{in: "ab\xffcd", want: "ab\uFFFD", maxLen: 5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q/%d", tt.in, tt.maxLen), func(t *testing.T) {
			got := boundValue(tt.in, tt.maxLen)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), tt.maxLen)
			assert.True(t, utf8.ValidString(got))
		})
	}
}

func TestPercentDecode(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{in: "plain", want: "plain", ok: true},
		{in: "", want: "", ok: true},
		{in: "%41%62", want: "Ab", ok: true},
		{in: "a%2c%2Cb", want: "a,,b", ok: true},
		{in: "%E2%82%AC", want: "€", ok: true},
		{in: "%", ok: false},
		{in: "a%4", ok: false},
		{in: "%4g", ok: false},
		{in: "%g4", ok: false},
		{in: "%41%", ok: false},
		{in: "%41%4", ok: false},
		{in: "a%41b%zz", ok: false},
		{in: "100%25", want: "100%", ok: true},
		{in: "%%41", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			require.Equal(t, tt.ok, percentValid(tt.in))
			if tt.ok {
				assert.Equal(t, tt.want, percentDecode(tt.in))
			}
		})
	}
}

func TestSourceString(t *testing.T) {
	want := []string{"existing", "otel_service_name", "otel_resource_attributes", "k8s_annotation", "k8s_label", "k8s_workload", "k8s_pod", "unknown_service"}
	for s := range numSources {
		assert.Equal(t, want[s], s.String())
	}
	assert.Equal(t, "invalid", numSources.String())
}

// FuzzName checks, for any OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and
// executable name, that the resource ends with a valid, bounded service.name,
// valid attribute values, and no env attribute.
func FuzzName(f *testing.F) {
	f.Add("checkout", "service.name=cart,team=a", "java")
	f.Add("", "service.name=%E2%82%AC,x=%zz,,=y", "")
	f.Add(" \t", "a=b,a=c,service.name=\xff\xfe", "app\xc3")
	f.Add("", strings.Repeat("k=v,", 300), strings.Repeat("é", 300))
	f.Fuzz(func(t *testing.T, svc, ra, exe string) {
		attrs := pcommon.NewMap()
		attrs.PutStr(envSvc, svc)
		attrs.PutStr(envRA, ra)
		attrs.PutStr(keyExecutableName, exe)
		newNamer(defaultCfg()).name(attrs)

		name, ok := attrs.Get(keyServiceName)
		require.True(t, ok)
		assert.NotEmpty(t, name.Str())
		assert.LessOrEqual(t, len(name.Str()), defaultMaxValueLength)
		assert.True(t, utf8.ValidString(name.Str()))
		for k, v := range attrs.All() {
			assert.False(t, strings.HasPrefix(k, envAttrPrefix), k)
			if k != keyExecutableName {
				assert.True(t, utf8.ValidString(k))
				assert.True(t, utf8.ValidString(v.Str()))
				assert.LessOrEqual(t, len(v.Str()), defaultMaxValueLength)
			}
		}
	})
}
