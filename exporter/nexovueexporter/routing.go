// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
)

// DefaultRoute is the name the resources no rule matches go under, in the
// exporter's metrics and logs.
const DefaultRoute = "default"

// DefaultRejectedKeyRetryInterval is how often a route whose key the ingest
// refused tries its requests again.
const DefaultRejectedKeyRetryInterval = 30 * time.Second

// RoutingConfig chooses the ingest key of each resource from its attributes.
type RoutingConfig struct {
	// Rules are tried in order; the first that matches a resource chooses
	// its key. Resources no rule matches use the exporter's key (key or
	// key_file).
	Rules []RouteRule `mapstructure:"rules"`
	// RejectedKeyRetryInterval: with rules set, the requests of a route
	// whose key the ingest refuses (401, 403) stay queued and are tried
	// again at this interval.
	RejectedKeyRetryInterval time.Duration `mapstructure:"rejected_key_retry_interval"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// RouteRule sends the resources whose attribute matches with its own key.
type RouteRule struct {
	// Name names the rule in metrics (attribute route) and logs; never the key.
	Name string `mapstructure:"name"`
	// Attribute is the resource attribute matched, e.g. k8s.namespace.name.
	Attribute string `mapstructure:"attribute"`
	// Values matches the attribute's value exactly (any of them).
	Values []string `mapstructure:"values"`
	// Pattern matches the attribute's value with a Go (RE2) regular
	// expression, unanchored unless it says ^...$.
	Pattern string `mapstructure:"pattern"`
	// Key is the rule's ingest key, usually ${env:NEXOVUE_KEY_<TEAM>}.
	Key configopaque.String `mapstructure:"key"`
	// KeyFile names a file holding the key, read at start.
	KeyFile string `mapstructure:"key_file"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var routeNameRegexp = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

func (r *RoutingConfig) enabled() bool { return len(r.Rules) > 0 }

// validate checks the rules; errors name routing::rules::<i>::<setting>.
// Keys are never part of an error.
func (r *RoutingConfig) validate(cfg *Config) []error {
	if !r.enabled() {
		return nil
	}
	var errs []error
	if !cfg.QueueConfig.HasValue() {
		errs = append(errs, errors.New("sending_queue: routing needs the sending queue enabled: each rule gets a queue of its own, so that a throttled or refused key holds back only its own profiles"))
	}
	if r.RejectedKeyRetryInterval <= 0 {
		errs = append(errs, fmt.Errorf("routing::rejected_key_retry_interval: must be positive, got %s", r.RejectedKeyRetryInterval))
	}
	seen := map[string]int{}
	for i, rule := range r.Rules {
		path := fmt.Sprintf("routing::rules::%d", i)
		switch {
		case rule.Name == "":
			errs = append(errs, fmt.Errorf("%s::name: every rule needs a name (it names the rule in metrics and logs)", path))
		case rule.Name == DefaultRoute:
			errs = append(errs, fmt.Errorf("%s::name: %q is the name of the resources no rule matches; pick another", path, rule.Name))
		case !routeNameRegexp.MatchString(rule.Name):
			errs = append(errs, fmt.Errorf("%s::name: %q must be 1 to 63 letters, digits, '_', '.' or '-', starting with a letter or digit", path, rule.Name))
		default:
			if j, dup := seen[rule.Name]; dup {
				errs = append(errs, fmt.Errorf("%s::name: %q is also the name of routing::rules::%d", path, rule.Name, j))
			}
			seen[rule.Name] = i
		}
		if strings.TrimSpace(rule.Attribute) == "" || strings.ContainsAny(rule.Attribute, " \t\r\n") {
			errs = append(errs, fmt.Errorf("%s::attribute: must name a resource attribute, such as k8s.namespace.name, without spaces; got %q", path, rule.Attribute))
		}
		switch {
		case len(rule.Values) > 0 && rule.Pattern != "":
			errs = append(errs, fmt.Errorf("%s: set either values or pattern, not both", path))
		case len(rule.Values) == 0 && rule.Pattern == "":
			errs = append(errs, fmt.Errorf("%s: set values (exact matches) or pattern (a regular expression)", path))
		case rule.Pattern != "":
			if _, err := regexp.Compile(rule.Pattern); err != nil {
				errs = append(errs, fmt.Errorf("%s::pattern: not a valid regular expression: %w", path, err))
			}
		}
		for j, v := range rule.Values {
			if v == "" {
				errs = append(errs, fmt.Errorf("%s::values::%d: must not be empty", path, j))
			}
		}
		switch {
		case rule.KeyFile != "" && rule.Key != "":
			errs = append(errs, fmt.Errorf("%s::key_file: set either key or key_file, not both", path))
		case rule.KeyFile != "":
		case strings.TrimSpace(string(rule.Key)) == "":
			errs = append(errs, fmt.Errorf("%s::key: the rule's ingest key is empty; set key (e.g. ${env:NEXOVUE_KEY_%s}) and make sure the variable is set, or key_file", path, envSuffix(rule.Name)))
		case strings.ContainsAny(string(rule.Key), "\r\n"):
			errs = append(errs, fmt.Errorf("%s::key: the rule's ingest key contains a line break", path))
		}
	}
	return errs
}

func envSuffix(name string) string {
	return strings.ToUpper(strings.Map(func(r rune) rune {
		if r == '-' || r == '.' {
			return '_'
		}
		return r
	}, name))
}

// readKeyFile reads a key from path at start: surrounding white space (a
// trailing newline) is dropped. Errors name the setting, never the content.
func readKeyFile(setting, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: cannot read the ingest key: %w", setting, err)
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		return "", fmt.Errorf("%s: %s is empty", setting, path)
	}
	if strings.ContainsAny(key, "\r\n") {
		return "", fmt.Errorf("%s: %s holds more than one line", setting, path)
	}
	return key, nil
}

// matcher returns the index of the first rule matching a resource, or
// len(rules) for the default route.
type matcher struct {
	attrs   []string
	values  []map[string]struct{}
	pattern []*regexp.Regexp
}

func newMatcher(rules []RouteRule) (*matcher, error) {
	m := &matcher{}
	for i, r := range rules {
		m.attrs = append(m.attrs, r.Attribute)
		var set map[string]struct{}
		var re *regexp.Regexp
		if r.Pattern != "" {
			var err error
			if re, err = regexp.Compile(r.Pattern); err != nil {
				return nil, fmt.Errorf("routing::rules::%d::pattern: not a valid regular expression: %w", i, err)
			}
		} else {
			set = make(map[string]struct{}, len(r.Values))
			for _, v := range r.Values {
				set[v] = struct{}{}
			}
		}
		m.values = append(m.values, set)
		m.pattern = append(m.pattern, re)
	}
	return m, nil
}

func (m *matcher) route(res pcommon.Resource) int {
	attrs := res.Attributes()
	for i, a := range m.attrs {
		v, ok := attrs.Get(a)
		if !ok {
			continue
		}
		s := v.AsString()
		if m.pattern[i] != nil {
			if m.pattern[i].MatchString(s) {
				return i
			}
			continue
		}
		if _, ok := m.values[i][s]; ok {
			return i
		}
	}
	return len(m.attrs)
}

// route is one key's way out: an exporter with its own sending queue
// (persistent under its own component ID where storage is configured),
// retry sender and key state.
type route struct {
	name string
	id   component.ID
	exp  *profilesExporter
}

// routedExporter splits each batch by resource into one request per route
// and hands each to its route's queue: a route whose key is throttled or
// refused holds back its own queue only.
type routedExporter struct {
	match  *matcher
	routes []route // the rules in order, then the default route
	logger *zap.Logger
}

var _ xexporter.Profiles = (*routedExporter)(nil)

// routeID is the component ID of a rule's exporter: its queue's storage and
// the exporter helper's own metrics are kept apart under it. The default
// route keeps the exporter's own ID, so a persistent queue written before
// rules were added is still read.
func routeID(parent component.ID, rule string) component.ID {
	name := "route." + rule
	if parent.Name() != "" {
		name = parent.Name() + ".route." + rule
	}
	return component.NewIDWithName(parent.Type(), name)
}

func newRoutedExporter(ctx context.Context, set exporter.Settings, cfg *Config, halve halveFunc) (*routedExporter, error) {
	m, err := newMatcher(cfg.Routing.Rules)
	if err != nil {
		return nil, err
	}
	r := &routedExporter{match: m, logger: set.Logger}
	add := func(name string, id component.ID, key configopaque.String, keyFile, keyPath string) error {
		sub := *cfg
		sub.Key, sub.KeyFile = key, keyFile
		subSet := set
		subSet.ID = id
		subSet.Logger = set.Logger.With(zap.String("route", name))
		exp, err := newSingleKeyExporter(ctx, subSet, &sub, halve, routeOptions{
			parent: set.ID, route: name, keyPath: keyPath,
			holdRejected: cfg.Routing.RejectedKeyRetryInterval,
		})
		if err != nil {
			return fmt.Errorf("route %q: %w", name, err)
		}
		r.routes = append(r.routes, route{name: name, id: id, exp: exp})
		return nil
	}
	for i, rule := range cfg.Routing.Rules {
		if err := add(rule.Name, routeID(set.ID, rule.Name), rule.Key, rule.KeyFile, fmt.Sprintf("routing::rules::%d::key_file", i)); err != nil {
			return nil, err
		}
	}
	if err := add(DefaultRoute, set.ID, cfg.Key, cfg.KeyFile, "key_file"); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *routedExporter) Start(ctx context.Context, host component.Host) error {
	// On an error the collector shuts down every component, routes
	// started or not (the exporter helper takes a Shutdown before Start).
	for _, rt := range r.routes {
		if err := rt.exp.Start(ctx, host); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown drains every route's queue at once: a throttled route's wait
// does not delay the others' drain.
func (r *routedExporter) Shutdown(ctx context.Context) error {
	errs := make([]error, len(r.routes))
	var wg sync.WaitGroup
	for i, rt := range r.routes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rt.exp.Shutdown(ctx); err != nil {
				errs[i] = fmt.Errorf("route %q: %w", rt.name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *routedExporter) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// ConsumeProfiles splits pd by resource and enqueues each route's part in
// that route's queue. When some routes took their part and another did not
// (its queue is full), the error is permanent: retrying the batch would
// duplicate what the others took.
func (r *routedExporter) ConsumeProfiles(ctx context.Context, pd pprofile.Profiles) error {
	parts, present, err := profilesplit.ByResource(pd, len(r.routes), r.match.route)
	if err != nil {
		return consumererror.NewPermanent(fmt.Errorf("cannot split the batch by routing rule: %w", err))
	}
	var errs []error
	taken := 0
	for i, p := range parts {
		if !present[i] {
			continue
		}
		if err := r.routes[i].exp.ConsumeProfiles(ctx, p); err != nil {
			errs = append(errs, fmt.Errorf("route %q: %w", r.routes[i].name, err))
			continue
		}
		taken++
	}
	if len(errs) == 0 {
		return nil
	}
	if taken == 0 && len(errs) == 1 {
		return errs[0]
	}
	return consumererror.NewPermanent(errors.Join(errs...))
}
