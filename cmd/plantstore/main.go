// Command plantstore runs the plant store service.
//
// plantstore is licensed under the Apache License 2.0 (SPDX identifier
// Apache-2.0); see the LICENSE file at the repository's root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/plantstore/plantstore/internal/app"
	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/config"
	"github.com/plantstore/plantstore/internal/kube"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/version"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "migrate-store":
			migrateStore(os.Args[2:])
			return
		case "ensure-secrets":
			runHook("ensure-secrets", os.Args[2:], func(ctx context.Context, args []string) error {
				return kube.Run(ctx, args, os.Stdout, os.Stderr, auth.GenerateToken)
			})
			return
		case "roll-redis":
			runHook("roll-redis", os.Args[2:], func(ctx context.Context, args []string) error {
				return kube.RunRoll(ctx, args, os.Stdout, os.Stderr, os.Getenv)
			})
			return
		}
	}
	cfg, err := config.Parse(os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return
	case err != nil:
		fmt.Fprintf(os.Stderr, "plantstore: %v\nRun plantstore --help for the options.\n", err)
		os.Exit(2)
	case cfg.Version:
		fmt.Println(version.Get())
		return
	}

	a := app.New(cfg)
	startCtx, cancel := context.WithTimeout(context.Background(), a.StartTimeout())
	defer cancel()
	if err := a.Start(startCtx); err != nil {
		fmt.Fprintf(os.Stderr, "plantstore: start-up failed: %v\n", err)
		os.Exit(1)
	}
	sig := <-a.Wait()
	// A second signal while draining means "now": exit without waiting.
	// Subscribe before the drain starts, not in the goroutine: until the
	// goroutine ran, a second signal went only to fx, which ignores it, and
	// the process drained on (TestChaosSIGTERM saw it under CPU contention).
	second := make(chan os.Signal, 1)
	signal.Notify(second, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-second
		fmt.Fprintln(os.Stderr, "plantstore: second signal, exiting at once")
		os.Exit(1)
	}()
	stopCtx, cancelStop := context.WithTimeout(context.Background(), a.StopTimeout())
	defer cancelStop()
	if err := a.Stop(stopCtx); err != nil {
		fmt.Fprintf(os.Stderr, "plantstore: shutdown: %v\n", err)
		os.Exit(1)
	}
	os.Exit(sig.ExitCode)
}

// migrateStore runs `plantstore migrate-store` (its --help says what it
// does). SIGINT or SIGTERM stops it (exit 1).
func migrateStore(args []string) {
	cfg, err := config.ParseMigrate(args, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return
	case err != nil:
		fmt.Fprintf(os.Stderr, "plantstore migrate-store: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := store.RunMigration(ctx, cfg.Redis, cfg.Migration, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "plantstore migrate-store: %v\n", err)
		os.Exit(1)
	}
}

// runHook runs one of the chart's hook commands (internal/kube:
// ensure-secrets, roll-redis). SIGINT or SIGTERM stops it; an error exits 1.
func runHook(name string, args []string, run func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, args); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "plantstore %s: %v\n", name, err)
		os.Exit(1)
	}
}
