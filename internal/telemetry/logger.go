// Package telemetry builds the service's logger and metrics registry.
package telemetry

import (
	"fmt"
	"os"
	"time"

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
	return NewLoggerTo(o, zapcore.Lock(os.Stderr))
}

// NewLoggerTo is NewLogger writing to out (benchmarks send it nowhere).
func NewLoggerTo(o LogOptions, out zapcore.WriteSyncer) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(o.Level)
	if err != nil {
		return nil, fmt.Errorf("log level %q: %w", o.Level, err)
	}
	var enc zapcore.Encoder
	opts := []zap.Option{zap.AddCaller(), zap.ErrorOutput(zapcore.Lock(os.Stderr))}
	switch o.Format {
	case "console":
		cfg := zap.NewDevelopmentEncoderConfig()
		cfg.EncodeLevel = zapcore.CapitalColorLevelEncoder
		enc = zapcore.NewConsoleEncoder(cfg) // no stack traces: warnings are not bugs
	case "json":
		cfg := zap.NewProductionEncoderConfig()
		cfg.TimeKey = "time"
		cfg.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		enc = zapcore.NewJSONEncoder(cfg)
		opts = append(opts, zap.AddStacktrace(zapcore.ErrorLevel))
	default:
		return nil, fmt.Errorf("log format %q: want json or console", o.Format)
	}
	core := zapcore.NewCore(enc, out, zap.NewAtomicLevelAt(level))
	if o.SamplingInitial > 0 {
		core = zapcore.NewSamplerWithOptions(core, time.Second, o.SamplingInitial, max(o.SamplingThereafter, 1))
	}
	return zap.New(core, opts...), nil
}
