package telemetry

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestSamplerFromEnv: each value decides as the SDK's sampler of that name
// (what the SDK's own reading of the environment, which the service
// replaces, would give), on roots and on children of sampled and unsampled
// parents.
func TestSamplerFromEnv(t *testing.T) {
	ratio := func(r float64) sdktrace.Sampler { return sdktrace.TraceIDRatioBased(r) }
	for _, tc := range []struct {
		sampler, arg string
		want         sdktrace.Sampler // nil: none given, the SDK's default
	}{
		{"", "", nil},
		{"always_on", "", sdktrace.AlwaysSample()},
		{"always_off", "", sdktrace.NeverSample()},
		{"traceidratio", "0.25", ratio(0.25)},
		{"traceidratio", "", ratio(1)},
		{"parentbased_always_on", "", sdktrace.ParentBased(sdktrace.AlwaysSample())},
		{"parentbased_always_off", "", sdktrace.ParentBased(sdktrace.NeverSample())},
		{"parentbased_traceidratio", "0.1", sdktrace.ParentBased(ratio(0.1))},
		{" ParentBased_TraceIDRatio ", " 0.5 ", sdktrace.ParentBased(ratio(0.5))},
		{"parentbased_traceidratio", "0", sdktrace.ParentBased(ratio(0))},
	} {
		t.Run(tc.sampler+"/"+tc.arg, func(t *testing.T) {
			t.Setenv("OTEL_TRACES_SAMPLER", tc.sampler)
			t.Setenv("OTEL_TRACES_SAMPLER_ARG", tc.arg)
			got, err := samplerFromEnv()
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if got != nil {
					t.Fatalf("got %s, want none (the SDK's default)", got.Description())
				}
				return
			}
			// Links to unsampled spans change nothing.
			for i, p := range append(samplingCases(t, 1000, false), samplingCases(t, 1000, true)...) {
				if g, w := got.ShouldSample(p).Decision, tc.want.ShouldSample(p).Decision; g != w {
					t.Fatalf("case %d: %v, want %v as %s decides", i, g, w, tc.want.Description())
				}
			}
		})
	}
}

func TestSamplerFromEnvRefusesWhatTheSDKWouldReplace(t *testing.T) {
	for _, tc := range []struct{ sampler, arg string }{
		{"jaeger_remote", ""},
		{"parentbased_ratio", ""},
		{"traceidratio", "one"},
		{"parentbased_traceidratio", "-0.1"},
		{"parentbased_traceidratio", "1.5"},
	} {
		t.Setenv("OTEL_TRACES_SAMPLER", tc.sampler)
		t.Setenv("OTEL_TRACES_SAMPLER_ARG", tc.arg)
		if s, err := samplerFromEnv(); err == nil {
			t.Errorf("%s %q: accepted as %s", tc.sampler, tc.arg, s.Description())
		}
	}
}

// TestLinkedSampler: under the ratio samplers a new trace is sampled when
// one of its links is (a webhook delivery of a sampled create), never
// against its parent's decision, and never under always_off.
func TestLinkedSampler(t *testing.T) {
	sampled, unsampled := linkTo(true), linkTo(false)
	for _, tc := range []struct {
		name, sampler string
		parent        *bool // nil: a root span
		links         []trace.Link
		want          bool
	}{
		{"root, a sampled link", "parentbased_traceidratio", nil, []trace.Link{unsampled, sampled}, true},
		{"root, unsampled links", "parentbased_traceidratio", nil, []trace.Link{unsampled, unsampled}, false},
		{"root, no link", "parentbased_traceidratio", nil, nil, false},
		{"unsampled parent, a sampled link", "parentbased_traceidratio", boolPtr(false), []trace.Link{sampled}, false},
		{"sampled parent, no link", "parentbased_traceidratio", boolPtr(true), nil, true},
		{"traceidratio root, a sampled link", "traceidratio", nil, []trace.Link{sampled}, true},
		{"traceidratio, unsampled parent, a sampled link", "traceidratio", boolPtr(false), []trace.Link{sampled}, false},
		{"always_off root, a sampled link", "always_off", nil, []trace.Link{sampled}, false},
		{"parentbased_always_off root, a sampled link", "parentbased_always_off", nil, []trace.Link{sampled}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OTEL_TRACES_SAMPLER", tc.sampler)
			t.Setenv("OTEL_TRACES_SAMPLER_ARG", "0") // a ratio samples no new trace by itself
			s, err := samplerFromEnv()
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.parent != nil {
				ctx = trace.ContextWithRemoteSpanContext(ctx, spanContext(*tc.parent))
			}
			p := sdktrace.SamplingParameters{ParentContext: ctx, TraceID: spanContext(false).TraceID(), Name: "webhook plant.created", Links: tc.links}
			if got := s.ShouldSample(p).Decision == sdktrace.RecordAndSample; got != tc.want {
				t.Errorf("%s sampled %v, want %v", s.Description(), got, tc.want)
			}
		})
	}
}

// samplingCases are random roots and children of sampled and unsampled
// remote and local parents, with links to unsampled spans when withLinks.
func samplingCases(t *testing.T, n int, withLinks bool) []sdktrace.SamplingParameters {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	var out []sdktrace.SamplingParameters
	for range n {
		sc := randomSpanContext(r, r.IntN(2) == 0)
		ctx := context.Background()
		switch r.IntN(3) {
		case 1:
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		case 2:
			ctx = trace.ContextWithSpanContext(ctx, sc)
		}
		p := sdktrace.SamplingParameters{ParentContext: ctx, TraceID: sc.TraceID(), Name: "span"}
		if withLinks {
			p.Links = []trace.Link{{SpanContext: randomSpanContext(r, false)}}
		}
		out = append(out, p)
	}
	return out
}

func randomSpanContext(r *rand.Rand, sampled bool) trace.SpanContext {
	var tid trace.TraceID
	var sid trace.SpanID
	binary.LittleEndian.PutUint64(tid[:8], r.Uint64()|1)
	binary.LittleEndian.PutUint64(tid[8:], r.Uint64())
	binary.LittleEndian.PutUint64(sid[:], r.Uint64()|1)
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
}

func spanContext(sampled bool) trace.SpanContext {
	return randomSpanContext(rand.New(rand.NewPCG(3, 4)), sampled)
}

func linkTo(sampled bool) trace.Link { return trace.Link{SpanContext: spanContext(sampled)} }

func boolPtr(v bool) *bool { return &v }
