package telemetry

import (
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
)

// Module provides the logger and the metrics registry.
var Module = fx.Module("telemetry", fx.Provide(NewLogger, NewRegistry))

// FxLogger routes fx's own events through the service's logger, at debug
// level so that a normal start-up stays quiet. It applies to the whole
// application, so the app passes it at the top level.
var FxLogger = fx.WithLogger(func(log *zap.Logger) fxevent.Logger {
	l := &fxevent.ZapLogger{Logger: log.Named("fx")}
	l.UseLogLevel(zap.DebugLevel)
	return l
})
