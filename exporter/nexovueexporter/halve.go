package nexovueexporter // import "github.com/nexovue/otelcol-nexovue/exporter/nexovueexporter"

// defaultHalve is the shared splitting code of the frame_limit issue.
var defaultHalve halveFunc
