// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package mtlsextension is a gRPC middleware extension that gives a gRPC
// server or client its mutual TLS: the server's certificate and the CA its
// clients must be signed by, or the client's certificate and the CA that
// verifies the server, each reloaded from disk when it changes. It counts
// the handshakes that fail, by reason, logs them at most once a minute per
// reason, and reports the seconds until the certificate it presents
// expires. Its insecure switch turns it into plaintext, with a warning.
package mtlsextension // import "github.com/nexovue/otelcol-nexovue/extension/mtlsextension"
