package perf

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/telemetry"
	"github.com/plantstore/plantstore/internal/version"
)

const benchToken = "bench-token"

// telemetryMode is how much of the telemetry a chain carries.
type telemetryMode struct {
	name string
	// sampler is OTEL_TRACES_SAMPLER(_ARG); empty means no tracing at all.
	sampler, samplerArg string
	on                  bool
	// logSampling applies the service's default log sampling (per second,
	// the first 100 lines of a kind, then every 100th); off, every access
	// line is written.
	logSampling bool
}

var modes = []telemetryMode{
	{name: "off"},
	// Metrics and the default log sampling, with no trace exporter: the
	// chart's out-of-the-box state (otel.endpoint empty), and the share of
	// the cost that is not tracing.
	{name: "untraced", on: true, logSampling: true},
	// Metrics, every access line, traces sampled at 10% (the chart's
	// default sampler once an endpoint is set) and exported over OTLP/HTTP
	// to a local sink.
	{name: "on", on: true, sampler: "parentbased_traceidratio", samplerArg: "0.1"},
	// The same with the service's default log sampling: what the chart
	// deploys with tracing enabled.
	{name: "defaults", on: true, sampler: "parentbased_traceidratio", samplerArg: "0.1", logSampling: true},
	// Every request traced.
	{name: "all-sampled", on: true, sampler: "parentbased_always_on"},
}

// BenchmarkChain serves POST /plants through the whole handler chain
// (instrumentation, router, bearer auth, decoding, store) with telemetry off
// and on, on real Redis (one request at a time, and many at once as a loaded
// server serves them) and on the embedded store. Compare the telemetry
// column with: benchstat -col /telemetry.
func BenchmarkChain(b *testing.B) {
	redisServer := redistest.Start(b)
	sink := otlpSink(b)
	for _, backend := range []string{"redis", "redis-parallel", "memory"} {
		for _, mode := range modes {
			b.Run("store="+backend+"/telemetry="+mode.name, func(b *testing.B) {
				var repo store.Backend = store.NewMemory()
				var client redis.UniversalClient
				if backend != "memory" {
					var err error
					client, err = store.NewRedisClient(store.RedisOptions{Addrs: []string{redisServer.Addr},
						DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
					if err != nil {
						b.Fatal(err)
					}
					defer client.Close()
					repo = store.NewRedis(client, "bench:")
				}
				handler, shutdown := chain(b, repo, client, mode, sink)
				defer shutdown()
				var id atomic.Int64
				id.Store(time.Now().UnixNano()) // fresh ids on every run
				b.ReportAllocs()
				b.ResetTimer()
				cpu := processCPU()
				defer func() {
					// The process's own CPU per request (the benchmark's
					// requests and the service's background work such as span
					// export, not redis-server's): steadier than wall time,
					// which on loopback is mostly waiting for the scheduler.
					b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
				}()
				if backend == "redis-parallel" {
					// Many requests at once, as a server under load serves
					// them: ns/op is then CPU per request, not a round trip.
					b.SetParallelism(8)
					b.RunParallel(func(pb *testing.PB) {
						w := &discardWriter{header: make(http.Header)}
						for pb.Next() {
							serveOne(b, handler, w, id.Add(1))
						}
					})
					return
				}
				w := &discardWriter{header: make(http.Header)}
				for b.Loop() {
					serveOne(b, handler, w, id.Add(1))
				}
			})
		}
	}
}

// processCPU is the user and system CPU time this process has used, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// serveOne sends one create with a fresh id through handler.
func serveOne(b *testing.B, handler http.Handler, w *discardWriter, id int64) {
	serveOneAs(b, handler, w, id, benchToken)
}

// serveOneAs is serveOne with token as the bearer credential.
func serveOneAs(b *testing.B, handler http.Handler, w *discardWriter, id int64, token string) {
	body := `{"id":` + strconv.FormatInt(id, 10) + `,"name":"Monstera","tag":"tropical"}`
	// What net/http hands a handler, without the cost of parsing a request
	// from text in the loop.
	req, _ := http.NewRequest(http.MethodPost, "/plants", strings.NewReader(body))
	req.RemoteAddr = "127.0.0.1:40000"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", "bench")
	w.reset()
	handler.ServeHTTP(w, req)
	if w.status != http.StatusOK {
		b.Errorf("status %d", w.status)
	}
}

// chain builds the API handler the way the service does, with or without
// telemetry; client, when not nil, is the Redis client under repo, whose
// commands are traced as the service traces them.
func chain(b *testing.B, repo store.Backend, client redis.UniversalClient, mode telemetryMode, sinkURL string) (http.Handler, func()) {
	b.Helper()
	keyring := auth.NewKeyring(auth.NewTokenSet(benchToken))
	if !mode.on {
		return httpapi.NewRouter(httpapi.RouterParams{
			CreatePlant:  httpapi.NewCreatePlantHandler(repo, time.Second, zap.NewNop(), nil),
			OpenAPI:      httpapi.NewOpenAPIHandler(api.OpenAPI),
			Authenticate: auth.Middleware(keyring, nil),
		}), func() {}
	}

	if mode.sampler == "" {
		sinkURL = "" // no endpoint: the no-op tracer provider
	}
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sinkURL)
	b.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	b.Setenv("OTEL_TRACES_SAMPLER", mode.sampler)
	b.Setenv("OTEL_TRACES_SAMPLER_ARG", mode.samplerArg)
	tracing, err := telemetry.NewTracing(context.Background(), version.Get())
	if err != nil {
		b.Fatal(err)
	}
	if client != nil && tracing.Exporting { // as store.NewBackend does
		if err := store.TraceCommands(client, tracing.Provider); err != nil {
			b.Fatal(err)
		}
	}
	reg := telemetry.NewRegistry(version.Get())
	// The production logger, writing to nowhere.
	logOpts := telemetry.LogOptions{Level: "info", Format: "json"}
	if mode.logSampling {
		logOpts.SamplingInitial, logOpts.SamplingThereafter = 100, 100
	}
	log, err := telemetry.NewLoggerTo(logOpts, zapcore.AddSync(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	instrumented, err := store.Instrument(repo, reg)
	if err != nil {
		b.Fatal(err)
	}
	metrics, err := auth.NewMetrics(reg, keyring.Len)
	if err != nil {
		b.Fatal(err)
	}
	res, err := httpapi.New(httpapi.Params{
		Options:      httpapi.Options{StoreTimeout: time.Second},
		Repository:   instrumented,
		Log:          log,
		Registry:     reg,
		Tracing:      tracing,
		Authenticate: auth.Middleware(keyring, metrics.Failure),
	})
	if err != nil {
		b.Fatal(err)
	}
	return res.Handler, func() { _ = tracing.Shutdown(context.Background()) }
}

// discardWriter is a reusable ResponseWriter that keeps only the status.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(b), nil
}
func (w *discardWriter) reset() {
	clear(w.header)
	w.status = 0
}

// sinkEnv makes the test binary serve as the OTLP sink (see TestMain).
const sinkEnv = "PLANTSTORE_PERF_OTLP_SINK"

// TestMain lets the test binary double as the OTLP sink: in its own process,
// so that what the collector would spend receiving spans is not counted as
// the service's CPU.
func TestMain(m *testing.M) {
	if os.Getenv(sinkEnv) == "1" {
		serveSink()
		return
	}
	os.Exit(m.Run())
}

// serveSink reads and drops every export until killed, after printing its URL.
func serveSink() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("http://" + ln.Addr().String())
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
}

// otlpSink starts the sink process and returns its URL.
func otlpSink(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), sinkEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("the OTLP sink did not start: %v", err)
	}
	return strings.TrimSpace(url)
}
