// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package mtlsconverter

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

func TestConvert(t *testing.T) {
	mtls := []any{map[string]any{"id": "mtls"}}
	exporter := func(tls map[string]any, middlewares []any) map[string]any {
		e := map[string]any{"endpoint": "gw:4317", "middlewares": middlewares}
		if tls != nil {
			e["tls"] = tls
		}
		return map[string]any{"exporters": map[string]any{"otlp_grpc/gateway": e}}
	}
	receiver := func(tls map[string]any, middlewares []any) map[string]any {
		grpc := map[string]any{"endpoint": "0.0.0.0:4317", "middlewares": middlewares}
		if tls != nil {
			grpc["tls"] = tls
		}
		return map[string]any{"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{"grpc": grpc}}}}
	}
	tests := []struct {
		name    string
		conf    map[string]any
		wantErr []string
	}{
		{name: "exporter with mtls and no tls", conf: exporter(nil, mtls)},
		{name: "exporter with mtls and tls at its defaults", conf: exporter(map[string]any{"insecure": false, "ca_file": "", "insecure_skip_verify": "false"}, mtls)},
		{name: "exporter with its own tls and no mtls", conf: exporter(map[string]any{"ca_file": "/ca.crt", "insecure": true}, []any{map[string]any{"id": "headers_setter"}})},
		{name: "exporter with mtls and a ca_file", conf: exporter(map[string]any{"ca_file": "/ca.crt"}, mtls), wantErr: []string{
			"exporters::otlp_grpc/gateway::tls::ca_file: set beside the mtls extension in exporters::otlp_grpc/gateway::middlewares, whose TLS credentials replace this client's tls settings, so it would be ignored: set it on extensions::mtls instead, or remove mtls from middlewares",
		}},
		{name: "exporter with a named mtls, insecure and a server name", conf: exporter(map[string]any{"insecure": true, "server_name_override": "gw"},
			[]any{map[string]any{"id": "headers_setter"}, map[string]any{"id": "mtls/agents"}}), wantErr: []string{
			"exporters::otlp_grpc/gateway::tls::insecure: set beside the mtls/agents extension in exporters::otlp_grpc/gateway::middlewares",
			"exporters::otlp_grpc/gateway::tls::server_name_override: set beside the mtls/agents extension",
		}},
		{name: "receiver with mtls and a client_ca_file", conf: receiver(map[string]any{"client_ca_file": "/ca.crt", "cert_file": "/tls.crt"}, mtls), wantErr: []string{
			"receivers::otlp::protocols::grpc::tls::cert_file: set beside the mtls extension in receivers::otlp::protocols::grpc::middlewares, whose TLS credentials replace this server's tls settings",
			"receivers::otlp::protocols::grpc::tls::client_ca_file: set beside the mtls extension",
		}},
		{name: "receiver with mtls and no tls", conf: receiver(nil, mtls)},
		{name: "a middlewares entry of another shape", conf: exporter(map[string]any{"ca_file": "/ca.crt"}, []any{"mtls", map[string]any{"id": 3}})},
		{name: "no components", conf: map[string]any{"service": map[string]any{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := confmap.NewFromStringMap(tt.conf)
			before := conf.ToStringMap()
			err := converter{}.Convert(context.Background(), conf)
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				for _, w := range tt.wantErr {
					assert.Contains(t, err.Error(), w)
				}
				assert.Len(t, strings.Split(err.Error(), "\n"), len(tt.wantErr), "one error per setting: %v", err)
			}
			assert.Equal(t, before, conf.ToStringMap(), "the converter must not change the configuration")
		})
	}
}

// TestConvertDeepSettingsAreBounded: settings nested deeper than maxDepth
// are not walked (no unbounded recursion on a hostile config).
func TestConvertDeepSettingsAreBounded(t *testing.T) {
	deep := map[string]any{"middlewares": []any{map[string]any{"id": "mtls"}}, "tls": map[string]any{"ca_file": "/x"}}
	nested := map[string]any{"a": map[string]any{"b": deep}}
	require.ErrorContains(t, converter{}.Convert(context.Background(), confmap.NewFromStringMap(map[string]any{"exporters": map[string]any{"x": nested}})),
		"exporters::x::a::b::tls::ca_file: set beside the mtls extension")
	for range maxDepth + 2 {
		deep = map[string]any{"nested": deep}
	}
	conf := confmap.NewFromStringMap(map[string]any{"exporters": map[string]any{"x": deep}})
	require.NoError(t, converter{}.Convert(context.Background(), conf))
}
