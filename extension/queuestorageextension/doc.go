// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../.tools/mdatagen metadata.yaml

// Package queuestorageextension is a storage extension for the exporters'
// persistent sending queues (sending_queue::storage). It keeps each item in
// a file of its own and the queue's metadata in a file that is rewritten in
// place, so that sending an item, recording its dispatch and deleting it
// never need free space: a full filesystem refuses new items (with an error
// the queue's callers see as retryable) and never stops the queue from
// draining. Its directory is bounded in bytes (max_size_mib).
package queuestorageextension // import "github.com/nexovue/otelcol-nexovue/extension/queuestorageextension"
