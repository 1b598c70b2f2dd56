// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package servicenameprocessor // import "github.com/nexovue/otelcol-nexovue/processor/servicenameprocessor"

import (
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Attribute keys read and written. The env keys are exactly those the
// OpenTelemetry eBPF profiler puts on each process's resource
// ("process.environment_variable." + the variable's name, see
// reporter/internal/pdata/generate.go: setResourceAttributes).
const (
	keyServiceName    = "service.name"
	keyExecutableName = "process.executable.name"
	keyExecutablePath = "process.executable.path"
	envAttrPrefix     = "process.environment_variable."
	keyEnvServiceName = envAttrPrefix + "OTEL_SERVICE_NAME"
	keyEnvResAttrs    = envAttrPrefix + "OTEL_RESOURCE_ATTRIBUTES"

	unknownService       = "unknown_service"
	unknownServicePrefix = unknownService + ":"
	// deletedSuffix is what /proc/<pid>/exe, and so the eBPF profiler's
	// process.executable.path and .name, end with once the binary is gone.
	deletedSuffix = " (deleted)"

	// maxResourceAttributeEntries is the number of OTEL_RESOURCE_ATTRIBUTES
	// entries read, the W3C Baggage limit on list members; later entries are
	// skipped.
	maxResourceAttributeEntries = 180
)

// source tells which rule named a resource.
type source int

const (
	sourceExisting source = iota
	sourceOTelServiceName
	sourceOTelResourceAttributes
	sourceK8sAnnotation
	sourceK8sLabel
	sourceK8sWorkload
	sourceK8sPod
	sourceUnknownService
	numSources
)

// String returns the value of the telemetry attribute "source".
func (s source) String() string {
	switch s {
	case sourceExisting:
		return "existing"
	case sourceOTelServiceName:
		return "otel_service_name"
	case sourceOTelResourceAttributes:
		return "otel_resource_attributes"
	case sourceK8sAnnotation:
		return "k8s_annotation"
	case sourceK8sLabel:
		return "k8s_label"
	case sourceK8sWorkload:
		return "k8s_workload"
	case sourceK8sPod:
		return "k8s_pod"
	case sourceUnknownService:
		return unknownService
	}
	return "invalid"
}

// namer applies the naming rules to one resource's attributes, in place.
type namer struct {
	keepEnvAttributes bool
	maxValueLength    int
	kubernetes        bool
	useLabels         bool
}

func newNamer(cfg *Config) namer {
	return namer{
		keepEnvAttributes: cfg.KeepEnvAttributes,
		maxValueLength:    cfg.MaxValueLength,
		kubernetes:        cfg.Kubernetes.Enabled,
		useLabels:         cfg.Kubernetes.UseLabels,
	}
}

// resourceFields are the string values of the attributes a namer reads,
// taken in one pass before anything is changed ("" when an attribute is
// missing or not a string), and whether the env attributes are present.
type resourceFields struct {
	serviceName    string
	envServiceName string
	envResAttrs    string
	executableName string
	executablePath string
	hasEnvSvcName  bool
	hasEnvResAttrs bool
}

func readFields(attrs pcommon.Map) resourceFields {
	var f resourceFields
	for k, v := range attrs.All() {
		switch k {
		case keyServiceName:
			f.serviceName = strOf(v)
		case keyEnvServiceName:
			f.envServiceName, f.hasEnvSvcName = strOf(v), true
		case keyEnvResAttrs:
			f.envResAttrs, f.hasEnvResAttrs = strOf(v), true
		case keyExecutableName:
			f.executableName = strOf(v)
		case keyExecutablePath:
			f.executablePath = strOf(v)
		}
	}
	return f
}

// strOf returns v's string when v is of string type, else "".
func strOf(v pcommon.Value) string {
	if v.Type() != pcommon.ValueTypeStr {
		return ""
	}
	return v.Str()
}

// name gives attrs a service.name by the first rule that applies, adds the
// other OTEL_RESOURCE_ATTRIBUTES keys that are absent and, unless configured
// otherwise, removes the env attributes it read. It returns the rule that
// named the resource and how many OTEL_RESOURCE_ATTRIBUTES entries it
// skipped. It never logs, and never returns an env value.
func (n namer) name(attrs pcommon.Map) (source, int) {
	f := readFields(attrs)

	src := sourceUnknownService
	name := ""
	// Rule 1: a non-empty service.name already there is kept as it is.
	if strings.TrimSpace(f.serviceName) != "" {
		src = sourceExisting
	} else if svc := strings.TrimSpace(f.envServiceName); svc != "" {
		// Rule 2: OTEL_SERVICE_NAME, trimmed.
		src = sourceOTelServiceName
		name = boundValue(svc, n.maxValueLength)
	}

	// Rule 3: OTEL_RESOURCE_ATTRIBUTES. Its other keys apply whichever rule
	// named the resource, as in an SDK, where OTEL_SERVICE_NAME only wins
	// for service.name; they never replace an attribute already there.
	skipped := 0
	if ra := f.envResAttrs; ra != "" {
		var raName string
		raName, skipped = n.applyResourceAttributes(attrs, ra, src == sourceUnknownService)
		if src == sourceUnknownService && raName != "" {
			src = sourceOTelResourceAttributes
			name = raName
		}
	}

	// Kubernetes rules: the pod's annotation, labels, workload, name; and
	// service.namespace when the environment gave none.
	if n.kubernetes {
		if src == sourceUnknownService {
			if k8sName, k8sSrc := n.kubernetesName(attrs); k8sSrc != sourceUnknownService {
				src, name = k8sSrc, k8sName
			}
		}
		n.kubernetesNamespace(attrs)
	}

	// Rule 4: unknown_service:<executable>.
	if src == sourceUnknownService {
		name = n.unknownServiceName(f.executableName, f.executablePath)
	}

	if src != sourceExisting {
		attrs.PutStr(keyServiceName, name)
	}
	if !n.keepEnvAttributes {
		if f.hasEnvSvcName {
			attrs.Remove(keyEnvServiceName)
		}
		if f.hasEnvResAttrs {
			attrs.Remove(keyEnvResAttrs)
		}
	}
	return src, skipped
}

// applyResourceAttributes parses an OTEL_RESOURCE_ATTRIBUTES value, adds each
// well-formed key other than service.name to attrs when absent, and returns
// the trimmed service.name it holds ("" if none, or if wantName is false)
// and the number of entries skipped. Entries are read from the last to the
// first so that, as in an SDK, the last of duplicate keys wins.
func (n namer) applyResourceAttributes(attrs pcommon.Map, ra string, wantName bool) (string, int) {
	skipped := 0
	if c := strings.Count(ra, ","); c >= maxResourceAttributeEntries {
		skipped = c + 1 - maxResourceAttributeEntries
		ra = ra[:nthIndexByte(ra, ',', maxResourceAttributeEntries)]
	}

	name := ""
	nameSeen := false
	for ra != "" {
		var entry string
		if i := strings.LastIndexByte(ra, ','); i >= 0 {
			entry, ra = ra[i+1:], ra[:i]
		} else {
			entry, ra = ra, ""
		}
		entry = trimOWS(entry)
		if entry == "" {
			// An empty list member (a stray comma) carries nothing.
			continue
		}
		rawKey, rawValue, ok := strings.Cut(entry, "=")
		key := trimOWS(rawKey)
		if !ok || key == "" || len(key) > n.maxValueLength || !utf8.ValidString(key) {
			skipped++
			continue
		}
		rawValue = trimOWS(rawValue)
		if !percentValid(rawValue) {
			skipped++
			continue
		}
		// Values are decoded only when used, so that entries that change
		// nothing cost no allocation.
		switch {
		case key == keyServiceName:
			if wantName && !nameSeen {
				nameSeen = true
				name = strings.TrimSpace(n.ownedValue(rawValue))
			}
		case strings.HasPrefix(key, envAttrPrefix):
			// Never let the variable fake a captured environment variable.
		default:
			if _, exists := attrs.Get(key); !exists {
				attrs.PutStr(strings.Clone(key), n.ownedValue(rawValue))
			}
		}
	}
	return name, skipped
}

// ownedValue percent-decodes and bounds a raw OTEL_RESOURCE_ATTRIBUTES value
// into a string of its own, so that what is kept does not hold on to the
// whole variable's memory. It copies the value at most once.
func (n namer) ownedValue(raw string) string {
	if strings.IndexByte(raw, '%') < 0 && utf8.ValidString(raw) {
		return strings.Clone(boundValue(raw, n.maxValueLength))
	}
	// Decoding or repairing makes a new string already.
	return boundValue(percentDecode(raw), n.maxValueLength)
}

// unknownServiceName is "unknown_service:" and the executable's name, or
// the last element of its path, or "unknown_service" when both are missing.
// The " (deleted)" that Linux appends to the executable of a process whose
// binary was replaced on disk (say, by a package upgrade) is dropped, so
// that the process keeps its name.
func (n namer) unknownServiceName(exeName, exePath string) string {
	exe := executableName(exeName)
	if exe == "" {
		exe = executableName(lastPathElement(exePath))
	}
	if exe == "" {
		return unknownService
	}
	return boundValue(unknownServicePrefix+exe, n.maxValueLength)
}

// executableName trims an executable's name of white space and of the
// " (deleted)" suffix.
func executableName(s string) string {
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), deletedSuffix))
}

// lastPathElement returns the last element of a Unix or Windows path,
// ignoring trailing separators; "" when there is none.
func lastPathElement(p string) string {
	p = strings.TrimRight(strings.TrimSpace(p), `/\`)
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// boundValue repairs invalid UTF-8 (each invalid run becomes U+FFFD) and
// cuts s to at most maxLen bytes on a UTF-8 boundary. It returns s itself,
// without allocating, when s is valid and short enough.
func boundValue(s string, maxLen int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= maxLen {
		return s
	}
	cut := maxLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// percentValid reports whether every '%' in s starts a %XX escape, as the
// W3C Baggage format (and so OTEL_RESOURCE_ATTRIBUTES) defines them.
func percentValid(s string) bool {
	for i := strings.IndexByte(s, '%'); i >= 0; {
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return false
		}
		next := strings.IndexByte(s[i+3:], '%')
		if next < 0 {
			break
		}
		i += 3 + next
	}
	return true
}

// percentDecode decodes the %XX escapes of s, which percentValid accepted.
// '+' stays '+'. It returns s itself, without allocating, when s holds no
// '%'.
func percentDecode(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unhex returns the value of the hex digit c.
func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// trimOWS trims the optional white space (spaces and tabs) that W3C Baggage
// allows around list members, keys and values.
func trimOWS(s string) string {
	return strings.Trim(s, " \t")
}

// nthIndexByte returns the index of the n-th (1-based) c in s, or len(s).
func nthIndexByte(s string, c byte, n int) int {
	off := 0
	for ; n > 0; n-- {
		i := strings.IndexByte(s[off:], c)
		if i < 0 {
			return len(s)
		}
		off += i + 1
	}
	return off - 1
}
