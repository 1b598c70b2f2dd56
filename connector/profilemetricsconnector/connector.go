// Copyright nexovue
// SPDX-License-Identifier: Apache-2.0

package profilemetricsconnector // import "github.com/nexovue/otelcol-nexovue/connector/profilemetricsconnector"

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.uber.org/zap"
)

// profileMetrics is the connector: it aggregates the profiles it consumes
// and sends metrics every interval, and once more on shutdown.
type profileMetrics struct {
	cfg    *Config
	next   consumer.Metrics
	logger *zap.Logger

	mu  sync.Mutex
	agg *aggregator

	stop chan struct{}
	wg   sync.WaitGroup
}

func newConnector(set connector.Settings, cfg *Config, next consumer.Metrics) *profileMetrics {
	return &profileMetrics{
		cfg:    cfg,
		next:   next,
		logger: set.Logger,
		agg:    newAggregator(cfg, time.Now()),
		stop:   make(chan struct{}),
	}
}

func (c *profileMetrics) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (c *profileMetrics) ConsumeProfiles(_ context.Context, pd pprofile.Profiles) error {
	c.mu.Lock()
	c.agg.consume(pd, time.Now())
	c.mu.Unlock()
	return nil
}

func (c *profileMetrics) Start(context.Context, component.Host) error {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(c.cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.flush(context.Background())
			}
		}
	}()
	return nil
}

// Shutdown stops the ticker and sends what was aggregated since the last
// interval.
func (c *profileMetrics) Shutdown(ctx context.Context) error {
	select {
	case <-c.stop:
		return nil
	default:
	}
	close(c.stop)
	c.wg.Wait()
	c.flush(ctx)
	return nil
}

func (c *profileMetrics) flush(ctx context.Context) {
	c.mu.Lock()
	md := c.agg.flush(time.Now())
	c.mu.Unlock()
	if md.DataPointCount() == 0 {
		return
	}
	if err := c.next.ConsumeMetrics(ctx, md); err != nil {
		c.logger.Warn("the metrics pipeline refused the profile metrics", zap.Int("data_points", md.DataPointCount()), zap.Error(err))
	}
}
