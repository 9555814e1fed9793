package telemetry

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/version"
)

// Module provides the logger, the metrics registry (also as a
// prometheus.Registerer) and tracing, whose buffered spans are flushed when
// the application stops: after the servers have drained, since they depend
// on it and so stop first.
var Module = fx.Module("telemetry",
	fx.Provide(
		version.Get,
		NewLogger,
		NewRegistry,
		func(r *prometheus.Registry) prometheus.Registerer { return r },
		func(lc fx.Lifecycle, info version.Info) (*Tracing, error) {
			t, err := NewTracing(context.Background(), info)
			if err != nil {
				return nil, err
			}
			lc.Append(fx.StopHook(t.Shutdown))
			return t, nil
		},
	),
)

// FxLogger routes fx's own events through the service's logger, at debug
// level so that a normal start-up stays quiet. It applies to the whole
// application, so the app passes it at the top level.
var FxLogger = fx.WithLogger(func(log *zap.Logger) fxevent.Logger {
	l := &fxevent.ZapLogger{Logger: log.Named("fx")}
	l.UseLogLevel(zap.DebugLevel)
	return l
})
