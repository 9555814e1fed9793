package telemetry

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// samplerFromEnv is the sampler OTEL_TRACES_SAMPLER and _ARG name, read as
// the SDK reads them (nil when unset: the SDK's default,
// parentbased_always_on), with two differences. A value the SDK would only
// log and replace (an unknown sampler, a ratio that is not one) is an error,
// so that the service does not start sampling otherwise than configured.
// And the ratio samplers sample a new trace one of whose links is sampled
// (linkedSampler). The SDK reads the environment itself only when no
// sampler is given, so this has to read all of it.
func samplerFromEnv() (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(os.Getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (sdktrace.Sampler, error) {
		if arg == "" {
			return linkedSampler{sdktrace.TraceIDRatioBased(1)}, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
		}
		return linkedSampler{sdktrace.TraceIDRatioBased(r)}, nil
	}
	switch name {
	case "":
		return nil, nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return ratio()
	case "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		root, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(root), nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: want always_on, always_off, traceidratio or parentbased_ (always_on, always_off, traceidratio)", name)
	}
}

// linkedSampler samples a span without a parent when one of its links is
// sampled, and leaves every other span to next. A webhook delivery starts
// a trace of its own, linked to the span of the request that made its
// event: with a ratio sampler deciding alone, the delivery of a sampled
// create would be traced one time in ten, and the link from the create's
// trace would mostly lead nowhere. (OpenTelemetry Java's contrib has the
// same rule as LinksBasedSampler.) A span with a parent is next's to decide
// (under parentbased_* the parent's decision), so the store's batch spans,
// which have a parent and links, are sampled as before.
type linkedSampler struct{ next sdktrace.Sampler }

func (s linkedSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	parent := trace.SpanContextFromContext(p.ParentContext)
	if !parent.IsValid() {
		for _, l := range p.Links {
			if l.SpanContext.IsSampled() {
				return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: parent.TraceState()}
			}
		}
	}
	return s.next.ShouldSample(p)
}

func (s linkedSampler) Description() string {
	return "LinkedSampled{" + s.next.Description() + "}"
}
