package telemetry

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zapcore"

	"github.com/plantstore/plantstore/internal/otlptest"
	"github.com/plantstore/plantstore/internal/version"
)

// receiverURL in a case's environment stands for the URL of an OTLP
// receiver the case's span must reach.
const receiverURL = "RECEIVER"

func TestNewTracingFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		exporting bool
		err       string
	}{
		{name: "no endpoint is a no-op", env: map[string]string{}},
		{name: "endpoint exports", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": receiverURL}, exporting: true},
		{name: "traces endpoint exports", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiverURL + otlptest.Path}, exporting: true},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, exporting: true},
		{name: "sdk disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "TRUE"}},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: "OTEL_TRACES_EXPORTER"},
		{name: "unknown protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := otlptest.NewRecorder()
			srv := httptest.NewServer(rec)
			defer srv.Close()
			for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
				t.Setenv(k, strings.Replace(tc.env[k], receiverURL, srv.URL, 1))
			}
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "k8s.pod.name=pod-1")
			info := version.Info{Version: "1.2.3"}
			tr, err := NewTracing(context.Background(), info)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				// Nothing listens at the endpoint: do not wait out the export timeout.
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				_ = tr.Shutdown(ctx)
			}()
			if tr.Exporting != tc.exporting {
				t.Fatalf("Exporting = %v, want %v", tr.Exporting, tc.exporting)
			}
			_, span := tr.Provider.Tracer("t").Start(context.Background(), "s")
			if span.SpanContext().IsValid() != tc.exporting {
				t.Fatalf("span context valid = %v, want %v", span.SpanContext().IsValid(), tc.exporting)
			}
			span.End()
			if !strings.Contains(tc.env["OTEL_EXPORTER_OTLP_ENDPOINT"]+tc.env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], receiverURL) {
				return
			}
			// The shutdown flushes the span to the receiver, with the
			// service's resource and the environment's attributes.
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			rec.CheckNoRefusals(t)
			spans := rec.Spans()
			if len(spans) != 1 || spans[0].GetName() != "s" || spans[0].SpanID() != span.SpanContext().SpanID().String() {
				t.Fatalf("received:\n%s", otlptest.Describe(spans))
			}
			for key, want := range map[string]string{"service.name": ServiceName, "service.version": info.Version, "k8s.pod.name": "pod-1"} {
				if got, _ := spans[0].ResourceAttr(key); got != want {
					t.Errorf("resource %s = %q, want %q", key, got, want)
				}
			}
		})
	}
}

func TestIDGeneratorMakesValidDistinctIDs(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		tid, sid := (idGenerator{}).NewIDs(context.Background())
		if !tid.IsValid() || !sid.IsValid() {
			t.Fatal("invalid id")
		}
		if seen[tid.String()] {
			t.Fatal("repeated trace id")
		}
		seen[tid.String()] = true
		if sid := (idGenerator{}).NewSpanID(context.Background(), tid); !sid.IsValid() {
			t.Fatal("invalid span id")
		}
	}
}

func TestNewLogger(t *testing.T) {
	for _, tc := range []struct {
		o   LogOptions
		err string
	}{
		{o: LogOptions{Level: "info", Format: "json"}},
		{o: LogOptions{Level: "debug", Format: "console", SamplingInitial: 10, SamplingThereafter: 5}},
		{o: LogOptions{Level: "loud", Format: "json"}, err: "log level"},
		{o: LogOptions{Level: "info", Format: "xml"}, err: "log format"},
	} {
		log, err := NewLogger(tc.o)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%+v: error %v, want %q", tc.o, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc.o, err)
		}
		want, _ := zapcore.ParseLevel(tc.o.Level)
		if !log.Core().Enabled(want) || log.Core().Enabled(want-1) {
			t.Fatalf("%+v: level not %s", tc.o, want)
		}
	}
}

func TestRegistryHasBuildInfoAndRuntime(t *testing.T) {
	reg := NewRegistry(version.Info{Version: "1.2.3", Revision: "abc", GoVersion: "go1.26"})
	n, err := testutil.GatherAndCount(reg, "plantstore_build_info", "go_goroutines", "process_cpu_seconds_total")
	if err != nil || n != 3 {
		t.Fatalf("gathered %d of the 3 series: %v", n, err)
	}
	want := `# HELP plantstore_build_info Always 1; the labels say which build is running.
# TYPE plantstore_build_info gauge
plantstore_build_info{goversion="go1.26",revision="abc",version="1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "plantstore_build_info"); err != nil {
		t.Fatal(err)
	}
}
