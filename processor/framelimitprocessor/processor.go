// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package framelimitprocessor // import "github.com/nexovue/otelcol-nexovue/processor/framelimitprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumererror/xconsumererror"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/nexovue/otelcol-nexovue/internal/profilesplit"
	"github.com/nexovue/otelcol-nexovue/processor/framelimitprocessor/internal/metadata"
)

// truncationLogInterval is the least time between two log lines about
// truncated samples.
const truncationLogInterval = time.Minute

type frameLimitProcessor struct {
	maxFrames int
	next      xconsumer.Profiles
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	now       func() time.Time // a clock tests can replace

	mu       sync.Mutex
	lastLog  time.Time // when truncation was last logged
	unlogged int64     // samples truncated since then
}

var _ xconsumer.Profiles = (*frameLimitProcessor)(nil)

func newFrameLimitProcessor(set processor.Settings, cfg *Config, next xconsumer.Profiles) (*frameLimitProcessor, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &frameLimitProcessor{
		maxFrames: cfg.MaxFrames,
		next:      next,
		logger:    set.Logger,
		telemetry: tb,
		now:       time.Now,
	}, nil
}

func (p *frameLimitProcessor) Start(context.Context, component.Host) error { return nil }

func (p *frameLimitProcessor) Shutdown(context.Context) error {
	p.telemetry.Shutdown()
	return nil
}

// Capabilities says the processor mutates data: the samples of a batch it
// splits are moved into the parts, leaving the batch empty.
func (p *frameLimitProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// ConsumeProfiles forwards a batch within max_frames as is, and otherwise
// forwards its parts, in order, to the next consumer.
//
// Every part is sent, whatever happened to the ones before it, so that the
// failure of one part never causes the loss of another. If some parts are
// refused, the error returned carries only their data:
//   - when at least one refusal is retryable, an xconsumererror.Profiles
//     (not permanent) whose Data() is the retryably refused parts merged into
//     one batch (or, when the next consumer itself returned an
//     xconsumererror.Profiles, the data it carried): an exporterhelper
//     retrier upstream resends exactly that, never the accepted parts. Parts
//     refused permanently are named in the message and dropped;
//   - when every refusal is permanent, a permanent error: nothing to resend.
//
// A batch holding an index outside its dictionary cannot be split: it is
// refused with a permanent error naming the field.
func (p *frameLimitProcessor) ConsumeProfiles(ctx context.Context, pd pprofile.Profiles) error {
	frames := profilesplit.Frames(pd)
	if frames <= p.maxFrames {
		return p.next.ConsumeProfiles(ctx, pd)
	}
	parts, truncated, err := profilesplit.SplitOwned(pd, p.maxFrames)
	if err != nil {
		return consumererror.NewPermanent(fmt.Errorf("frame_limit: cannot split a batch of %d frames: %w", frames, err))
	}
	p.telemetry.ProcessorFrameLimitBatchesSplit.Add(ctx, 1)
	if truncated > 0 {
		p.telemetry.ProcessorFrameLimitSamplesTruncated.Add(ctx, int64(truncated))
		p.logTruncated(truncated)
	}

	var retry []pprofile.Profiles
	var retryErrs, permErrs []error
	for i, part := range parts {
		err := p.next.ConsumeProfiles(ctx, part)
		if err == nil {
			continue
		}
		if consumererror.IsPermanent(err) {
			// Named by its message only: wrapping it would make the
			// whole error permanent and lose the retryable parts.
			permErrs = append(permErrs, fmt.Errorf("part %d of %d (refused permanently, dropped): %s", i+1, len(parts), err.Error()))
			continue
		}
		failed := part
		var partial xconsumererror.Profiles
		if errors.As(err, &partial) {
			failed = partial.Data()
		}
		retry = append(retry, failed)
		retryErrs = append(retryErrs, fmt.Errorf("part %d of %d: %w", i+1, len(parts), err))
	}
	p.telemetry.ProcessorFrameLimitPartsEmitted.Add(ctx, int64(len(parts)))
	failed := len(retryErrs) + len(permErrs)
	if failed == 0 {
		return nil
	}
	p.telemetry.ProcessorFrameLimitPartsFailed.Add(ctx, int64(failed))
	summary := fmt.Errorf("frame_limit: %d of %d parts of a split batch were refused: %w",
		failed, len(parts), errors.Join(append(retryErrs, permErrs...)...))
	if len(retry) == 0 {
		return consumererror.NewPermanent(summary)
	}
	data, err := profilesplit.Merge(retry...)
	if err != nil {
		// The parts were built here and are valid: this is a bug.
		return consumererror.NewPermanent(fmt.Errorf("%w; merging the refused parts failed: %w", summary, err))
	}
	return xconsumererror.NewProfiles(summary, data)
}

// logTruncated logs truncated samples at most once per
// truncationLogInterval, with the count gathered since the last line.
func (p *frameLimitProcessor) logTruncated(n int) {
	p.mu.Lock()
	p.unlogged += int64(n)
	now := p.now()
	if !p.lastLog.IsZero() && now.Sub(p.lastLog) < truncationLogInterval {
		p.mu.Unlock()
		return
	}
	count := p.unlogged
	p.unlogged = 0
	p.lastLog = now
	p.mu.Unlock()
	p.logger.Warn("Samples whose stack alone is deeper than max_frames were cut to their leaf-most frames",
		zap.Int64("samples", count), zap.Int("max_frames", p.maxFrames))
}
