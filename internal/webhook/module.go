package webhook

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/server"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/telemetry"
	"github.com/plantstore/plantstore/internal/version"
)

// Options configure the webhooks.
type Options struct {
	// SubscribersFile lists the subscribers; empty: no webhooks, no events
	// recorded, no workers.
	SubscribersFile string
	ReloadInterval  time.Duration
	// Allow are the otherwise forbidden addresses deliveries may reach.
	Allow []netip.Prefix
	// Timeout bounds one delivery, connect to the answer's end.
	Timeout time.Duration
	Policy  Policy
	// StatsInterval is how often the backlog metrics are refreshed.
	StatsInterval time.Duration
}

// Params are what the webhooks are built from.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Options   Options
	Outbox    store.Outbox
	Recording *store.Recording
	Registry  prometheus.Registerer
	Tracing   *telemetry.Tracing
	Log       *zap.Logger
}

// Result is what the module provides: the subscriber set and the admin
// endpoints of the dead letters.
type Result struct {
	fx.Out

	Subscribers *Subscribers
	Routes      []server.AdminRoute `group:"admin_routes,flatten"`
}

// New loads the subscribers file, switches the store's event recording on
// while it lists anyone, and runs the file's reloader, the delivery worker
// and the backlog metrics with the application.
func New(p Params) (Result, error) {
	log := p.Log.Named("webhook")
	metrics, err := NewMetrics(p.Registry)
	if err != nil {
		return Result{}, err
	}
	changed := func(subs []Subscriber) {
		p.Recording.Set(len(subs) > 0)
		metrics.subscribers(len(subs))
	}
	if p.Options.SubscribersFile == "" {
		subs := NewSubscribers(nil, changed)
		return Result{Subscribers: subs, Routes: AdminRoutes(p.Outbox, subs, log)}, nil
	}
	subs, reloader, err := LoadFile(p.Options.SubscribersFile, p.Options.ReloadInterval, changed, log, metrics.reload)
	if err != nil {
		return Result{}, err
	}
	log.Info("webhooks on", zap.Strings("subscribers", names(subs.All())), zap.Int("max_attempts", p.Options.Policy.MaxAttempts))
	sender := NewSender(NewGuard(p.Options.Allow), nil, p.Options.Timeout, p.Options.Policy.PerSubscriber,
		"plantstore/"+version.Get().Version)
	worker := NewWorker(p.Outbox, subs, sender, p.Options.Policy, metrics, p.Tracing.Provider, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	p.Lifecycle.Append(fx.StartStopHook(func() {
		var wg sync.WaitGroup
		wg.Go(func() { reloader.Run(ctx) })
		wg.Go(func() { worker.RunStats(ctx, p.Options.StatsInterval) })
		wg.Go(func() { worker.Run(ctx) })
		go func() { wg.Wait(); close(done) }()
	}, func(stop context.Context) {
		cancel()
		select {
		case <-done:
		case <-stop.Done():
			log.Warn("webhook deliveries still under way at the stop deadline; their leases bring them back")
		}
	}))
	return Result{Subscribers: subs, Routes: AdminRoutes(p.Outbox, subs, log)}, nil
}

// Module provides the webhooks.
var Module = fx.Module("webhook", fx.Provide(New), fx.Invoke(func(*Subscribers) {}))
