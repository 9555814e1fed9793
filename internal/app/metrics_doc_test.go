package app_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/fx"

	"github.com/plantstore/plantstore/internal/app"
	"github.com/plantstore/plantstore/internal/config"
	"github.com/plantstore/plantstore/internal/docgen"
	"github.com/plantstore/plantstore/internal/redistest"
)

var update = flag.Bool("update", false, "rewrite the generated parts of the docs")

// TestMetricsDoc: docs/telemetry.md's metrics table is what the whole graph
// registers, on Redis and with webhooks on (the configuration that
// registers the most, with a JWT issuer): every descriptor's name, type, labels and help.
func TestMetricsDoc(t *testing.T) {
	redis := redistest.Start(t)
	dir := t.TempDir()
	subscribers := filepath.Join(dir, "subscribers")
	if err := os.WriteFile(subscribers, []byte("# none yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An issuer that is never reached: its metrics are registered all the same.
	issuers := filepath.Join(dir, "issuers")
	if err := os.WriteFile(issuers, []byte("https://127.0.0.1:1 audience=plantstore\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]string{"--dev", "--log-level", "error", "--redis-addr", redis.Addr,
		"--webhook-subscribers-file", subscribers, "--auth-jwt-issuers-file", issuers,
		"--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingRegisterer{}
	var registry *prometheus.Registry
	a := app.New(cfg, fx.NopLogger, fx.Populate(&registry), fx.Decorate(func(r prometheus.Registerer) prometheus.Registerer {
		rec.Registerer = r
		return rec
	}))
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Stop(ctx) }()

	recorded := rec.metrics(t)
	metrics := append(recorded, gathered(t, registry, recorded)...)
	sort.Slice(metrics, func(i, j int) bool { return metrics[i].name < metrics[j].name })
	if len(metrics) < 10 {
		t.Fatalf("only %d metrics registered: %v", len(metrics), metrics)
	}
	rows := make([][]string, 0, len(metrics))
	for _, m := range metrics {
		labels := make([]string, len(m.labels))
		for i, l := range m.labels {
			labels[i] = docgen.Code(l)
		}
		rows = append(rows, []string{docgen.Code(m.name), m.kind, strings.Join(labels, ", "), docgen.Cell(m.help)})
	}
	rows = append(rows, []string{"`go_*`, `process_*`", "", "", "the Go runtime and process collectors"})
	docgen.Check(t, "docs/telemetry.md", "metrics", docgen.Table([]string{"metric", "type", "labels", "meaning"}, rows), *update)
}

// gathered are the service's metrics the registry holds beyond those
// recorded: the ones it was made with (the build's), before the graph could
// record a registration.
func gathered(t *testing.T, registry *prometheus.Registry, recorded []metricDoc) []metricDoc {
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, m := range recorded {
		known[m.name] = true
	}
	var out []metricDoc
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "plantstore_") || known[name] || len(f.GetMetric()) == 0 {
			continue
		}
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		out = append(out, metricDoc{name: name, kind: strings.ToLower(f.GetType().String()), help: f.GetHelp(), labels: labels})
	}
	return out
}

// recordingRegisterer keeps every collector the graph registers.
type recordingRegisterer struct {
	prometheus.Registerer
	mu         sync.Mutex
	collectors []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	r.mu.Lock()
	r.collectors = append(r.collectors, c)
	r.mu.Unlock()
	return r.Registerer.Register(c)
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

type metricDoc struct {
	name, kind, help string
	labels           []string
}

// descPattern reads Desc.String(), the only way client_golang shows a
// descriptor's parts.
var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), (?:unit: "(?:[^"\\]|\\.)*", )?constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

func (r *recordingRegisterer) metrics(t *testing.T) []metricDoc {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []metricDoc
	for _, c := range r.collectors {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		kinds := kindsOf(c)
		for d := range ch {
			m := descPattern.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read descriptor %s", d)
			}
			name, err1 := strconv.Unquote(m[1])
			help, err2 := strconv.Unquote(m[2])
			if err1 != nil || err2 != nil {
				t.Fatalf("descriptor %s: %v %v", d, err1, err2)
			}
			if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
				continue
			}
			var labels []string
			for _, l := range strings.Split(m[3]+","+m[4], ",") {
				if l = strings.TrimSpace(l); l != "" {
					labels = append(labels, strings.SplitN(l, "=", 2)[0])
				}
			}
			kind := kinds[name]
			if kind == "" {
				t.Fatalf("%s: no type known for its collector %T", name, c)
			}
			out = append(out, metricDoc{name: name, kind: kind, help: help, labels: labels})
		}
	}
	return out
}

// kindsOf tells the type of each metric a collector describes: from its Go
// type, or, for a custom collector or a func metric, from what it collects.
func kindsOf(c prometheus.Collector) map[string]string {
	var kind string
	switch c.(type) {
	case *prometheus.CounterVec:
		kind = "counter"
	case *prometheus.GaugeVec:
		kind = "gauge"
	case *prometheus.HistogramVec, prometheus.Histogram:
		kind = "histogram"
	case prometheus.Gauge:
		kind = "gauge"
	case prometheus.Counter:
		kind = "counter"
	}
	descs := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(descs); close(descs) }()
	kinds := map[string]string{}
	for d := range descs {
		if m := descPattern.FindStringSubmatch(d.String()); m != nil && kind != "" {
			name, _ := strconv.Unquote(m[1])
			kinds[name] = kind
		}
	}
	if kind != "" {
		return kinds
	}
	ch := make(chan prometheus.Metric, 256)
	go func() { c.Collect(ch); close(ch) }()
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		d := descPattern.FindStringSubmatch(m.Desc().String())
		if d == nil {
			panic(fmt.Sprintf("cannot read descriptor %s", m.Desc()))
		}
		name, _ := strconv.Unquote(d[1])
		switch {
		case pb.Counter != nil:
			kinds[name] = "counter"
		case pb.Gauge != nil:
			kinds[name] = "gauge"
		case pb.Histogram != nil:
			kinds[name] = "histogram"
		case pb.Summary != nil:
			kinds[name] = "summary"
		default:
			kinds[name] = "untyped"
		}
	}
	return kinds
}
