// Package config reads the service's options from flags, with PLANTSTORE_*
// environment variables as fallbacks, and checks them before anything starts.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/docspage"
	"github.com/plantstore/plantstore/internal/gctune"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/oidcauth"
	"github.com/plantstore/plantstore/internal/ratelimit"
	"github.com/plantstore/plantstore/internal/server"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/telemetry"
	"github.com/plantstore/plantstore/internal/webhook"
)

// EnvPrefix prefixes the environment variable of every flag: --http-addr is
// also read from PLANTSTORE_HTTP_ADDR.
const EnvPrefix = "PLANTSTORE"

// Secrets come only from the environment or files, never from flag values
// that anyone can read in ps.
const (
	EnvRedisPassword         = "PLANTSTORE_REDIS_PASSWORD"
	EnvRedisSentinelPassword = "PLANTSTORE_REDIS_SENTINEL_PASSWORD"
)

// Config is everything the service is configured with.
type Config struct {
	Dev     bool
	Version bool
	Log     telemetry.LogOptions
	Auth    auth.Options
	// JWT: the issuers of JWT bearer credentials; none by default.
	JWT oidcauth.Options
	// Redis.Addrs empty selects the embedded store.
	Redis     store.RedisOptions
	API       httpapi.Options
	RateLimit ratelimit.Options
	Server    server.Options
	Webhook   webhook.Options
	GC        gctune.Options
}

// Parse reads the configuration from args and the environment. Help goes to
// out; it returns flag.ErrHelp after printing it.
func Parse(args []string, out io.Writer) (Config, error) {
	return parseWith(args, out, serviceUsage, nil)
}

// serviceUsage heads the help of the service.
const serviceUsage = "Usage: plantstore [flags]\n\nThe plant store HTTP service. Every flag can also be set by the environment\nvariable shown; a flag given on the command line wins.\n"

// parseWith is Parse with the help's head and extra flags of a subcommand
// (added after the service's, so a subcommand's help lists them too).
func parseWith(args []string, out io.Writer, head string, extra func(*flag.FlagSet)) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("plantstore", flag.ContinueOnError)
	fs.SetOutput(out)

	fs.StringVar(&c.Server.HTTPAddr, "http-addr", ":8080", "API listener address")
	fs.StringVar(&c.Server.AdminAddr, "admin-addr", ":9090", "admin listener address: /livez, /readyz, /metrics (and pprof when enabled)")
	fs.BoolVar(&c.Dev, "dev", false, "development mode: generate a random API token and print it once, readable console logs")
	version := &commandLineBool{p: &c.Version}
	fs.Var(version, "version", "print the version and exit")
	fs.StringVar(&c.Log.Level, "log-level", "info", "minimum log level: debug, info, warn or error")
	fs.StringVar(&c.Log.Format, "log-format", "", "log encoding: json or console (default json, console with --dev)")
	fs.IntVar(&c.Log.SamplingInitial, "log-sampling-initial", 100, "log sampling: of the lines with one message and level, each second keep the first N (0: keep every line)")
	fs.IntVar(&c.Log.SamplingThereafter, "log-sampling-thereafter", 100, "log sampling: past the first lines of a second, keep every Nth")

	fs.StringVar(&c.Auth.TokensFile, "auth-tokens-file", "", "file of accepted API tokens, one a line: a raw token or sha256:<hex digest>, then optional name=, scopes=, expires=, rate=, burst=; # starts a comment; reread when it changes")
	fs.DurationVar(&c.Auth.ReloadInterval, "auth-reload-interval", 5*time.Second, "how often the tokens file is checked for changes")
	fs.StringVar(&c.JWT.IssuersFile, "auth-jwt-issuers-file", "", "file of trusted JWT issuers, one a line: the issuer URL (https), then audience=<aud> and optional ca-file=, discovery-token-file=, jwks-url=; # starts a comment; read at start; empty: no JWT accepted. The tokens file's identity lines map their tokens to clients")
	fs.DurationVar(&c.JWT.Leeway, "auth-jwt-leeway", 30*time.Second, "clock skew allowed on a JWT's exp, nbf and iat (at most 5m)")
	fs.DurationVar(&c.JWT.RefreshInterval, "auth-jwt-refresh-interval", 15*time.Minute, "how often each JWT issuer's discovery document and keys are fetched again")
	fs.DurationVar(&c.JWT.MinRefreshInterval, "auth-jwt-refresh-min-interval", 10*time.Second, "least time between two fetches of an issuer's keys: for a token whose key id is unknown, or while the issuer cannot be reached (then the Retry-After of its 503s)")
	fs.DurationVar(&c.JWT.Timeout, "auth-jwt-timeout", 5*time.Second, "deadline of one request for a JWT issuer's discovery document or key set")
	fs.IntVar(&c.JWT.CacheSize, "auth-jwt-cache-size", 10000, "verified JWTs remembered until they expire, so that each is checked once; past it, others are forgotten")

	var rateDefault, rateRedisAddrs string
	fs.StringVar(&rateDefault, "rate-limit-default", "", "rate limit of a client whose tokens-file line has no rate=: <n>/s, <n>/m or <n>/h (burst n); empty: no limit")
	fs.DurationVar(&c.RateLimit.Timeout, "rate-limit-timeout", 100*time.Millisecond, "deadline of a rate-limit decision; past it, or when the limiter's Redis fails, the request is served unlimited (fail open)")
	fs.StringVar(&rateRedisAddrs, "rate-limit-redis-addr", "", "Redis address(es) of the rate-limit budgets, with the store's Redis credentials and TLS settings; empty: the store's Redis, or in-process with the embedded store")

	var webhookAllow string
	fs.StringVar(&c.Webhook.SubscribersFile, "webhook-subscribers-file", "", "file of webhook subscribers, one URL then one or two whsec_<base64> secrets a line; # starts a comment; reread when it changes; empty: no webhooks (no events recorded)")
	fs.DurationVar(&c.Webhook.ReloadInterval, "webhook-reload-interval", 5*time.Second, "how often the webhook subscribers file is checked for changes")
	fs.StringVar(&webhookAllow, "webhook-allow-cidrs", "", "comma-separated CIDR prefixes that deliveries may reach although loopback, private or link-local (e.g. 10.0.0.0/8 for an in-cluster subscriber)")
	fs.DurationVar(&c.Webhook.Timeout, "webhook-timeout", 5*time.Second, "deadline of one webhook delivery, connect to the answer's end")
	fs.IntVar(&c.Webhook.Policy.MaxAttempts, "webhook-max-attempts", 15, "delivery attempts of an event to a subscriber before it is dead-lettered")
	fs.DurationVar(&c.Webhook.Policy.BackoffBase, "webhook-backoff-base", time.Second, "wait before the first retry; doubled at each retry, with jitter")
	fs.DurationVar(&c.Webhook.Policy.BackoffMax, "webhook-backoff-max", time.Hour, "longest wait between two retries")
	fs.DurationVar(&c.Webhook.Policy.Lease, "webhook-lease", time.Minute, "visibility timeout: a delivery claimed by a replica that did not settle it by then (it died) is delivered again by any replica; above --webhook-timeout")
	fs.DurationVar(&c.Webhook.Policy.PollInterval, "webhook-poll-interval", 250*time.Millisecond, "wait between two polls of an idle outbox")
	fs.IntVar(&c.Webhook.Policy.InFlight, "webhook-concurrency", 32, "webhook deliveries one replica makes at once")
	fs.IntVar(&c.Webhook.Policy.PerSubscriber, "webhook-subscriber-concurrency", 8, "webhook deliveries one replica makes at once to one subscriber")
	fs.DurationVar(&c.Webhook.StatsInterval, "webhook-stats-interval", 5*time.Second, "how often the webhook backlog metrics are read from the store")

	var redisAddrs, passwordFile, sentinelPasswordFile string
	fs.StringVar(&redisAddrs, "redis-addr", "", "Redis address(es), comma-separated: one for a single node, several for a Cluster, Sentinel addresses with --redis-master-name; empty selects the embedded in-process store (not durable)")
	fs.StringVar(&c.Redis.MasterName, "redis-master-name", "", "Sentinel master name: --redis-addr lists the sentinels")
	fs.BoolVar(&c.Redis.Cluster, "redis-cluster", false, "use Cluster mode even with a single --redis-addr (a cluster configuration endpoint)")
	fs.StringVar(&c.Redis.Username, "redis-username", "", "Redis ACL username")
	fs.StringVar(&passwordFile, "redis-password-file", "", "file holding the Redis password (or set "+EnvRedisPassword+")")
	fs.StringVar(&c.Redis.SentinelUsername, "redis-sentinel-username", "", "Sentinel ACL username")
	fs.StringVar(&sentinelPasswordFile, "redis-sentinel-password-file", "", "file holding the Sentinel password (or set "+EnvRedisSentinelPassword+")")
	fs.IntVar(&c.Redis.DB, "redis-db", 0, "Redis database number (single node and Sentinel only)")
	fs.StringVar(&c.Redis.KeyPrefix, "redis-key-prefix", "plantstore:", "prefix of every Redis key")
	fs.BoolVar(&c.Redis.TLS, "redis-tls", false, "connect to Redis over TLS")
	fs.StringVar(&c.Redis.TLSCAFile, "redis-tls-ca-file", "", "PEM CA bundle to verify Redis with (default: the system roots)")
	fs.StringVar(&c.Redis.TLSServerName, "redis-tls-server-name", "", "server name to verify Redis's certificate against (default: the host of the address)")
	fs.IntVar(&c.Redis.PoolSize, "redis-pool-size", 0, "connections per Redis node (0: 10 per CPU)")
	fs.BoolVar(&c.Redis.Batch, "redis-batch", true, "coalesce the single-plant reads, creates and deletes of concurrent requests into one Redis pipeline per round trip, except with --redis-min-replica-acks, whose requests each keep their own pipeline with WAIT (false: one round trip each)")
	fs.IntVar(&c.Redis.MaxRetries, "redis-max-retries", 2, "retries of a failed Redis command, within --store-timeout (-1: none)")
	fs.DurationVar(&c.Redis.DialTimeout, "redis-dial-timeout", time.Second, "timeout to connect to Redis")
	fs.DurationVar(&c.Redis.ReadTimeout, "redis-read-timeout", time.Second, "timeout of one Redis read")
	fs.DurationVar(&c.Redis.WriteTimeout, "redis-write-timeout", time.Second, "timeout of one Redis write")
	fs.IntVar(&c.Redis.MinReplicaAcks, "redis-min-replica-acks", 0, "answer a create 200 or a delete 204 only once this many replicas acknowledged it, and a read, a list page, a 409 or a 404 only once they hold what the master read (Redis WAIT), else 503 (a change may be made; a retry is safe); 0: do not wait")
	fs.DurationVar(&c.Redis.ReplicaAckTimeout, "redis-replica-ack-timeout", 500*time.Millisecond, "how long a request waits for --redis-min-replica-acks replicas; below --store-timeout and --redis-read-timeout")
	fs.DurationVar(&c.API.StoreTimeout, "store-timeout", time.Second, "deadline of a request's store operation; past it the request answers 503")
	fs.DurationVar(&c.Server.ReadyTimeout, "ready-timeout", 500*time.Millisecond, "deadline of the store ping behind /readyz (required once after start; afterwards informational)")

	fs.DurationVar(&c.Server.HTTP.ReadHeaderTimeout, "http-read-header-timeout", 5*time.Second, "time to read a request's headers")
	fs.DurationVar(&c.Server.HTTP.ReadTimeout, "http-read-timeout", 15*time.Second, "time to read a whole request")
	fs.DurationVar(&c.Server.HTTP.WriteTimeout, "http-write-timeout", 15*time.Second, "time from the end of the request headers to the end of the response")
	fs.DurationVar(&c.Server.HTTP.IdleTimeout, "http-idle-timeout", 120*time.Second, "how long a keep-alive connection may idle")
	fs.IntVar(&c.Server.HTTP.MaxHeaderBytes, "http-max-header-bytes", 16<<10, "largest request header block, in bytes")
	fs.DurationVar(&c.Server.ShutdownDelay, "shutdown-delay", 0, "on SIGTERM, how long to keep serving with /readyz failing before closing listeners (let load balancers notice)")
	fs.DurationVar(&c.Server.ShutdownTimeout, "shutdown-timeout", 20*time.Second, "how long in-flight requests may take to finish at shutdown")
	fs.BoolVar(&c.API.DocsPage, "docs-page", true, "serve the API reference page at GET /docs, without a token: HTML that renders /openapi.yaml and sends requests with a token typed into it (its files under /docs/, embedded); false: those paths answer 404")
	fs.BoolVar(&c.Server.Pprof, "pprof", false, "serve /debug/pprof on the admin listener, with mutex and block profiling on")
	fs.IntVar(&c.GC.HeapFloorMiB, "gc-heap-floor-mib", gctune.DefaultHeapFloorMiB, "heap size, in MiB, below which the Go garbage collector does not run; above it GOGC applies as usual (0: GOGC alone)")

	if extra != nil {
		extra(fs)
	}
	fs.Usage = func() { usage(fs, head) }
	// --version is a command, not configuration: only the command line may
	// ask for it, never a stray PLANTSTORE_VERSION in a pod's environment
	// (whatever its value: "1.4.0" must not stop the service from starting).
	// A flag whose variable is named otherwise (ownEnvDuration) ignores
	// PLANTSTORE_<FLAG> the same way, and reads its own variable after.
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	freeze(fs)
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix(EnvPrefix)); err != nil {
		return Config{}, err
	}
	if err := fromOwnEnv(fs); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q: plantstore takes only flags", fs.Arg(0))
	}
	if c.Version {
		return c, nil
	}
	if c.Log.Format == "" {
		c.Log.Format = "json"
		if c.Dev {
			c.Log.Format = "console"
		}
	}
	c.Auth.Dev = c.Dev
	if c.API.DocsPage {
		c.Auth.DocsPath = docspage.Path
	}
	c.Redis.Addrs = splitAddrs(redisAddrs)
	c.RateLimit.RedisAddrs = splitAddrs(rateRedisAddrs)
	var err error
	if c.Webhook.Allow, err = webhook.ParseAllow(splitAddrs(webhookAllow)); err != nil {
		return Config{}, fmt.Errorf("--webhook-allow-cidrs: %w", err)
	}
	// A delivery to a subscriber this replica does not know yet waits out
	// two rereads of the file by every replica before it is dropped.
	c.Webhook.Policy.UnknownGrace = 2*c.Webhook.ReloadInterval + time.Minute
	if rateDefault != "" {
		if c.RateLimit.Default, err = auth.ParseRate(rateDefault); err != nil {
			return Config{}, fmt.Errorf("--rate-limit-default %w", err)
		}
	}
	if c.JWT.IssuersFile != "" {
		if c.JWT.Issuers, err = oidcauth.ReadIssuersFile(c.JWT.IssuersFile); err != nil {
			return Config{}, fmt.Errorf("--auth-jwt-issuers-file: %w", err)
		}
	}
	if c.Redis.Password, err = secret("--redis-password-file", passwordFile, EnvRedisPassword); err != nil {
		return Config{}, err
	}
	if c.Redis.SentinelPassword, err = secret("--redis-sentinel-password-file", sentinelPasswordFile, EnvRedisSentinelPassword); err != nil {
		return Config{}, err
	}
	return c, c.Validate()
}

// Migrate is the configuration of `plantstore migrate-store`.
type Migrate struct {
	// Config: the service's flags and environment, of which the command
	// uses the Redis options.
	Config
	// Migration: --settle (PLANTSTORE_MIGRATE_SETTLE) and --settle-found
	// (PLANTSTORE_MIGRATE_SETTLE_FOUND), which only the command has.
	Migration store.MigrationOptions
}

// EnvMigrateSettle is the variable of migrate-store's --settle: not
// PLANTSTORE_SETTLE, which would read as a setting of the service.
const EnvMigrateSettle = "PLANTSTORE_MIGRATE_SETTLE"

// EnvMigrateSettleFound is the variable of migrate-store's --settle-found.
const EnvMigrateSettleFound = "PLANTSTORE_MIGRATE_SETTLE_FOUND"

// migrateUsage heads the help of migrate-store.
const migrateUsage = "Usage: plantstore migrate-store [flags]\n\nMoves the plants version 1.0.0 stored in Redis to the 1.1.0 layout\n(docs/storage.md). It takes the service's flags, of which it uses the Redis\noptions, --settle and --settle-found. Every flag can also be set by the\nenvironment variable shown; a flag given on the command line wins.\n"

// ParseMigrate reads the configuration of `plantstore migrate-store`: the
// service's flags and environment, of which it uses the Redis options (it
// needs no API tokens), --settle and --settle-found.
func ParseMigrate(args []string, out io.Writer) (Migrate, error) {
	return parseMigrate(args, out, nil)
}

// parseMigrate is ParseMigrate, handing its flag set to inspect first.
func parseMigrate(args []string, out io.Writer, inspect func(*flag.FlagSet)) (Migrate, error) {
	var m Migrate
	settle := &ownEnvDuration{p: &m.Migration.Settle, env: EnvMigrateSettle}
	settleFound := &ownEnvDuration{p: &m.Migration.SettleFound, env: EnvMigrateSettleFound}
	c, err := parseWith(append([]string{"--dev"}, args...), out, migrateUsage, func(fs *flag.FlagSet) {
		fs.Var(settle, "settle", "repeat the migration, a pass a second, until no pass has found a 1.0.0 key for this long (above the 1.0.0 pods' termination grace period while they may still run); 0: one pass")
		fs.Var(settleFound, "settle-found", "once a pass has found a 1.0.0 key, settle at least this long: where 1.0.0 keys are, 1.0.0 pods may still be draining (set it above their termination grace period); 0: --settle alone")
		if inspect != nil {
			inspect(fs)
		}
	})
	c.Dev, c.Auth.Dev = false, false
	m.Config = c
	switch {
	case err != nil:
	case m.Migration.Settle < 0:
		err = fmt.Errorf("--settle must not be negative, got %v", m.Migration.Settle)
	case m.Migration.SettleFound < 0:
		err = fmt.Errorf("--settle-found must not be negative, got %v", m.Migration.SettleFound)
	}
	return m, err
}

// Validate checks the options together; each message names the option.
func (c Config) Validate() error {
	var errs []error
	if c.Auth.TokensFile == "" && !c.Dev {
		errs = append(errs, errors.New("no API tokens configured: set --auth-tokens-file (PLANTSTORE_AUTH_TOKENS_FILE) to a file of tokens, one a line, or pass --dev to generate a token for local use"))
	}
	positive := []struct {
		flag string
		d    time.Duration
	}{
		{"--auth-reload-interval", c.Auth.ReloadInterval},
		{"--rate-limit-timeout", c.RateLimit.Timeout},
		{"--store-timeout", c.API.StoreTimeout},
		{"--ready-timeout", c.Server.ReadyTimeout},
		{"--redis-dial-timeout", c.Redis.DialTimeout},
		{"--redis-read-timeout", c.Redis.ReadTimeout},
		{"--redis-write-timeout", c.Redis.WriteTimeout},
		{"--http-read-header-timeout", c.Server.HTTP.ReadHeaderTimeout},
		{"--http-read-timeout", c.Server.HTTP.ReadTimeout},
		{"--http-write-timeout", c.Server.HTTP.WriteTimeout},
		{"--http-idle-timeout", c.Server.HTTP.IdleTimeout},
		{"--shutdown-timeout", c.Server.ShutdownTimeout},
		{"--webhook-reload-interval", c.Webhook.ReloadInterval},
		{"--webhook-timeout", c.Webhook.Timeout},
		{"--webhook-backoff-base", c.Webhook.Policy.BackoffBase},
		{"--webhook-backoff-max", c.Webhook.Policy.BackoffMax},
		{"--webhook-lease", c.Webhook.Policy.Lease},
		{"--webhook-poll-interval", c.Webhook.Policy.PollInterval},
		{"--webhook-stats-interval", c.Webhook.StatsInterval},
	}
	for _, p := range positive {
		if p.d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", p.flag, p.d))
		}
	}
	if c.Webhook.Policy.MaxAttempts < 1 || c.Webhook.Policy.InFlight < 1 || c.Webhook.Policy.PerSubscriber < 1 {
		errs = append(errs, fmt.Errorf("--webhook-max-attempts, --webhook-concurrency and --webhook-subscriber-concurrency must be 1 or more, got %d, %d and %d",
			c.Webhook.Policy.MaxAttempts, c.Webhook.Policy.InFlight, c.Webhook.Policy.PerSubscriber))
	}
	if c.Webhook.Policy.Lease <= c.Webhook.Timeout {
		errs = append(errs, fmt.Errorf("--webhook-lease (%v) must exceed --webhook-timeout (%v), or a delivery under way is claimed again by another replica", c.Webhook.Policy.Lease, c.Webhook.Timeout))
	}
	if c.Webhook.Policy.BackoffBase > c.Webhook.Policy.BackoffMax {
		errs = append(errs, fmt.Errorf("--webhook-backoff-base (%v) must not exceed --webhook-backoff-max (%v)", c.Webhook.Policy.BackoffBase, c.Webhook.Policy.BackoffMax))
	}
	if err := c.JWT.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Server.ShutdownDelay < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-delay must not be negative, got %v", c.Server.ShutdownDelay))
	}
	if c.GC.HeapFloorMiB < 0 {
		errs = append(errs, fmt.Errorf("--gc-heap-floor-mib must not be negative, got %d", c.GC.HeapFloorMiB))
	}
	if c.Server.HTTP.MaxHeaderBytes < 1024 {
		errs = append(errs, fmt.Errorf("--http-max-header-bytes must be at least 1024, got %d", c.Server.HTTP.MaxHeaderBytes))
	}
	if c.Server.HTTPAddr == "" {
		errs = append(errs, errors.New("--http-addr must not be empty"))
	}
	if c.Server.AdminAddr == "" {
		errs = append(errs, errors.New("--admin-addr must not be empty"))
	}
	if c.Redis.PoolSize < 0 {
		errs = append(errs, fmt.Errorf("--redis-pool-size must not be negative, got %d", c.Redis.PoolSize))
	}
	if c.Redis.MaxRetries < -1 {
		errs = append(errs, fmt.Errorf("--redis-max-retries must be -1 or more, got %d", c.Redis.MaxRetries))
	}
	if c.Redis.MinReplicaAcks < 0 {
		errs = append(errs, fmt.Errorf("--redis-min-replica-acks must not be negative, got %d", c.Redis.MinReplicaAcks))
	}
	if c.Redis.MinReplicaAcks > 0 {
		switch {
		case len(c.Redis.Addrs) == 0:
			errs = append(errs, errors.New("--redis-min-replica-acks needs --redis-addr: the embedded store has no replicas"))
		case c.Redis.ReplicaAckTimeout <= 0:
			errs = append(errs, fmt.Errorf("--redis-replica-ack-timeout must be positive, got %v", c.Redis.ReplicaAckTimeout))
		case c.Redis.ReplicaAckTimeout >= c.API.StoreTimeout || c.Redis.ReplicaAckTimeout >= c.Redis.ReadTimeout:
			errs = append(errs, fmt.Errorf("--redis-replica-ack-timeout (%v) must be below --store-timeout (%v) and --redis-read-timeout (%v), or a create times out before its replicas answer",
				c.Redis.ReplicaAckTimeout, c.API.StoreTimeout, c.Redis.ReadTimeout))
		}
	}
	if c.Redis.DB < 0 {
		errs = append(errs, fmt.Errorf("--redis-db must not be negative, got %d", c.Redis.DB))
	}
	if len(c.Redis.Addrs) == 0 && (c.Redis.MasterName != "" || c.Redis.Cluster) {
		errs = append(errs, errors.New("--redis-master-name and --redis-cluster need --redis-addr"))
	}
	if c.Redis.MasterName != "" && c.Redis.Cluster {
		errs = append(errs, errors.New("--redis-master-name (Sentinel) and --redis-cluster exclude each other"))
	}
	if c.Redis.DB != 0 && (c.Redis.Cluster || (len(c.Redis.Addrs) > 1 && c.Redis.MasterName == "")) {
		errs = append(errs, errors.New("--redis-db is not available in Cluster mode"))
	}
	if (c.Redis.TLSCAFile != "" || c.Redis.TLSServerName != "") && !c.Redis.TLS {
		errs = append(errs, errors.New("--redis-tls-ca-file and --redis-tls-server-name need --redis-tls"))
	}
	if c.Log.SamplingInitial < 0 || c.Log.SamplingThereafter < 1 {
		errs = append(errs, fmt.Errorf("--log-sampling-initial must be 0 or more and --log-sampling-thereafter 1 or more, got %d and %d", c.Log.SamplingInitial, c.Log.SamplingThereafter))
	}
	if c.Log.Format != "json" && c.Log.Format != "console" {
		errs = append(errs, fmt.Errorf("--log-format must be json or console, got %q", c.Log.Format))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", c.Log.Level))
	}
	return errors.Join(errs...)
}

// splitAddrs reads a comma-separated list of addresses.
func splitAddrs(list string) []string {
	var addrs []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// secret reads a secret from a file named by a flag or from an environment
// variable; setting both is an error.
func secret(flagName, file, env string) (string, error) {
	fromEnv, inEnv := os.LookupEnv(env)
	switch {
	case file != "" && inEnv:
		return "", fmt.Errorf("set either %s or %s, not both", flagName, env)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: %w", flagName, err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	default:
		return fromEnv, nil
	}
}

func usage(fs *flag.FlagSet, head string) {
	w := fs.Output()
	fmt.Fprintf(w, "%s\nFlags:\n", head)
	for _, f := range describe(fs) {
		fmt.Fprintf(w, "  --%s (%s, default %s)\n      %s\n", f.Name, f.Env, f.Default, f.Usage)
	}
	fmt.Fprintf(w, "\nSecrets from the environment only: %s, %s.\nTracing: the standard OTEL_* variables.\n", EnvRedisPassword, EnvRedisSentinelPassword)
}

// Flag is one flag as --help shows it, and docs/configuration.md from it.
type Flag struct {
	Name, Env, Default, Usage string
}

// describe lists the flags of fs in --help's order (by name).
func describe(fs *flag.FlagSet) []Flag {
	var flags []Flag
	fs.VisitAll(func(f *flag.Flag) {
		env := EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		switch v := f.Value.(type) {
		case *commandLineBool:
			env = "command line only"
		case *ownEnvDuration:
			env = v.env
		}
		def := f.DefValue
		if def == "" {
			def = `""`
		}
		flags = append(flags, Flag{Name: f.Name, Env: env, Default: def, Usage: f.Usage})
	})
	return flags
}

// commandLineBool is a boolean flag that only the command line sets: once
// frozen, after the command line is parsed, it ignores every Set, so an
// environment variable of the same name, whatever its value, changes nothing
// and fails nothing.
type commandLineBool struct {
	p      *bool
	frozen bool
}

func (b *commandLineBool) freeze() { b.frozen = true }

func (b *commandLineBool) Set(s string) error {
	if b.frozen {
		return nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = v
	return nil
}

func (b *commandLineBool) String() string {
	if b == nil || b.p == nil {
		return "false"
	}
	return strconv.FormatBool(*b.p)
}

func (b *commandLineBool) IsBoolFlag() bool { return true }

// ownEnvDuration is a duration flag whose environment variable is named
// env, not after the flag: frozen once the command line is parsed, it
// ignores ff's PLANTSTORE_<FLAG>, and fromOwnEnv then reads env unless the
// command line set it.
type ownEnvDuration struct {
	p      *time.Duration
	env    string
	frozen bool
	set    bool
}

func (d *ownEnvDuration) freeze() { d.frozen = true }

func (d *ownEnvDuration) Set(s string) error {
	if d.frozen {
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("parse error")
	}
	*d.p, d.set = v, true
	return nil
}

func (d *ownEnvDuration) String() string {
	if d == nil || d.p == nil {
		return "0s"
	}
	return d.p.String()
}

// freeze makes the command-line-only values (and those with variables of
// their own) ignore every later Set: the environment's, through ff.
func freeze(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := f.Value.(interface{ freeze() }); ok {
			v.freeze()
		}
	})
}

// fromOwnEnv sets each ownEnvDuration the command line left alone from its
// variable.
func fromOwnEnv(fs *flag.FlagSet) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		d, ok := f.Value.(*ownEnvDuration)
		if !ok || d.set {
			return
		}
		s, ok := os.LookupEnv(d.env)
		if !ok || s == "" {
			return
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for environment variable %s: %w", s, d.env, err))
			return
		}
		*d.p = v
	})
	return errors.Join(errs...)
}
