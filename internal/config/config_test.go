package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// allFlags is every flag of the operator interface, with its default as help
// shows it.
var allFlags = []struct{ name, def string }{
	{"http-addr", ":8080"},
	{"admin-addr", ":9090"},
	{"dev", "false"},
	{"version", "false"},
	{"log-level", "info"},
	{"log-format", `""`},
	{"log-sampling-initial", "100"},
	{"log-sampling-thereafter", "100"},
	{"auth-tokens-file", `""`},
	{"auth-reload-interval", "5s"},
	{"auth-jwt-issuers-file", `""`},
	{"auth-jwt-leeway", "30s"},
	{"auth-jwt-refresh-interval", "15m0s"},
	{"auth-jwt-refresh-min-interval", "10s"},
	{"auth-jwt-timeout", "5s"},
	{"auth-jwt-cache-size", "10000"},
	{"rate-limit-default", `""`},
	{"rate-limit-timeout", "100ms"},
	{"rate-limit-redis-addr", `""`},
	{"redis-addr", `""`},
	{"redis-master-name", `""`},
	{"redis-cluster", "false"},
	{"redis-username", `""`},
	{"redis-password-file", `""`},
	{"redis-sentinel-username", `""`},
	{"redis-sentinel-password-file", `""`},
	{"redis-db", "0"},
	{"redis-key-prefix", "plantstore:"},
	{"redis-tls", "false"},
	{"redis-tls-ca-file", `""`},
	{"redis-tls-server-name", `""`},
	{"redis-pool-size", "0"},
	{"redis-batch", "true"},
	{"redis-max-retries", "2"},
	{"redis-dial-timeout", "1s"},
	{"redis-read-timeout", "1s"},
	{"redis-write-timeout", "1s"},
	{"redis-min-replica-acks", "0"},
	{"redis-replica-ack-timeout", "500ms"},
	{"store-timeout", "1s"},
	{"docs-page", "true"},
	{"ready-timeout", "500ms"},
	{"http-read-header-timeout", "5s"},
	{"http-read-timeout", "15s"},
	{"http-write-timeout", "15s"},
	{"http-idle-timeout", "2m0s"},
	{"http-max-header-bytes", "16384"},
	{"shutdown-delay", "0s"},
	{"shutdown-timeout", "20s"},
	{"pprof", "false"},
	{"gc-heap-floor-mib", "12"},
	{"webhook-subscribers-file", `""`},
	{"webhook-reload-interval", "5s"},
	{"webhook-allow-cidrs", `""`},
	{"webhook-timeout", "5s"},
	{"webhook-max-attempts", "15"},
	{"webhook-backoff-base", "1s"},
	{"webhook-backoff-max", "1h0m0s"},
	{"webhook-lease", "1m0s"},
	{"webhook-poll-interval", "250ms"},
	{"webhook-concurrency", "32"},
	{"webhook-subscriber-concurrency", "8"},
	{"webhook-stats-interval", "5s"},
}

func envName(flagName string) string {
	return "PLANTSTORE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// cleanEnv removes every PLANTSTORE_* variable for the test, so that the
// environment the tests run in cannot change their outcome.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PLANTSTORE_") {
			t.Setenv(k, "") // restores the value after the test
			os.Unsetenv(k)
		}
	}
	// Make sure the secrets are unset even if absent above: t.Setenv then
	// Unsetenv, so LookupEnv reports them missing.
	for _, k := range []string{EnvRedisPassword, EnvRedisSentinelPassword} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func parse(t *testing.T, args ...string) (Config, string, error) {
	t.Helper()
	var out bytes.Buffer
	c, err := Parse(args, &out)
	return c, out.String(), err
}

func mustParse(t *testing.T, args ...string) Config {
	t.Helper()
	c, out, err := parse(t, args...)
	if err != nil {
		t.Fatalf("Parse(%q): %v\noutput:\n%s", args, err, out)
	}
	return c
}

func TestDefaults(t *testing.T) {
	cleanEnv(t)
	c, out, err := parse(t, "--dev")
	if err != nil {
		t.Fatalf("Parse(--dev): %v", err)
	}
	if out != "" {
		t.Errorf("Parse wrote %q on success, want nothing", out)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Dev", c.Dev, true},
		{"Version", c.Version, false},
		{"Server.HTTPAddr", c.Server.HTTPAddr, ":8080"},
		{"Server.AdminAddr", c.Server.AdminAddr, ":9090"},
		{"Redis.Addrs", len(c.Redis.Addrs), 0},
		{"Auth.TokensFile", c.Auth.TokensFile, ""},
		{"Auth.ReloadInterval", c.Auth.ReloadInterval, 5 * time.Second},
		{"Auth.Dev", c.Auth.Dev, true},
		{"RateLimit.Default (none: 1.0.0 answers)", c.RateLimit.Default.IsZero(), true},
		{"RateLimit.Timeout", c.RateLimit.Timeout, 100 * time.Millisecond},
		{"RateLimit.RedisAddrs", len(c.RateLimit.RedisAddrs), 0},
		{"Log.Level", c.Log.Level, "info"},
		{"Log.Format", c.Log.Format, "console"},
		{"Redis.MasterName", c.Redis.MasterName, ""},
		{"Redis.Cluster", c.Redis.Cluster, false},
		{"Redis.Username", c.Redis.Username, ""},
		{"Redis.Password", c.Redis.Password, ""},
		{"Redis.SentinelUsername", c.Redis.SentinelUsername, ""},
		{"Redis.SentinelPassword", c.Redis.SentinelPassword, ""},
		{"Redis.DB", c.Redis.DB, 0},
		{"Redis.KeyPrefix", c.Redis.KeyPrefix, "plantstore:"},
		{"Redis.TLS", c.Redis.TLS, false},
		{"Redis.TLSCAFile", c.Redis.TLSCAFile, ""},
		{"Redis.TLSServerName", c.Redis.TLSServerName, ""},
		{"Redis.PoolSize", c.Redis.PoolSize, 0},
		{"Redis.Batch", c.Redis.Batch, true},
		{"Redis.MaxRetries", c.Redis.MaxRetries, 2},
		{"Redis.MinReplicaAcks", c.Redis.MinReplicaAcks, 0},
		{"Redis.ReplicaAckTimeout", c.Redis.ReplicaAckTimeout, 500 * time.Millisecond},
		{"Redis.DialTimeout", c.Redis.DialTimeout, time.Second},
		{"Redis.ReadTimeout", c.Redis.ReadTimeout, time.Second},
		{"Redis.WriteTimeout", c.Redis.WriteTimeout, time.Second},
		{"API.StoreTimeout", c.API.StoreTimeout, time.Second},
		{"API.DocsPage", c.API.DocsPage, true},
		{"Auth.DocsPath (the banner links the page)", c.Auth.DocsPath, "/docs"},
		{"Server.ReadyTimeout", c.Server.ReadyTimeout, 500 * time.Millisecond},
		{"Server.HTTP.ReadHeaderTimeout", c.Server.HTTP.ReadHeaderTimeout, 5 * time.Second},
		{"Server.HTTP.ReadTimeout", c.Server.HTTP.ReadTimeout, 15 * time.Second},
		{"Server.HTTP.WriteTimeout", c.Server.HTTP.WriteTimeout, 15 * time.Second},
		{"Server.HTTP.IdleTimeout", c.Server.HTTP.IdleTimeout, 120 * time.Second},
		{"Server.HTTP.MaxHeaderBytes", c.Server.HTTP.MaxHeaderBytes, 16 << 10},
		{"Server.ShutdownDelay", c.Server.ShutdownDelay, time.Duration(0)},
		{"Server.ShutdownTimeout", c.Server.ShutdownTimeout, 20 * time.Second},
		{"Server.Pprof", c.Server.Pprof, false},
		{"GC.HeapFloorMiB", c.GC.HeapFloorMiB, 12},
		{"JWT.IssuersFile (no JWT accepted)", c.JWT.IssuersFile, ""},
		{"JWT.Issuers", len(c.JWT.Issuers), 0},
		{"JWT.Leeway", c.JWT.Leeway, 30 * time.Second},
		{"JWT.RefreshInterval", c.JWT.RefreshInterval, 15 * time.Minute},
		{"JWT.MinRefreshInterval", c.JWT.MinRefreshInterval, 10 * time.Second},
		{"JWT.Timeout", c.JWT.Timeout, 5 * time.Second},
		{"JWT.CacheSize", c.JWT.CacheSize, 10000},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("the defaults with --dev do not validate: %v", err)
	}

	// Without --dev, logs are JSON and no dev token is made.
	c = mustParse(t, "--auth-tokens-file=/t")
	if c.Log.Format != "json" || c.Dev || c.Auth.Dev {
		t.Errorf("production defaults: Log.Format %q, Dev %v, Auth.Dev %v", c.Log.Format, c.Dev, c.Auth.Dev)
	}
}

func TestLogFormat(t *testing.T) {
	cleanEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--dev"}, "console"},
		{[]string{"--auth-tokens-file=/t"}, "json"},
		{[]string{"--dev", "--log-format=json"}, "json"},
		{[]string{"--auth-tokens-file=/t", "--log-format=console"}, "console"},
	}
	for _, tt := range tests {
		if c := mustParse(t, tt.args...); c.Log.Format != tt.want {
			t.Errorf("Parse(%q): Log.Format = %q, want %q", tt.args, c.Log.Format, tt.want)
		}
	}
	_, _, err := parse(t, "--dev", "--log-format=xml")
	if err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("--log-format=xml: error %v, want one naming --log-format", err)
	}
}

func TestNoTokensRefusesToStart(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{nil, {}, {"--http-addr", ":1234"}, {"--dev=false"}} {
		_, _, err := parse(t, args...)
		if err == nil {
			t.Fatalf("Parse(%q) succeeded without tokens and without --dev", args)
		}
		for _, want := range []string{"--auth-tokens-file", "PLANTSTORE_AUTH_TOKENS_FILE", "--dev"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Parse(%q) error %q does not mention %s", args, err, want)
			}
		}
	}
	c := mustParse(t, "--auth-tokens-file", "/etc/plantstore/tokens")
	if c.Auth.TokensFile != "/etc/plantstore/tokens" || c.Dev || c.Auth.Dev {
		t.Errorf("tokens file only: %+v", c.Auth)
	}
}

func TestEnvFallback(t *testing.T) {
	cleanEnv(t)
	t.Setenv("PLANTSTORE_HTTP_ADDR", "127.0.0.1:8181")
	t.Setenv("PLANTSTORE_ADMIN_ADDR", ":9191")
	t.Setenv("PLANTSTORE_REDIS_ADDR", "redis-0:6379, redis-1:6379 ,,redis-2:6379")
	t.Setenv("PLANTSTORE_AUTH_TOKENS_FILE", "/var/run/secrets/plantstore/tokens")
	t.Setenv("PLANTSTORE_STORE_TIMEOUT", "250ms")
	t.Setenv("PLANTSTORE_LOG_LEVEL", "debug")
	t.Setenv("PLANTSTORE_REDIS_CLUSTER", "true")
	t.Setenv("PLANTSTORE_HTTP_MAX_HEADER_BYTES", "4096")
	t.Setenv("PLANTSTORE_REDIS_KEY_PREFIX", "ps:")

	c := mustParse(t)
	if c.Server.HTTPAddr != "127.0.0.1:8181" {
		t.Errorf("HTTPAddr = %q", c.Server.HTTPAddr)
	}
	if c.Server.AdminAddr != ":9191" {
		t.Errorf("AdminAddr = %q", c.Server.AdminAddr)
	}
	if want := []string{"redis-0:6379", "redis-1:6379", "redis-2:6379"}; !reflect.DeepEqual(c.Redis.Addrs, want) {
		t.Errorf("Redis.Addrs = %q, want %q", c.Redis.Addrs, want)
	}
	if c.Auth.TokensFile != "/var/run/secrets/plantstore/tokens" {
		t.Errorf("Auth.TokensFile = %q", c.Auth.TokensFile)
	}
	if c.API.StoreTimeout != 250*time.Millisecond {
		t.Errorf("API.StoreTimeout = %v", c.API.StoreTimeout)
	}
	if c.Log.Level != "debug" || !c.Redis.Cluster || c.Server.HTTP.MaxHeaderBytes != 4096 || c.Redis.KeyPrefix != "ps:" {
		t.Errorf("log %q, cluster %v, max header %d, prefix %q", c.Log.Level, c.Redis.Cluster, c.Server.HTTP.MaxHeaderBytes, c.Redis.KeyPrefix)
	}
}

// --docs-page=false turns the page off and the development banner's link
// to it with it.
func TestDocsPageOff(t *testing.T) {
	cleanEnv(t)
	c := mustParse(t, "--dev", "--docs-page=false")
	if c.API.DocsPage || c.Auth.DocsPath != "" {
		t.Errorf("--docs-page=false: API.DocsPage %v, Auth.DocsPath %q; want false and none", c.API.DocsPage, c.Auth.DocsPath)
	}
}

func TestEnvDev(t *testing.T) {
	cleanEnv(t)
	t.Setenv("PLANTSTORE_DEV", "true")
	c := mustParse(t)
	if !c.Dev || !c.Auth.Dev || c.Log.Format != "console" {
		t.Errorf("PLANTSTORE_DEV=true: Dev %v, Auth.Dev %v, Log.Format %q", c.Dev, c.Auth.Dev, c.Log.Format)
	}
}

// flagCases sets each flag (but the two secret files, see TestSecrets) and
// reads it back from the Config. value and other are two valid values.
var flagCases = []struct {
	flag, value, other string
	get                func(Config) string
}{
	{"http-addr", ":1", ":11", func(c Config) string { return c.Server.HTTPAddr }},
	{"admin-addr", ":2", ":22", func(c Config) string { return c.Server.AdminAddr }},
	{"dev", "true", "false", func(c Config) string { return strconv.FormatBool(c.Dev) }},
	{"log-level", "warn", "error", func(c Config) string { return c.Log.Level }},
	{"log-format", "console", "json", func(c Config) string { return c.Log.Format }},
	{"log-sampling-initial", "0", "5", func(c Config) string { return strconv.Itoa(c.Log.SamplingInitial) }},
	{"log-sampling-thereafter", "3", "9", func(c Config) string { return strconv.Itoa(c.Log.SamplingThereafter) }},
	{"auth-tokens-file", "/t", "/t2", func(c Config) string { return c.Auth.TokensFile }},
	{"auth-reload-interval", "7s", "17s", func(c Config) string { return c.Auth.ReloadInterval.String() }},
	{"auth-jwt-issuers-file", "/i", "/i2", func(c Config) string { return c.JWT.IssuersFile }},
	{"auth-jwt-leeway", "10s", "20s", func(c Config) string { return c.JWT.Leeway.String() }},
	{"auth-jwt-refresh-interval", "5m0s", "6m0s", func(c Config) string { return c.JWT.RefreshInterval.String() }},
	{"auth-jwt-refresh-min-interval", "1s", "2s", func(c Config) string { return c.JWT.MinRefreshInterval.String() }},
	{"auth-jwt-timeout", "1s", "2s", func(c Config) string { return c.JWT.Timeout.String() }},
	{"auth-jwt-cache-size", "5", "6", func(c Config) string { return strconv.Itoa(c.JWT.CacheSize) }},
	{"redis-addr", "r:1", "r:2", func(c Config) string { return strings.Join(c.Redis.Addrs, ",") }},
	{"rate-limit-default", "50/s", "7/h", func(c Config) string {
		return strconv.Itoa(c.RateLimit.Default.Count) + map[time.Duration]string{time.Second: "/s", time.Hour: "/h"}[c.RateLimit.Default.Period]
	}},
	{"rate-limit-timeout", "30ms", "40ms", func(c Config) string { return c.RateLimit.Timeout.String() }},
	{"rate-limit-redis-addr", "l:1", "l:2", func(c Config) string { return strings.Join(c.RateLimit.RedisAddrs, ",") }},
	{"redis-master-name", "m", "m2", func(c Config) string { return c.Redis.MasterName }},
	{"redis-cluster", "true", "false", func(c Config) string { return strconv.FormatBool(c.Redis.Cluster) }},
	{"redis-username", "u", "u2", func(c Config) string { return c.Redis.Username }},
	{"redis-sentinel-username", "su", "su2", func(c Config) string { return c.Redis.SentinelUsername }},
	{"redis-db", "3", "4", func(c Config) string { return strconv.Itoa(c.Redis.DB) }},
	{"redis-key-prefix", "k:", "k2:", func(c Config) string { return c.Redis.KeyPrefix }},
	{"redis-tls", "true", "false", func(c Config) string { return strconv.FormatBool(c.Redis.TLS) }},
	{"redis-tls-ca-file", "/ca", "/ca2", func(c Config) string { return c.Redis.TLSCAFile }},
	{"redis-tls-server-name", "sn", "sn2", func(c Config) string { return c.Redis.TLSServerName }},
	{"redis-pool-size", "4", "5", func(c Config) string { return strconv.Itoa(c.Redis.PoolSize) }},
	{"redis-batch", "false", "true", func(c Config) string { return strconv.FormatBool(c.Redis.Batch) }},
	{"redis-max-retries", "-1", "7", func(c Config) string { return strconv.Itoa(c.Redis.MaxRetries) }},
	{"redis-dial-timeout", "2s", "2.5s", func(c Config) string { return c.Redis.DialTimeout.String() }},
	{"redis-read-timeout", "3s", "3.5s", func(c Config) string { return c.Redis.ReadTimeout.String() }},
	{"redis-write-timeout", "4s", "4.5s", func(c Config) string { return c.Redis.WriteTimeout.String() }},
	{"redis-min-replica-acks", "1", "2", func(c Config) string { return strconv.Itoa(c.Redis.MinReplicaAcks) }},
	{"redis-replica-ack-timeout", "250ms", "300ms", func(c Config) string { return c.Redis.ReplicaAckTimeout.String() }},
	{"store-timeout", "5s", "5.5s", func(c Config) string { return c.API.StoreTimeout.String() }},
	{"docs-page", "false", "true", func(c Config) string { return strconv.FormatBool(c.API.DocsPage) }},
	{"ready-timeout", "6s", "6.5s", func(c Config) string { return c.Server.ReadyTimeout.String() }},
	{"http-read-header-timeout", "8s", "8.5s", func(c Config) string { return c.Server.HTTP.ReadHeaderTimeout.String() }},
	{"http-read-timeout", "9s", "9.5s", func(c Config) string { return c.Server.HTTP.ReadTimeout.String() }},
	{"http-write-timeout", "10s", "10.5s", func(c Config) string { return c.Server.HTTP.WriteTimeout.String() }},
	{"http-idle-timeout", "11s", "11.5s", func(c Config) string { return c.Server.HTTP.IdleTimeout.String() }},
	{"http-max-header-bytes", "2048", "4096", func(c Config) string { return strconv.Itoa(c.Server.HTTP.MaxHeaderBytes) }},
	{"shutdown-delay", "12s", "12.5s", func(c Config) string { return c.Server.ShutdownDelay.String() }},
	{"shutdown-timeout", "13s", "13.5s", func(c Config) string { return c.Server.ShutdownTimeout.String() }},
	{"pprof", "true", "false", func(c Config) string { return strconv.FormatBool(c.Server.Pprof) }},
	{"gc-heap-floor-mib", "0", "32", func(c Config) string { return strconv.Itoa(c.GC.HeapFloorMiB) }},
	{"webhook-subscribers-file", "/w", "/w2", func(c Config) string { return c.Webhook.SubscribersFile }},
	{"webhook-reload-interval", "3s", "4s", func(c Config) string { return c.Webhook.ReloadInterval.String() }},
	{"webhook-allow-cidrs", "10.0.0.0/8", "127.0.0.0/8", func(c Config) string {
		if len(c.Webhook.Allow) == 0 {
			return ""
		}
		return c.Webhook.Allow[0].String()
	}},
	{"webhook-timeout", "3s", "4s", func(c Config) string { return c.Webhook.Timeout.String() }},
	{"webhook-max-attempts", "3", "4", func(c Config) string { return strconv.Itoa(c.Webhook.Policy.MaxAttempts) }},
	{"webhook-backoff-base", "2s", "3s", func(c Config) string { return c.Webhook.Policy.BackoffBase.String() }},
	{"webhook-backoff-max", "2h0m0s", "3h0m0s", func(c Config) string { return c.Webhook.Policy.BackoffMax.String() }},
	{"webhook-lease", "1m30s", "2m0s", func(c Config) string { return c.Webhook.Policy.Lease.String() }},
	{"webhook-poll-interval", "100ms", "200ms", func(c Config) string { return c.Webhook.Policy.PollInterval.String() }},
	{"webhook-concurrency", "5", "6", func(c Config) string { return strconv.Itoa(c.Webhook.Policy.InFlight) }},
	{"webhook-subscriber-concurrency", "2", "3", func(c Config) string { return strconv.Itoa(c.Webhook.Policy.PerSubscriber) }},
	{"webhook-stats-interval", "1s", "2s", func(c Config) string { return c.Webhook.StatsInterval.String() }},
}

// TestEveryFlagHasEnv sets each flag through its PLANTSTORE_* variable
// alone, then both ways to check that the command line wins. Parsing runs
// with --version, which stops before validation, so that one option's value
// cannot be refused for want of another. --version itself is a command
// line only (see TestVersionNotFromEnv); the secret files are in TestSecrets.
func TestEveryFlagHasEnv(t *testing.T) {
	covered := map[string]bool{"redis-password-file": true, "redis-sentinel-password-file": true, "version": true}
	for _, fc := range flagCases {
		covered[fc.flag] = true
	}
	for _, f := range allFlags {
		if !covered[f.name] {
			t.Errorf("--%s has no case in flagCases", f.name)
		}
	}
	for _, fc := range flagCases {
		t.Run(fc.flag, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv(envName(fc.flag), fc.value)
			args := []string{"--version"}
			if fc.flag == "redis-addr" || fc.flag == "rate-limit-redis-addr" || fc.flag == "rate-limit-default" || fc.flag == "webhook-allow-cidrs" { // read only past --version
				args = []string{"--dev"}
			}
			c, out, err := parse(t, args...)
			if err != nil {
				t.Fatalf("%s=%s: %v\n%s", envName(fc.flag), fc.value, err, out)
			}
			if got := fc.get(c); got != fc.value {
				t.Errorf("%s=%s: --%s = %q, want %q", envName(fc.flag), fc.value, fc.flag, got, fc.value)
			}

			// The flag beats the environment.
			args = append(args, "--"+fc.flag+"="+fc.other)
			c, out, err = parse(t, args...)
			if err != nil {
				t.Fatalf("%s=%s %q: %v\n%s", envName(fc.flag), fc.value, args, err, out)
			}
			if got := fc.get(c); got != fc.other {
				t.Errorf("%s=%s with --%s=%s: got %q, want the flag's %q", envName(fc.flag), fc.value, fc.flag, fc.other, got, fc.other)
			}
		})
	}
}

func TestFlagBeatsEnv(t *testing.T) {
	cleanEnv(t)
	t.Setenv("PLANTSTORE_HTTP_ADDR", ":7000")
	t.Setenv("PLANTSTORE_REDIS_ADDR", "env-a:6379,env-b:6379")
	t.Setenv("PLANTSTORE_AUTH_TOKENS_FILE", "/env/tokens")
	t.Setenv("PLANTSTORE_STORE_TIMEOUT", "3s")
	c := mustParse(t, "--http-addr", ":7001", "--redis-addr=flag:6379", "--auth-tokens-file", "/flag/tokens", "--store-timeout=2s")
	if c.Server.HTTPAddr != ":7001" || c.Auth.TokensFile != "/flag/tokens" || c.API.StoreTimeout != 2*time.Second {
		t.Errorf("flags did not win: http %q, tokens %q, store timeout %v", c.Server.HTTPAddr, c.Auth.TokensFile, c.API.StoreTimeout)
	}
	if want := []string{"flag:6379"}; !reflect.DeepEqual(c.Redis.Addrs, want) {
		t.Errorf("Redis.Addrs = %q, want %q (the flag's, not merged with the environment's)", c.Redis.Addrs, want)
	}
}

func TestBadEnvValue(t *testing.T) {
	cleanEnv(t)
	t.Setenv("PLANTSTORE_STORE_TIMEOUT", "soon")
	_, _, err := parse(t, "--dev")
	if err == nil || !strings.Contains(err.Error(), "PLANTSTORE_STORE_TIMEOUT") {
		t.Errorf("bad duration in the environment: error %v, want one naming PLANTSTORE_STORE_TIMEOUT", err)
	}
}

func TestRedisAddrs(t *testing.T) {
	cleanEnv(t)
	tests := []struct {
		arg  string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"redis:6379", []string{"redis:6379"}},
		{"a:1,b:2,c:3", []string{"a:1", "b:2", "c:3"}},
		{" a:1 , b:2 ,", []string{"a:1", "b:2"}},
		{"[::1]:6379,10.0.0.1:6379", []string{"[::1]:6379", "10.0.0.1:6379"}},
	}
	for _, tt := range tests {
		c := mustParse(t, "--dev", "--redis-addr", tt.arg)
		if !reflect.DeepEqual(c.Redis.Addrs, tt.want) {
			t.Errorf("--redis-addr %q: Addrs = %q, want %q", tt.arg, c.Redis.Addrs, tt.want)
		}
	}
}

func TestValidation(t *testing.T) {
	type vcase struct {
		name string
		args []string
		want []string // substrings of the error; nil: must succeed
	}
	var tests []vcase
	for _, f := range []string{
		"auth-reload-interval", "rate-limit-timeout", "store-timeout", "ready-timeout",
		"redis-dial-timeout", "redis-read-timeout", "redis-write-timeout",
		"http-read-header-timeout", "http-read-timeout", "http-write-timeout", "http-idle-timeout",
		"shutdown-timeout",
	} {
		tests = append(tests,
			vcase{f + " zero", []string{"--" + f + "=0"}, []string{"--" + f + " must be positive"}},
			vcase{f + " negative", []string{"--" + f + "=-1s"}, []string{"--" + f + " must be positive", "-1s"}},
			vcase{f + " one nanosecond", []string{"--" + f + "=1ns"}, nil},
		)
	}
	tests = append(tests, []vcase{
		{"shutdown-delay negative", []string{"--shutdown-delay=-1ms"}, []string{"--shutdown-delay must not be negative"}},
		{"shutdown-delay zero", []string{"--shutdown-delay=0"}, nil},
		{"shutdown-delay positive", []string{"--shutdown-delay=5s"}, nil},
		{"http-max-header-bytes too small", []string{"--http-max-header-bytes=1023"}, []string{"--http-max-header-bytes", "1024", "1023"}},
		{"http-max-header-bytes zero", []string{"--http-max-header-bytes=0"}, []string{"--http-max-header-bytes"}},
		{"http-max-header-bytes negative", []string{"--http-max-header-bytes=-5"}, []string{"--http-max-header-bytes"}},
		{"http-max-header-bytes minimum", []string{"--http-max-header-bytes=1024"}, nil},
		{"gc-heap-floor-mib negative", []string{"--gc-heap-floor-mib=-1"}, []string{"--gc-heap-floor-mib must not be negative", "-1"}},
		{"gc-heap-floor-mib zero", []string{"--gc-heap-floor-mib=0"}, nil},
		{"http-addr empty", []string{"--http-addr="}, []string{"--http-addr must not be empty"}},
		{"admin-addr empty", []string{"--admin-addr="}, []string{"--admin-addr must not be empty"}},
		{"redis-pool-size negative", []string{"--redis-pool-size=-1"}, []string{"--redis-pool-size"}},
		{"redis-max-retries -2", []string{"--redis-max-retries=-2"}, []string{"--redis-max-retries"}},
		{"redis-max-retries -1", []string{"--redis-max-retries=-1"}, nil},
		{"redis-db negative", []string{"--redis-addr=r:1", "--redis-db=-1"}, []string{"--redis-db must not be negative"}},
		{"redis-db on a single node", []string{"--redis-addr=r:1", "--redis-db=2"}, nil},
		{"redis-db with --redis-cluster", []string{"--redis-addr=r:1", "--redis-cluster", "--redis-db=2"}, []string{"--redis-db", "Cluster"}},
		{"redis-db with several addresses", []string{"--redis-addr=r:1,r:2", "--redis-db=2"}, []string{"--redis-db", "Cluster"}},
		{"redis-db 0 with cluster", []string{"--redis-addr=r:1,r:2", "--redis-db=0"}, nil},
		{"redis-db with Sentinel", []string{"--redis-addr=s:1,s:2,s:3", "--redis-master-name=mymaster", "--redis-db=2"}, nil},
		{"master name with cluster", []string{"--redis-addr=r:1", "--redis-master-name=m", "--redis-cluster"}, []string{"--redis-master-name", "--redis-cluster"}},
		{"master name without address", []string{"--redis-master-name=m"}, []string{"--redis-master-name", "--redis-addr"}},
		{"cluster without address", []string{"--redis-cluster"}, []string{"--redis-cluster", "--redis-addr"}},
		{"tls-ca-file without tls", []string{"--redis-addr=r:1", "--redis-tls-ca-file=/ca.pem"}, []string{"--redis-tls-ca-file", "--redis-tls"}},
		{"tls-server-name without tls", []string{"--redis-addr=r:1", "--redis-tls-server-name=redis.internal"}, []string{"--redis-tls-server-name", "--redis-tls"}},
		{"tls options with tls", []string{"--redis-addr=r:1", "--redis-tls", "--redis-tls-ca-file=/ca.pem", "--redis-tls-server-name=redis.internal"}, nil},
		{"replica acks negative", []string{"--redis-addr=r:1", "--redis-min-replica-acks=-1"}, []string{"--redis-min-replica-acks must not be negative"}},
		{"replica acks without redis", []string{"--redis-min-replica-acks=1"}, []string{"--redis-min-replica-acks needs --redis-addr"}},
		{"replica acks with defaults", []string{"--redis-addr=r:1", "--redis-min-replica-acks=1"}, nil},
		{"replica acks in a cluster", []string{"--redis-addr=r:1,r:2,r:3", "--redis-min-replica-acks=1"}, nil},
		{"replica ack timeout zero", []string{"--redis-addr=r:1", "--redis-min-replica-acks=1", "--redis-replica-ack-timeout=0"}, []string{"--redis-replica-ack-timeout must be positive"}},
		{"replica ack timeout at store timeout", []string{"--redis-addr=r:1", "--redis-min-replica-acks=2", "--redis-replica-ack-timeout=1s"}, []string{"--redis-replica-ack-timeout (1s) must be below --store-timeout (1s)"}},
		{"replica ack timeout over read timeout", []string{"--redis-addr=r:1", "--redis-min-replica-acks=1", "--store-timeout=5s", "--redis-replica-ack-timeout=2s"}, []string{"--redis-replica-ack-timeout", "--redis-read-timeout (1s)"}},
		{"replica ack timeout unchecked when off", []string{"--redis-addr=r:1", "--redis-replica-ack-timeout=0"}, nil},
		{"bad log level", []string{"--log-level=verbose"}, []string{"--log-level", `"verbose"`}},
		{"empty log level", []string{"--log-level="}, []string{"--log-level"}},
		{"log level debug", []string{"--log-level=debug"}, nil},
		{"log level error", []string{"--log-level=error"}, nil},
		{"rate-limit-default per second", []string{"--rate-limit-default=50/s"}, nil},
		{"rate-limit-default per hour", []string{"--rate-limit-default=1000/h"}, nil},
		{"rate-limit-default zero", []string{"--rate-limit-default=0/s"}, []string{"--rate-limit-default must be <n>/s"}},
		{"rate-limit-default negative", []string{"--rate-limit-default=-1/m"}, []string{"--rate-limit-default"}},
		{"rate-limit-default without unit", []string{"--rate-limit-default=50"}, []string{"--rate-limit-default"}},
		{"rate-limit-default garbage", []string{"--rate-limit-default=fast"}, []string{"--rate-limit-default"}},
		{"several errors at once", []string{"--store-timeout=0", "--log-level=loud"}, []string{"--store-timeout", "--log-level"}},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cleanEnv(t)
			args := append([]string{"--dev"}, tt.args...)
			c, out, err := parse(t, args...)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Parse(%q): %v\n%s", args, err, out)
				}
				if err := c.Validate(); err != nil {
					t.Errorf("Validate of a parsed config: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want an error", args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestPositionalArgument(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{
		{"--dev", "serve"},
		{"serve", "--dev"},
		{"--dev", "--", "extra"},
	} {
		_, _, err := parse(t, args...)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want an error for the positional argument", args)
			continue
		}
		if !strings.Contains(err.Error(), "unexpected argument") {
			t.Errorf("Parse(%q) error %q does not say the argument is unexpected", args, err)
		}
	}
}

func TestUnknownFlag(t *testing.T) {
	cleanEnv(t)
	for _, name := range []string{"nope", "redis-password", "redis-sentinel-password"} {
		_, out, err := parse(t, "--dev", "--"+name+"=hunter2")
		if err == nil {
			t.Errorf("--%s was accepted, want an error", name)
			continue
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("--%s: error %q does not name the flag", name, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("--%s: error %q repeats the value", name, err)
		}
		if !strings.Contains(out, "Usage: plantstore") {
			t.Errorf("--%s: usage not written to the given writer: %q", name, out)
		}
	}
}

func TestHelp(t *testing.T) {
	cleanEnv(t)
	t.Setenv(EnvRedisPassword, "env-secret-value")
	for _, arg := range []string{"--help", "-help", "-h", "--h"} {
		t.Run(arg, func(t *testing.T) {
			// No tokens and no --dev: help still works.
			_, out, err := parse(t, arg)
			if !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("Parse(%s) error = %v, want flag.ErrHelp", arg, err)
			}
			if !strings.HasPrefix(out, "Usage: plantstore") {
				t.Errorf("help does not start with the usage line:\n%s", out)
			}
			for _, f := range allFlags {
				want := "  --" + f.name + " (" + envName(f.name) + ", default " + f.def + ")\n"
				if f.name == "version" {
					// A command, read from the command line only.
					want = "  --version (command line only, default false)\n"
					if strings.Contains(out, envName("version")) {
						t.Errorf("help offers %s, which is ignored", envName("version"))
					}
				}
				if !strings.Contains(out, want) {
					t.Errorf("help lacks %q", want)
				}
			}
			if n := strings.Count(out, "\n  --"); n != len(allFlags) {
				t.Errorf("help lists %d flags, want %d", n, len(allFlags))
			}
			for _, want := range []string{EnvRedisPassword, EnvRedisSentinelPassword, "OTEL_"} {
				if !strings.Contains(out, want) {
					t.Errorf("help does not mention %s", want)
				}
			}
			if strings.Contains(out, "--redis-password ") || strings.Contains(out, "--redis-password (") {
				t.Error("help lists a --redis-password flag")
			}
			if strings.Contains(out, "env-secret-value") {
				t.Error("help shows a secret from the environment")
			}
		})
	}
}

func TestHelpWritesOnlyToWriter(t *testing.T) {
	cleanEnv(t)
	// Redirect the process's stdout and stderr to catch any stray output.
	dir := t.TempDir()
	so, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	se, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	savedOut, savedErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = so, se
	var buf bytes.Buffer
	_, perr := Parse([]string{"--help"}, &buf)
	_, perr2 := Parse([]string{"--bogus"}, &buf)
	os.Stdout, os.Stderr = savedOut, savedErr
	so.Close()
	se.Close()
	if !errors.Is(perr, flag.ErrHelp) || perr2 == nil {
		t.Fatalf("errors: %v, %v", perr, perr2)
	}
	for _, name := range []string{"stdout", "stderr"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if len(b) != 0 {
			t.Errorf("Parse wrote %d bytes to %s, want all output in the writer", len(b), name)
		}
	}
	if buf.Len() == 0 {
		t.Error("nothing written to the writer")
	}
}

func TestVersion(t *testing.T) {
	cleanEnv(t)
	// --version needs no tokens and is not held up by other options.
	for _, args := range [][]string{
		{"--version"},
		{"--version", "--store-timeout=0"},
		{"--version", "--redis-password-file=/does/not/exist"},
	} {
		c, out, err := parse(t, args...)
		if err != nil {
			t.Errorf("Parse(%q): %v", args, err)
			continue
		}
		if !c.Version {
			t.Errorf("Parse(%q): Version = false", args)
		}
		if out != "" {
			t.Errorf("Parse(%q) wrote %q", args, out)
		}
	}
	if _, _, err := parse(t, "--version", "extra"); err == nil {
		t.Error("--version with a positional argument succeeded")
	}
	c := mustParse(t, "--dev")
	if c.Version {
		t.Error("Version set without --version")
	}
}

// TestVersionNotFromEnv: --version is a command; a PLANTSTORE_VERSION in a
// pod's environment (say, the image version a chart exports) must neither
// turn the service into a version printer nor stop it from starting.
func TestVersionNotFromEnv(t *testing.T) {
	for _, v := range []string{"true", "1", "1.4.0", "v2026.01.01-abc", "false"} {
		t.Run(v, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv(envName("version"), v)
			c, out, err := parse(t, "--dev")
			if err != nil {
				t.Fatalf("PLANTSTORE_VERSION=%s: Parse(--dev): %v\n%s", v, err, out)
			}
			if c.Version {
				t.Errorf("PLANTSTORE_VERSION=%s set Version", v)
			}
			if !c.Dev || c.Server.HTTPAddr != ":8080" {
				t.Errorf("PLANTSTORE_VERSION=%s: the rest of the configuration was not read: %+v", v, c)
			}
			c, _, err = parse(t, "--version")
			if err != nil || !c.Version {
				t.Errorf("PLANTSTORE_VERSION=%s: --version: Version %v, err %v", v, c.Version, err)
			}
			c, _, err = parse(t, "--version=false", "--dev")
			if err != nil || c.Version {
				t.Errorf("PLANTSTORE_VERSION=%s: --version=false: Version %v, err %v", v, c.Version, err)
			}
		})
	}
}

func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lf := file("lf", "pw-from-file\n")
	crlf := file("crlf", "pw-crlf\r\n")
	many := file("many", "pw-many\n\n\r\n")
	spaces := file("spaces", " pw with spaces \n")
	bare := file("bare", "pw-bare")
	empty := file("empty", "")
	missing := filepath.Join(dir, "missing")

	type secretCase struct {
		name    string
		env     map[string]string
		args    []string
		want    string
		wantErr []string
	}
	for _, kind := range []struct {
		flag, env, fileEnv string
		get                func(Config) string
	}{
		{"--redis-password-file", EnvRedisPassword, "PLANTSTORE_REDIS_PASSWORD_FILE", func(c Config) string { return c.Redis.Password }},
		{"--redis-sentinel-password-file", EnvRedisSentinelPassword, "PLANTSTORE_REDIS_SENTINEL_PASSWORD_FILE", func(c Config) string { return c.Redis.SentinelPassword }},
	} {
		tests := []secretCase{
			{name: "none", want: ""},
			{name: "env", env: map[string]string{kind.env: "pw-from-env"}, want: "pw-from-env"},
			{name: "env keeps whitespace", env: map[string]string{kind.env: " pw env \n"}, want: " pw env \n"},
			{name: "file with LF", args: []string{kind.flag, lf}, want: "pw-from-file"},
			{name: "file with CRLF", args: []string{kind.flag, crlf}, want: "pw-crlf"},
			{name: "file with several newlines", args: []string{kind.flag, many}, want: "pw-many"},
			{name: "file keeps spaces", args: []string{kind.flag, spaces}, want: " pw with spaces "},
			{name: "file without newline", args: []string{kind.flag, bare}, want: "pw-bare"},
			{name: "empty file", args: []string{kind.flag, empty}, want: ""},
			{name: "file through its env var", env: map[string]string{kind.fileEnv: lf}, want: "pw-from-file"},
			{name: "both", env: map[string]string{kind.env: "pw-from-env"}, args: []string{kind.flag, lf},
				wantErr: []string{kind.flag, kind.env}},
			{name: "both, env empty", env: map[string]string{kind.env: ""}, args: []string{kind.flag, lf},
				wantErr: []string{kind.flag, kind.env}},
			{name: "both, file through env", env: map[string]string{kind.env: "pw-from-env", kind.fileEnv: lf},
				wantErr: []string{kind.flag, kind.env}},
			{name: "missing file", args: []string{kind.flag, missing}, wantErr: []string{kind.flag, missing}},
		}
		for _, tt := range tests {
			t.Run(kind.flag+"/"+tt.name, func(t *testing.T) {
				cleanEnv(t)
				for k, v := range tt.env {
					t.Setenv(k, v)
				}
				args := append([]string{"--dev"}, tt.args...)
				c, _, err := parse(t, args...)
				if tt.wantErr != nil {
					if err == nil {
						t.Fatalf("Parse(%q) succeeded, want an error", args)
					}
					for _, w := range tt.wantErr {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("error %q does not mention %s", err, w)
						}
					}
					for _, s := range []string{"pw-from-env", "pw-from-file"} {
						if strings.Contains(err.Error(), s) {
							t.Errorf("error %q leaks the secret", err)
						}
					}
					return
				}
				if err != nil {
					t.Fatalf("Parse(%q): %v", args, err)
				}
				if got := kind.get(c); got != tt.want {
					t.Errorf("password = %q, want %q", got, tt.want)
				}
			})
		}
	}

	t.Run("independent", func(t *testing.T) {
		cleanEnv(t)
		t.Setenv(EnvRedisPassword, "redis-pw")
		c := mustParse(t, "--dev", "--redis-sentinel-password-file", lf)
		if c.Redis.Password != "redis-pw" || c.Redis.SentinelPassword != "pw-from-file" {
			t.Errorf("Password %q, SentinelPassword %q", c.Redis.Password, c.Redis.SentinelPassword)
		}
	})
}

func TestNoPasswordFlag(t *testing.T) {
	cleanEnv(t)
	var out bytes.Buffer
	if _, err := Parse([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, f := range []string{"--redis-password ", "--redis-sentinel-password "} {
		if strings.Contains(out.String(), f) {
			t.Errorf("help lists %s", f)
		}
	}
	if _, _, err := parse(t, "--dev", "--redis-password", "x"); err == nil {
		t.Error("--redis-password was accepted")
	}
}

func TestRateLimitOptions(t *testing.T) {
	cleanEnv(t)
	c := mustParse(t, "--dev", "--rate-limit-default=120/m", "--rate-limit-redis-addr=a:1, b:2")
	if c.RateLimit.Default.Count != 120 || c.RateLimit.Default.Period != time.Minute || c.RateLimit.Default.Burst != 120 {
		t.Errorf("Default = %+v, want 120/m burst 120", c.RateLimit.Default)
	}
	if strings.Join(c.RateLimit.RedisAddrs, ",") != "a:1,b:2" {
		t.Errorf("RedisAddrs = %q", c.RateLimit.RedisAddrs)
	}
}

// TestParseMigrate: migrate-store's --settle, from the command line or
// PLANTSTORE_MIGRATE_SETTLE (the flag wins), never from PLANTSTORE_SETTLE;
// the service itself has no --settle; the command's help lists it.
func TestParseMigrate(t *testing.T) {
	migrate := func(args ...string) (Migrate, string, error) {
		t.Helper()
		var out bytes.Buffer
		m, err := ParseMigrate(args, &out)
		return m, out.String(), err
	}
	cases := []struct {
		env  map[string]string
		args []string
		want time.Duration
	}{
		{nil, nil, 0},
		{nil, []string{"--settle", "35s"}, 35 * time.Second},
		{nil, []string{"--settle=1m30s", "--redis-addr", "r:6379"}, 90 * time.Second},
		{map[string]string{EnvMigrateSettle: "10s"}, nil, 10 * time.Second},
		{map[string]string{EnvMigrateSettle: "10s"}, []string{"--settle", "0s"}, 0},
		{map[string]string{"PLANTSTORE_SETTLE": "10s"}, nil, 0},
		{map[string]string{"PLANTSTORE_SETTLE": "not a duration"}, []string{"--settle", "2s"}, 2 * time.Second},
	}
	for _, tc := range cases {
		cleanEnv(t)
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		m, out, err := migrate(tc.args...)
		if err != nil {
			t.Fatalf("env %v, args %q: %v\n%s", tc.env, tc.args, err, out)
		}
		if m.Migration.Settle != tc.want {
			t.Errorf("env %v, args %q: Settle = %v, want %v", tc.env, tc.args, m.Migration.Settle, tc.want)
		}
		if m.Dev || m.Auth.Dev {
			t.Errorf("env %v, args %q: migrate-store runs with --dev on", tc.env, tc.args)
		}
	}

	cleanEnv(t)
	t.Setenv(EnvMigrateSettleFound, "35s")
	if m, _, err := migrate("--settle", "2s"); err != nil || m.Migration.SettleFound != 35*time.Second || m.Migration.Settle != 2*time.Second {
		t.Errorf("%s=35s --settle 2s: %+v, %v", EnvMigrateSettleFound, m.Migration, err)
	}
	if m, _, err := migrate("--settle-found", "1m"); err != nil || m.Migration.SettleFound != time.Minute {
		t.Errorf("--settle-found 1m over the environment's 35s: %+v, %v", m.Migration, err)
	}

	cleanEnv(t)
	t.Setenv("PLANTSTORE_REDIS_ADDR", "a:6379,b:6379")
	if m, _, err := migrate("--settle", "5s"); err != nil || !reflect.DeepEqual(m.Redis.Addrs, []string{"a:6379", "b:6379"}) {
		t.Errorf("the service's Redis environment: %q, %v", m.Redis.Addrs, err)
	}

	for _, bad := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"--settle", "-1s"}, "--settle must not be negative"},
		{"", []string{"--settle-found", "-1s"}, "--settle-found must not be negative"},
		{"", []string{"--settle", "soon"}, "invalid value"},
		{"soon", nil, EnvMigrateSettle},
	} {
		cleanEnv(t)
		if bad.env != "" {
			t.Setenv(EnvMigrateSettle, bad.env)
		}
		if _, out, err := migrate(bad.args...); err == nil || !strings.Contains(err.Error()+out, bad.want) {
			t.Errorf("env %q, args %q: %v, want an error with %q", bad.env, bad.args, err, bad.want)
		}
	}

	cleanEnv(t)
	if _, _, err := parse(t, "--dev", "--settle", "5s"); err == nil {
		t.Error("the service accepted --settle, a flag of migrate-store only")
	}
	_, out, err := migrate("--help")
	if !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(out, "Usage: plantstore migrate-store [flags]") {
		t.Fatalf("migrate-store --help: %v\n%s", err, out)
	}
	for _, want := range []string{"  --settle (PLANTSTORE_MIGRATE_SETTLE, default 0s)\n", "  --redis-addr (PLANTSTORE_REDIS_ADDR, default \"\")\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate-store help lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ := parse(t, "--help"); strings.Contains(out, "--settle") || strings.Contains(out, EnvMigrateSettle) {
		t.Error("the service's help lists --settle")
	}
}

// TestJWTIssuersFile: the issuers file is read at start; a bad one, or a
// bad JWT option, fails the start naming the flag.
func TestJWTIssuersFile(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "issuers")
	if err := os.WriteFile(good, []byte("https://kubernetes.default.svc.cluster.local audience=plantstore\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("https://issuer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, err := parse(t, "--dev", "--auth-jwt-issuers-file", good)
	if err != nil || len(c.JWT.Issuers) != 1 || c.JWT.Issuers[0].Audience != "plantstore" {
		t.Fatalf("issuers %+v, %v", c.JWT.Issuers, err)
	}
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--auth-jwt-issuers-file", bad}, "--auth-jwt-issuers-file: JWT issuers file " + bad + ": line 1: audience="},
		{[]string{"--auth-jwt-issuers-file", filepath.Join(dir, "missing")}, "--auth-jwt-issuers-file"},
		{[]string{"--auth-jwt-issuers-file", good, "--auth-jwt-leeway", "10m"}, "--auth-jwt-leeway"},
		{[]string{"--auth-jwt-issuers-file", good, "--auth-jwt-cache-size", "0"}, "--auth-jwt-cache-size"},
		{[]string{"--auth-jwt-issuers-file", good, "--auth-jwt-refresh-min-interval", "1h"}, "--auth-jwt-refresh-min-interval"},
	} {
		if _, _, err := parse(t, append([]string{"--dev"}, tt.args...)...); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%v: %v, want an error saying %q", tt.args, err, tt.says)
		}
	}
}
