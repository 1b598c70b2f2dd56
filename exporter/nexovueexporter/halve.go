package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

import "github.com/nexovue/otelcol-nexovue/internal/profilesplit"

// defaultHalve is the shared splitting code of the frame_limit processor:
// two halves by frames, each with its own compacted dictionary.
var defaultHalve halveFunc = profilesplit.Halve
