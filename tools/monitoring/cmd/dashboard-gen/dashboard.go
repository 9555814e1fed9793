// The SDK marks its v1 dashboard deprecated in favour of dashboardv2, the
// schema of Grafana 12's new dashboard API. The chart ships the v1 JSON: the
// one Grafana's dashboard sidecar and file provisioning have always loaded,
// and the one tools/monitoring and prom-check read (panels[].targets[]).
//lint:file-ignore SA1019 the chart ships the v1 dashboard JSON (see above)

package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/plantstore/plantstore/tools/monitoring"
)

// sel is the selector every query carries, so that the job and instance
// variables filter every panel (tools/monitoring checks it).
const sel = `job=~"$job", instance=~"$instance"`

// redisSel is the selector of the Redis row: the chart's Redis exporter
// (redis.metrics), whose ServiceMonitor pins its job to the service's job
// and "-redis" (monitoring.RedisJobSuffix). The instance variable lists the
// service's instances, not Redis's: one exporter per release.
const redisSel = `job=~"$job` + monitoring.RedisJobSuffix + `"`

const runbookURL = "https://github.com/plantstore/plantstore/blob/main/docs/monitoring.md"

// The links to Jaeger: the UI's address and the traced service are variables
// a user sets once for their installation; the chart's default service name
// is plantstore (otel.serviceName).
const (
	jaegerURLVar     = "jaeger_url"
	jaegerURLDefault = "http://localhost:16686"
	traceServiceVar  = "trace_service"
)

// Build returns plantstore's dashboard. The panel ids are the ones the
// hand-written dashboard had, so links to a panel (viewPanel=N) still work.
func Build() (dashboard.Dashboard, error) {
	b := dashboard.NewDashboardBuilder("plantstore").
		Uid("plantstore").
		Description("plantstore: traffic, errors, latency against the SLOs, plants, auth, the store, the Go runtime. Runbook: docs/monitoring.md.").
		Tags([]string{"plantstore"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Time("now-6h", "now").
		Timezone("").
		WeekStart("").
		FiscalYearStartMonth(0).
		Refresh("30s").
		Version(1).
		Annotation(dashboard.NewAnnotationQueryBuilder().
			Name("Annotations & Alerts").
			BuiltIn(1).
			Datasource(common.DataSourceRef{Type: ptr("grafana"), Uid: ptr("-- Grafana --")}).
			Enable(true).
			Hide(true).
			IconColor("rgba(0, 211, 255, 1)").
			Type("dashboard")).
		Link(dashboard.NewDashboardLinkBuilder("Runbook").
			Type(dashboard.DashboardLinkTypeLink).
			Icon("doc").
			Url(runbookURL).
			TargetBlank(true)).
		Link(dashboard.NewDashboardLinkBuilder("Traces in Jaeger").
			Type(dashboard.DashboardLinkTypeLink).
			Icon("external link").
			Tooltip("The traced service's traces over the dashboard's time range, in the Jaeger UI at $" + jaegerURLVar).
			Url(jaegerSearchURL("")).
			TargetBlank(true)).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus")).
		WithVariable(queryVariable("job", "Job", "label_values(plantstore_build_info, job)").
			Current(dashboard.VariableOption{Selected: ptr(true), Text: oneString("plantstore"), Value: oneString("plantstore")}).
			Refresh(dashboard.VariableRefreshOnDashboardLoad).
			Multi(false).
			IncludeAll(false)).
		WithVariable(queryVariable("instance", "Instance", `label_values(plantstore_build_info{job=~"$job"}, instance)`).
			Current(dashboard.VariableOption{Selected: ptr(true), Text: manyStrings("All"), Value: manyStrings("$__all")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Multi(true).
			IncludeAll(true).
			AllValue(".+")).
		WithVariable(textBoxVariable(jaegerURLVar, "Jaeger UI",
			"The Jaeger UI as the browser reaches it, for the request latency panel's data link and the Traces in Jaeger link (docs/monitoring.md).",
			jaegerURLDefault)).
		WithVariable(textBoxVariable(traceServiceVar, "Traced service",
			"The service.name plantstore's spans carry: the chart's otel.serviceName.", "plantstore"))

	overview(b)
	traffic(b)
	errorRatios(b)
	latency(b)
	plantsAndAuth(b)
	clients(b)
	webhooks(b)
	store(b)
	redis(b)
	runtime(b)
	build(b)
	d, err := b.Build()
	if err != nil {
		return dashboard.Dashboard{}, err
	}
	aboveThePanels(&d)
	return d, nil
}

// aboveThePanels clears the placement the SDK gives every link and
// annotation by default, "inControlsMenu", which Grafana 12 reads
// as: tuck it away in the dashboard controls' menu (grafana-foundation-sdk
// issue 1272). Without it the links stay above the panels, where the
// hand-written dashboard had its Runbook link; a data link has no placement.
func aboveThePanels(d *dashboard.Dashboard) {
	for i := range d.Annotations.List {
		d.Annotations.List[i].Placement = nil
	}
	for i := range d.Links {
		d.Links[i].Placement = nil
	}
	for _, p := range d.Panels {
		if p.Panel == nil || p.Panel.FieldConfig == nil {
			continue
		}
		for i := range p.Panel.FieldConfig.Defaults.Links {
			p.Panel.FieldConfig.Defaults.Links[i].Placement = nil
		}
	}
}

func overview(b *dashboard.DashboardBuilder) {
	b.WithRow(row(1, "Overview"))
	b.WithPanel(statPanel(2, "Targets up", "Instances Prometheus scrapes successfully.", "short",
		`sum(up{`+sel+`})`).
		Thresholds(steps("red", from(1, "green"))))
	b.WithPanel(statPanel(3, "Request rate", "API requests per second, all routes.", "reqps",
		`sum(rate(plantstore_http_request_duration_seconds_count{`+sel+`}[$__rate_interval]))`).
		Thresholds(steps("green")))
	b.WithPanel(statPanel(4, "Availability (non-5xx share, known routes)",
		"Share of requests on known routes answered without a 5xx over the dashboard's time range. SLO: 99.9%.", "percentunit",
		`sum(increase(plantstore_http_request_duration_seconds_count{`+sel+`, route!="unmatched", code!~"5.."}[$__range])) / sum(increase(plantstore_http_request_duration_seconds_count{`+sel+`, route!="unmatched"}[$__range]))`).
		Thresholds(steps("red", from(0.999, "green"))).
		Decimals(3))
	b.WithPanel(statPanel(5, "Plant requests within 100 ms",
		"Share of requests to /plants and /plants/{id} (not 5xx) answered within 100 ms over the dashboard's time range. SLO: 99%.", "percentunit",
		`sum(increase(plantstore_http_request_duration_seconds_bucket{`+sel+`, route=~"/plants|/plants/{id}", code!~"5..", le="0.1"}[$__range])) / sum(increase(plantstore_http_request_duration_seconds_count{`+sel+`, route=~"/plants|/plants/{id}", code!~"5.."}[$__range]))`).
		Thresholds(steps("red", from(0.99, "green"))).
		Decimals(2))
}

func traffic(b *dashboard.DashboardBuilder) {
	b.WithRow(row(6, "Traffic"))
	b.WithPanel(seriesPanel(7, "Request rate by method, route and code",
		"API requests per second by method, route template and status code: GET /plants lists, POST /plants creates, GET and DELETE /plants/{id} read and delete.",
		"reqps", 16,
		rangeQuery("A", `sum by (method, route, code) (rate(plantstore_http_request_duration_seconds_count{`+sel+`}[$__rate_interval]))`, "{{method}} {{route}} {{code}}")))
	b.WithPanel(seriesPanel(8, "Requests in flight", "API requests being served right now, per instance.", "short", 8,
		rangeQuery("A", `sum by (instance) (plantstore_http_requests_in_flight{`+sel+`})`, "{{instance}}")))
}

func errorRatios(b *dashboard.DashboardBuilder) {
	b.WithRow(row(9, "Errors"))
	ratio := func(class string) string {
		return `sum by (code) (rate(plantstore_http_request_duration_seconds_count{` + sel + `, code=~"` + class + `"}[$__rate_interval])) / ignoring (code) group_left sum(rate(plantstore_http_request_duration_seconds_count{` + sel + `}[$__rate_interval]))`
	}
	b.WithPanel(seriesPanel(10, "5xx ratio by code",
		"Share of all API requests answered with each 5xx code. The availability SLO allows 0.1% on known routes.",
		"percentunit", 12, rangeQuery("A", ratio("5.."), "{{code}}")).
		Min(0).
		Thresholds(steps("green", from(0.001, "red"))).
		ThresholdsStyle(thresholdsStyle(common.GraphThresholdsStyleModeLineAndArea)))
	b.WithPanel(seriesPanel(11, "4xx ratio by code",
		"Share of all API requests answered with each 4xx code: client errors, outside the SLO. A jump in 401 is a client with a bad token; in 404 a wrong URL.",
		"percentunit", 12, rangeQuery("A", ratio("4.."), "{{code}}")).
		Min(0))
}

func latency(b *dashboard.DashboardBuilder) {
	b.WithRow(row(12, "Latency"))
	// The request histogram is the one whose observations carry a trace_id
	// exemplar (internal/httpapi): its quantiles ask for them.
	quantile := func(ref, q, p string) *prometheus.DataqueryBuilder {
		return rangeQuery(ref, `histogram_quantile(`+q+`, sum by (le, method, route) (rate(plantstore_http_request_duration_seconds_bucket{`+sel+`}[$__rate_interval])))`, p+" {{method}} {{route}}").
			Exemplar(true)
	}
	b.WithPanel(seriesPanel(13, "Request latency p50 / p90 / p99 by method and route",
		"Quantiles estimated from the classic histogram buckets (linear interpolation inside a bucket). "+
			"Exemplars (with tracing on): a sampled request's trace id; the Prometheus data source's exemplar link opens it. "+
			"Click a line for the traces of that route in Jaeger slower than the point.",
		"s", 16, quantile("A", "0.5", "p50"), quantile("B", "0.9", "p90"), quantile("C", "0.99", "p99")).
		DataLinks([]cog.Builder[dashboard.DashboardLink]{
			dashboard.NewDashboardLinkBuilder("Traces of ${__field.labels.method} ${__field.labels.route} slower than this point, in Jaeger").
				Url(jaegerSearchURL("&operation=${__field.labels.method:percentencode}%20${__field.labels.route:percentencode}&minDuration=${__value.raw}s")).
				TargetBlank(true),
		}))
	b.WithPanel(seriesPanel(14, "Plant requests within 100 ms",
		"Latency SLI: share of requests to /plants and /plants/{id} (not 5xx) answered within 100 ms. SLO: 99%.",
		"percentunit", 8,
		rangeQuery("A", `sum(rate(plantstore_http_request_duration_seconds_bucket{`+sel+`, route=~"/plants|/plants/{id}", code!~"5..", le="0.1"}[$__rate_interval])) / sum(rate(plantstore_http_request_duration_seconds_count{`+sel+`, route=~"/plants|/plants/{id}", code!~"5.."}[$__rate_interval]))`, "within 100 ms")).
		Max(1).
		Thresholds(steps("red", from(0.99, "green"))).
		ThresholdsStyle(thresholdsStyle(common.GraphThresholdsStyleModeLineAndArea)))
}

func plantsAndAuth(b *dashboard.DashboardBuilder) {
	b.WithRow(row(15, "Plants and authentication"))
	b.WithPanel(stacked(seriesPanel(16, "Plant creations by outcome",
		"created: a new plant; replayed: the same plant again (a safe retry); conflict: the id is taken by a different plant (409).",
		"ops", 8,
		rangeQuery("A", `sum by (outcome) (rate(plantstore_plant_creations_total{`+sel+`}[$__rate_interval]))`, "{{outcome}}"))))
	b.WithPanel(stacked(seriesPanel(17, "Auth failures by reason",
		"missing: no Authorization header; malformed: not Bearer <token>; rejected: a token not in force; expired: a token past its expires= (401); insufficient_scope: a token without the scope the operation needs (403).",
		"reqps", 8,
		rangeQuery("A", `sum by (reason) (rate(plantstore_auth_failures_total{`+sel+`}[$__rate_interval]))`, "{{reason}}"))))
	b.WithPanel(seriesPanel(18, "Token file reloads",
		"Reloads of the tokens file (it is reread when it changes). A failure keeps the tokens in force: see the PlantstoreTokenReloadFailing runbook.",
		"short", 8,
		rangeQuery("A", `sum by (result) (increase(plantstore_auth_token_reloads_total{`+sel+`}[$__rate_interval]))`, "{{result}}"),
		rangeQuery("B", `max by (instance) (plantstore_auth_tokens{`+sel+`})`, "tokens in force {{instance}}")))
}

func clients(b *dashboard.DashboardBuilder) {
	b.WithRow(row(33, "Clients"))
	b.WithPanel(seriesPanel(34, "Top clients by request rate",
		"The ten clients sending the most API requests: the name= of their tokens line, unnamed without one, unauthenticated without an accepted token.",
		"reqps", 8,
		rangeQuery("A", `topk(10, sum by (client) (rate(plantstore_http_requests_total{`+sel+`}[$__rate_interval])))`, "{{client}}")).
		FillOpacity(30))
	b.WithPanel(stacked(seriesPanel(35, "4xx by client",
		"Client errors by client and code: 401 bad or expired credentials, 403 a missing scope, 429 rate limited, 400/404/409 bad requests.",
		"reqps", 8,
		rangeQuery("A", `sum by (client, code) (rate(plantstore_http_requests_total{`+sel+`, code=~"4.."}[$__rate_interval]))`, "{{client}} {{code}}"))))
	b.WithPanel(seriesPanel(36, "Rate limited (429) by client, and fail open",
		"429 answers by client: a client held at its rate= (alert PlantstoreClientRateLimited). Fail open: requests served without a limit because the limiter's Redis did not answer in time (alert PlantstoreRateLimiterFailingOpen).",
		"reqps", 8,
		rangeQuery("A", `sum by (client) (rate(plantstore_http_requests_total{`+sel+`, code="429"}[$__rate_interval]))`, "{{client}} 429"),
		rangeQuery("B", `sum(rate(plantstore_ratelimit_fail_open_total{`+sel+`}[$__rate_interval]))`, "fail open")).
		FillOpacity(30))
}

func webhooks(b *dashboard.DashboardBuilder) {
	b.WithRow(row(37, "Webhooks"))
	b.WithPanel(seriesPanel(38, "Webhook backlog",
		"Undelivered work in the outbox (docs/webhooks.md): events recorded and not yet fanned out, and deliveries (one per event and subscriber) due, waiting for a retry or under way. Every replica reads the same shared outbox, so the max over replicas is the value. A backlog that keeps growing: a subscriber failing or too slow (alert PlantstoreWebhookBacklog).",
		"short", 8,
		rangeQuery("A", `max by (queue) (plantstore_webhook_backlog{`+sel+`})`, "{{queue}}")).
		FillOpacity(30))
	b.WithPanel(seriesPanel(39, "Oldest undelivered event age",
		"Age of the oldest event still waiting for a delivery (0 when none); alert PlantstoreWebhookBacklog past 15 minutes for 10 minutes.",
		"s", 8,
		rangeQuery("A", `max(plantstore_webhook_oldest_event_age_seconds{`+sel+`})`, "oldest event")).
		FillOpacity(30))
	b.WithPanel(seriesPanel(40, "Webhook dead letters",
		"Deliveries given up after --webhook-max-attempts, kept for an operator: list and replay them on the admin port (GET /admin/webhooks/dead-letters, POST /admin/webhooks/dead-letters/replay).",
		"short", 8,
		rangeQuery("A", `max(plantstore_webhook_dead_letters{`+sel+`})`, "dead letters")).
		FillOpacity(30))
	b.WithPanel(seriesPanel(41, "Webhook deliveries by subscriber and outcome",
		"Delivery attempts per second, by subscriber (host[:port] of its URL) and outcome: delivered (a 2xx), retry (any other answer, a timeout or a refused address: tried again after backoff), dead_lettered (failed its last attempt, see the dead letters), unsubscribed (dropped: its subscriber left the file). A subscriber whose retries outnumber its deliveries is failing; the others are unaffected (each subscriber has its own deliveries).",
		"ops", 12,
		rangeQuery("A", `sum by (subscriber, outcome) (rate(plantstore_webhook_deliveries_total{`+sel+`}[$__rate_interval]))`, "{{subscriber}} {{outcome}}")))
	quantile := func(ref, q, p string) *prometheus.DataqueryBuilder {
		return rangeQuery(ref, `histogram_quantile(`+q+`, sum by (le, subscriber) (rate(plantstore_webhook_delivery_duration_seconds_bucket{`+sel+`}[$__rate_interval])))`, p+" {{subscriber}}")
	}
	b.WithPanel(seriesPanel(42, "Webhook delivery latency p50 / p99 by subscriber",
		"Time of one delivery attempt, connect to the answer's end, whatever its outcome; bounded by --webhook-timeout (5 s), so a p99 at the timeout means attempts timing out. Quantiles estimated from the classic histogram buckets.",
		"s", 12, quantile("A", "0.5", "p50"), quantile("B", "0.99", "p99")))
}

func store(b *dashboard.DashboardBuilder) {
	b.WithRow(row(19, "Store"))
	b.WithPanel(seriesPanel(20, "Store operation latency p99 by operation",
		"create: a plant write; ping: the readiness check.", "s", 12,
		rangeQuery("A", `histogram_quantile(0.99, sum by (le, operation) (rate(plantstore_store_operation_duration_seconds_bucket{`+sel+`}[$__rate_interval])))`, "p99 {{operation}}")))
	b.WithPanel(seriesPanel(21, "Store operations by outcome",
		"ok; unavailable: the store did not answer in time or refused (the request got a 503); unreplicated: fewer replicas than --redis-min-replica-acks acknowledged in time (503); error: any other failure (500).",
		"ops", 12,
		rangeQuery("A", `sum by (operation, outcome) (rate(plantstore_store_operation_duration_seconds_count{`+sel+`}[$__rate_interval]))`, "{{operation}} {{outcome}}")))
	perInstance := func(ref, metric, legend string) *prometheus.DataqueryBuilder {
		return rangeQuery(ref, `sum by (instance) (rate(`+metric+`{`+sel+`}[$__rate_interval]))`, legend+" {{instance}}")
	}
	b.WithPanel(seriesPanel(22, "Redis pool: hits, misses, timeouts",
		"Connection pool events per second (Redis only). Timeouts: waiting for a free connection took too long; raise --redis-pool-size or find the slow commands.",
		"ops", 12,
		perInstance("A", "plantstore_redis_pool_hits_total", "hits"),
		perInstance("B", "plantstore_redis_pool_misses_total", "misses"),
		perInstance("C", "plantstore_redis_pool_timeouts_total", "timeouts"),
		perInstance("D", "plantstore_redis_pool_stale_connections_total", "stale")))
	b.WithPanel(seriesPanel(23, "Redis pool connections",
		"Open connections in the pool, and how many of them are idle (Redis only).", "short", 12,
		rangeQuery("A", `sum by (instance) (plantstore_redis_pool_total_connections{`+sel+`})`, "total {{instance}}"),
		rangeQuery("B", `sum by (instance) (plantstore_redis_pool_idle_connections{`+sel+`})`, "idle {{instance}}")))
}

// redis is the row of the chart's Redis exporter (redis.metrics,
// oliver006/redis_exporter): its panels have no data without it.
func redis(b *dashboard.DashboardBuilder) {
	b.WithRow(row(43, "Redis"))
	b.WithPanel(seriesPanel(44, "Redis memory used against maxmemory",
		"The chart's Redis (redis.metrics: its exporter): memory used, and maxmemory (redis.maxmemory). maxmemory 0, the chart's default, means no limit: "+
			"Redis then grows until the container's memory limit (redis.resources.limits.memory) kills it. At maxmemory Redis refuses writes (maxmemory-policy noeviction: plants are never evicted), so creates fail.",
		"bytes", 8,
		rangeQuery("A", `max by (instance) (redis_memory_used_bytes{`+redisSel+`})`, "used {{instance}}"),
		rangeQuery("B", `max by (instance) (redis_memory_max_bytes{`+redisSel+`})`, "maxmemory (0: no limit) {{instance}}")))
	b.WithPanel(seriesPanel(45, "Redis memory used of maxmemory",
		"Memory used as a share of maxmemory; no data when maxmemory is 0 (no limit). At 100% Redis refuses writes.",
		"percentunit", 8,
		rangeQuery("A", `max by (instance) (redis_memory_used_bytes{`+redisSel+`} / (redis_memory_max_bytes{`+redisSel+`} > 0))`, "{{instance}}")).
		Min(0).
		Max(1).
		Thresholds(steps("green", from(0.8, "orange"), from(0.9, "red"))).
		ThresholdsStyle(thresholdsStyle(common.GraphThresholdsStyleModeLineAndArea)))
	b.WithPanel(seriesPanel(46, "Redis AOF size",
		"The append-only file, and its size after the last rewrite. Redis rewrites it when it has doubled since (auto-aof-rewrite-percentage 100) and is at least 64 MB; it lives on the data PVC (redis.persistence.size).",
		"bytes", 8,
		rangeQuery("A", `max by (instance) (redis_aof_current_size_bytes{`+redisSel+`})`, "AOF {{instance}}"),
		rangeQuery("B", `max by (instance) (redis_aof_base_size_bytes{`+redisSel+`})`, "after the last rewrite {{instance}}")))
	b.WithPanel(seriesPanel(47, "Redis AOF rewrite",
		"1 while an AOF rewrite runs (a fork of Redis: its memory may grow by the pages written meanwhile). The last rewrite's and the last AOF write's status: 1 ok, 0 failed; "+
			"while the last write failed Redis refuses writes.",
		"short", 8,
		rangeQuery("A", `max by (instance) (redis_aof_rewrite_in_progress{`+redisSel+`})`, "rewrite in progress {{instance}}"),
		rangeQuery("B", `min by (instance) (redis_aof_last_bgrewrite_status{`+redisSel+`})`, "last rewrite ok {{instance}}"),
		rangeQuery("C", `min by (instance) (redis_aof_last_write_status{`+redisSel+`})`, "last write ok {{instance}}")))
	b.WithPanel(seriesPanel(48, "Redis AOF rewrite duration",
		"How long the last AOF rewrite took (-1: none since Redis started), and the one under way (-1: none).",
		"s", 8,
		rangeQuery("A", `max by (instance) (redis_aof_last_rewrite_duration_sec{`+redisSel+`})`, "last {{instance}}"),
		rangeQuery("B", `max by (instance) (redis_aof_current_rewrite_duration_sec{`+redisSel+`})`, "under way {{instance}}")))
	b.WithPanel(seriesPanel(49, "Redis connected replicas",
		"Replicas connected to the chart's Redis: 0 unless one was attached (the chart runs none; externalRedis is the way to replicas).",
		"short", 8,
		rangeQuery("A", `max by (instance) (redis_connected_slaves{`+redisSel+`})`, "{{instance}}")))
	b.WithPanel(seriesPanel(50, "Redis replication lag (seconds)",
		"Per replica: seconds since its last acknowledgement (a replica acknowledges every second, so above 1 it is behind or cut off). No data without replicas.",
		"s", 12,
		rangeQuery("A", `max by (instance, slave_ip, slave_port) (redis_connected_slave_lag_seconds{`+redisSel+`})`, "{{slave_ip}}:{{slave_port}}")))
	b.WithPanel(seriesPanel(51, "Redis replication lag (bytes)",
		"Per replica: bytes of the replication stream it has not acknowledged (the master's offset less the replica's). No data without replicas.",
		"bytes", 12,
		rangeQuery("A", `max by (instance) (redis_master_repl_offset{`+redisSel+`}) - on (instance) group_right max by (instance, slave_ip, slave_port) (redis_connected_slave_offset_bytes{`+redisSel+`})`, "{{slave_ip}}:{{slave_port}}")))
}

func runtime(b *dashboard.DashboardBuilder) {
	b.WithRow(row(24, "Go runtime and process"))
	b.WithPanel(seriesPanel(25, "Goroutines", "", "short", 8,
		rangeQuery("A", `go_goroutines{`+sel+`}`, "{{instance}}")))
	b.WithPanel(seriesPanel(26, "Heap in use", "", "bytes", 8,
		rangeQuery("A", `go_memstats_heap_inuse_bytes{`+sel+`}`, "{{instance}}")))
	// Prometheus 3 writes quantile="1.0", Prometheus 2 quantile="1".
	b.WithPanel(seriesPanel(27, "GC pause", "Longest stop-the-world GC pause of the recent cycles, and the mean pause.", "s", 8,
		rangeQuery("A", `max by (instance) (go_gc_duration_seconds{`+sel+`, quantile=~"1(\\.0)?"})`, "max {{instance}}"),
		rangeQuery("B", `sum by (instance) (rate(go_gc_duration_seconds_sum{`+sel+`}[$__rate_interval])) / sum by (instance) (rate(go_gc_duration_seconds_count{`+sel+`}[$__rate_interval]))`, "mean {{instance}}")))
	b.WithPanel(seriesPanel(28, "CPU", "Process CPU in cores.", "short", 8,
		rangeQuery("A", `rate(process_cpu_seconds_total{`+sel+`}[$__rate_interval])`, "{{instance}}")))
	b.WithPanel(seriesPanel(29, "Resident memory", "", "bytes", 8,
		rangeQuery("A", `process_resident_memory_bytes{`+sel+`}`, "{{instance}}")))
	b.WithPanel(seriesPanel(30, "Open file descriptors", "Open fds against the limit.", "short", 8,
		rangeQuery("A", `process_open_fds{`+sel+`}`, "open {{instance}}"),
		rangeQuery("B", `process_max_fds{`+sel+`}`, "limit {{instance}}")))
}

func build(b *dashboard.DashboardBuilder) {
	b.WithRow(row(31, "Build"))
	b.WithPanel(table.NewPanelBuilder().
		Id(32).
		Title("Build info").
		Description("Version, revision and Go version of each running instance.").
		Datasource(promDatasource()).
		Height(6).
		Span(24).
		WithTarget(instantQuery("A", `plantstore_build_info{`+sel+`}`).Format(prometheus.PromQueryFormatTable)).
		ShowHeader(true).
		CellHeight(common.TableCellHeightSm).
		Footer(common.NewTableFooterOptionsBuilder().Show(false)).
		WithTransformation(dashboard.DataTransformerConfig{
			Id: "organize",
			Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true, "Value": true, "__name__": true, "job": true},
				"indexByName":   map[string]int{"instance": 0, "version": 1, "revision": 2, "goversion": 3},
				"renameByName":  map[string]string{},
			},
		}))
}

// jaegerSearchURL is the Jaeger UI's trace search for the traced service over
// the dashboard's time range, with more query parameters appended. Jaeger
// takes start and end in microseconds; $__from and $__to are milliseconds.
// The address is inserted raw: Grafana percent-encodes a data link's
// variables by default, which would break the URL's scheme and host.
func jaegerSearchURL(more string) string {
	return "${" + jaegerURLVar + ":raw}/search?service=${" + traceServiceVar + ":percentencode}" +
		"&start=${__from}000&end=${__to}000&lookback=custom&limit=20" + more
}

// queryVariable is a variable of the label values query, sorted.
func queryVariable(name, label, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(promDatasource()).
		Query(stringOrMap(query)).
		Definition(query).
		Sort(dashboard.VariableSortAlphabeticalAsc)
}

// textBoxVariable is a variable the user types, value by default.
func textBoxVariable(name, label, description, value string) *dashboard.TextBoxVariableBuilder {
	return dashboard.NewTextBoxVariableBuilder(name).
		Label(label).
		Description(description).
		DefaultValue(stringOrMap(value)).
		Current(dashboard.VariableOption{Text: oneString(value), Value: oneString(value)})
}

func row(id uint32, title string) *dashboard.RowBuilder {
	return dashboard.NewRowBuilder(title).Id(id)
}

// statPanel is a 6-wide, 4-high stat of one instant query, coloured by its
// thresholds.
func statPanel(id uint32, title, description, unit, expr string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Id(id).
		Title(title).
		Description(description).
		Datasource(promDatasource()).
		Height(4).
		Span(6).
		Unit(unit).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)).
		WithTarget(instantQuery("A", expr)).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Fields("").Values(false)).
		ColorMode(common.BigValueColorModeValue).
		GraphMode(common.BigValueGraphModeArea).
		JustifyMode(common.BigValueJustifyModeAuto).
		Orientation(common.VizOrientationAuto).
		TextMode(common.BigValueTextModeAuto)
}

// seriesPanel is an 8-high time series of w columns: lines, 10% fill, no
// points, every series in a list legend and in a shared tooltip.
func seriesPanel(id uint32, title, description, unit string, w uint32, targets ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().
		Id(id).
		Title(title).
		Datasource(promDatasource()).
		Height(8).
		Span(w).
		Unit(unit).
		DrawStyle(common.GraphDrawStyleLine).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		SpanNulls(common.BoolOrFloat64{Bool: ptr(false)}).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNone).Group("A")).
		ThresholdsStyle(thresholdsStyle(common.GraphThresholdsStyleModeOff)).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdPaletteClassic)).
		Thresholds(steps("green")).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true).
			Calcs([]string{})).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
	if description != "" {
		p.Description(description)
	}
	for _, t := range targets {
		p.WithTarget(t)
	}
	return p
}

// stacked stacks a panel's series, more opaque: parts of one whole.
func stacked(p *timeseries.PanelBuilder) *timeseries.PanelBuilder {
	return p.FillOpacity(30).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal).Group("A"))
}

func rangeQuery(ref, expr, legend string) *prometheus.DataqueryBuilder {
	return query(ref, expr).Range().LegendFormat(legend)
}

func instantQuery(ref, expr string) *prometheus.DataqueryBuilder {
	return query(ref, expr).Instant().LegendFormat("__auto")
}

func query(ref, expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(promDatasource()).
		RefId(ref).
		Expr(expr).
		Format(prometheus.PromQueryFormatTimeSeries).
		EditorMode(prometheus.QueryEditorModeCode)
}

func promDatasource() common.DataSourceRef {
	return common.DataSourceRef{Type: ptr("prometheus"), Uid: ptr("${datasource}")}
}

// steps makes absolute thresholds: the base colour, then each step's from
// its value on: steps("red", from(1, "green")) is red below 1, green from 1.
func steps(base string, more ...dashboard.Threshold) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps(append([]dashboard.Threshold{{Color: base}}, more...))
}

func from(value float64, color string) dashboard.Threshold {
	return dashboard.Threshold{Value: &value, Color: color}
}

func thresholdsStyle(mode common.GraphThresholdsStyleMode) *common.GraphThresholdsStyleConfigBuilder {
	return common.NewGraphThresholdsStyleConfigBuilder().Mode(mode)
}

func stringOrMap(s string) dashboard.StringOrMap { return dashboard.StringOrMap{String: &s} }

func oneString(s string) dashboard.StringOrArrayOfString {
	return dashboard.StringOrArrayOfString{String: &s}
}

func manyStrings(s ...string) dashboard.StringOrArrayOfString {
	return dashboard.StringOrArrayOfString{ArrayOfString: s}
}

func ptr[T any](v T) *T { return &v }
