// Package ingest is a strict, in-process double of nexovue's profiles ingest
// (https://ingest.nexovue.com/v1development/profiles), for tests of
// exporters, processors and whole Collectors. The program
// cmd/nexovue-ingest runs it on a port.
//
//	srv := ingest.New(ingest.Config{Keys: []string{"k"}})
//	if err := srv.Start(); err != nil { ... }
//	defer srv.Close()
//	// point the exporter at srv.URL() (requests go to srv.Endpoint())
//	... srv.SamplesAccepted(), srv.MissingSeq(n), srv.TopLeafFunctions("svc", 5)
//
// # The contract
//
// POST /v1development/profiles takes an OTLP ExportProfilesServiceRequest
// (Collector 0.161 profiles data model) as protobuf
// (application/x-protobuf) or JSON (application/json), uncompressed or with
// Content-Encoding gzip or zstd. It answers, in this order:
//
//  1. 401 when x-nexovue-key is missing or not in Config.Keys (an empty
//     Config.Keys accepts any non-empty key);
//  2. 415 for another Content-Type; 400 for a body that cannot be
//     decompressed or decoded; 413 for a body over Config.MaxBodyBytes;
//  3. 400 for any index out of range anywhere in the request, naming the
//     table, the index, the table's size and where it was found, e.g.
//     "invalid stack_table index 57 (table has 12 entries) at
//     resource_profiles[0].scope_profiles[0].profiles[0].samples[3].stack_index"
//     (see Validate for every index checked). Index 0 is valid only if the
//     table has an entry 0: the data model puts the zero entry there, so a
//     sample with link_index 0 needs a link_table with at least one entry;
//  4. 413 when the request's stacks write out to more than Config.MaxFrames
//     frames (the sum over samples of the length of the sample's stack);
//  5. 429 with Retry-After when the key is over Config.SamplesPerSecond or
//     sends before a Retry-After it was given has passed (see Rate limit
//     below for how requests are counted and what is an early retry);
//  6. 200 with an empty ExportProfilesServiceResponse encoded like the
//     request.
//
// A sample is one Sample message: rates and totals count Sample messages,
// not their timestamps or values. nexovue's page says a key may send 20,000
// "samples" a second; what a sender sends is Sample messages, and the
// double reads the limit as counting them, as the exporter's pacing does
// (exporter/nexovueexporter README, "Pacing"). Beside them it counts the
// samples as the profiler took them (SamplesTaken, samples_taken in /stats,
// taken per sample type: a message's timestamps; without timestamps its
// value if the unit is "count"; else 1, see TakenCount), which do not
// depend on how a sender packed them: the eBPF profiler writes one
// timestamp per sample it took, and one message may hold several.
//
// Resource and scope attributes are accepted in both encodings OTLP
// profiles allows at 0.161: as references into the string_table
// (key_strindex, string_value_strindex: what pdata writes) and literally
// (key, string_value: what the nexovue exporter writes with
// attribute_encoding: literal), or mixed; nexovue's documented contract
// forbids neither. A resolved key must not be empty.
//
// Error answers carry a google.rpc.Status, protobuf-encoded for protobuf
// requests (what the Collector's otlphttp exporter decodes and logs), JSON
// for JSON requests, plain text otherwise; StatusMessage reads any of them.
// Neither answers, stats nor output ever contain the key.
//
// # Rate limit
//
// A key may send at most Config.SamplesPerSecond samples in any one-second window:
// the server remembers the accepted requests of the last second (the window
// is (now-1s, now]) and accepts a request of n samples only if the samples
// already accepted in that window plus n stay within the limit. A request
// that would cross the limit is refused whole and consumes no budget; so is
// every other refused request. A request with more samples than the limit
// can therefore never be accepted: the sender must split it.
//
// A 429 announces Retry-After and blocks the key until then: every request
// from the key before that time is answered 429 too, with a Retry-After for
// the time remaining, and counted as an early retry if it arrived after the
// 429 was decided (one that arrived before, e.g. from a parallel sender, and
// was decided later is refused but not counted). The blocked-until time is exactly what a client can read from the
// header: for delay-seconds it is the 429's time plus the whole seconds sent
// (RetryAfter rounded up); for the HTTP-date form it is the whole second
// sent (the 429's time plus RetryAfter, rounded up to a whole second), so a
// client that waits as told is never counted early. A random-throttle 429
// (see Faults) blocks the key the same way.
//
// # What it keeps
//
// Aggregates only, under one lock: answers by status, dropped connections,
// early retries, samples and frames accepted, and per service.name resource
// attribute ("" when missing) the samples, the sample types (type and unit
// strings), per sample type ("type/unit", e.g. "off_cpu/nanoseconds" for the
// eBPF profiler's off-CPU profiles, also for all services together: by_type
// in /stats) the Sample messages, their timestamps and the sum of their
// values (off-CPU nanoseconds add up exactly), leaf counts (of on-CPU
// samples: off-CPU ones, time spent waiting, are never ranked with them, nor
// in TakeWindow's busiest services, which keeps them apart in OffCPU) (the function of the first line of the stack's
// location 0; a location without lines is named "<binary> (unsymbolized)")
// and inclusive counts (each distinct function of a stack once per sample);
// the integer sample attribute "seq" (distinct values, duplicates, missing
// ones; kept per value, meant for tests); and metadata of the last
// Config.KeepRecent requests (and, if asked, Config.KeepBodies accepted
// bodies). At most 10,000 distinct function names are
// kept per service; samples of further ones count as OtherFunctions. GET /stats
// serves Stats as JSON (add ?missing_below=N for the missing seq values).
// TakeWindow returns and resets per-interval counts (the program's table);
// Reset forgets everything, e.g. between subtests.
//
// # Faults
//
// SetFault switches misbehaviour on and off at run time: a delay before
// every answer, closing the connection without answer (the next N requests
// or while on), 503 for the next N requests (optionally with Retry-After),
// 429 at random with a seeded probability, or a fixed status and message for
// every request. A request whose client gives up during the delay is still
// processed (as a real server finishing its work would), so a client's retry
// of it arrives as a duplicate.
//
// Known gaps: a resource or scope attribute whose key_strindex is out of
// range is refused (as an empty key) without naming the index, because
// pdata drops the index while decoding; an out-of-range string_value_strindex
// in such an attribute decodes to an empty value and is not detected.
//
// RequestBuilder crafts valid requests (services, stacks, seq, sample types)
// for tests; change its Profiles() to craft invalid ones.
package ingest
