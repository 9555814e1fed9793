// Package telemetry builds the service's logger and metrics registry.
package telemetry

import (
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// LogOptions configure the logger.
type LogOptions struct {
	// Level is the minimum level: debug, info, warn or error.
	Level string
	// Format is "json" or "console" (readable, coloured, for development).
	Format string
	// Sampling: of the lines with one message and level, each second, keep
	// the first SamplingInitial and then every SamplingThereafter-th.
	// SamplingInitial 0 keeps every line.
	SamplingInitial    int
	SamplingThereafter int
}

// NewLogger returns a JSON logger for production, or a coloured console
// logger for development. Both write to stderr.
func NewLogger(o LogOptions) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(o.Level)
	if err != nil {
		return nil, fmt.Errorf("log level %q: %w", o.Level, err)
	}
	var cfg zap.Config
	switch o.Format {
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		cfg.DisableStacktrace = true // warnings are not bugs
	case "json":
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.TimeKey = "time"
		cfg.EncoderConfig.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	default:
		return nil, fmt.Errorf("log format %q: want json or console", o.Format)
	}
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.Sampling = nil
	if o.SamplingInitial > 0 {
		cfg.Sampling = &zap.SamplingConfig{Initial: o.SamplingInitial, Thereafter: max(o.SamplingThereafter, 1)}
	}
	return cfg.Build()
}
