package app_test

import (
	"context"
	"io"
	"testing"

	"go.uber.org/fx"

	"github.com/plantstore/plantstore/internal/app"
	"github.com/plantstore/plantstore/internal/config"
	"github.com/plantstore/plantstore/internal/server"
)

// TestGraphStartsAndStops builds the whole fx graph from a parsed
// configuration, starts it on free loopback ports and stops it.
func TestGraphStartsAndStops(t *testing.T) {
	cfg, err := config.Parse([]string{"--dev", "--log-level", "error",
		"--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var servers *server.Servers
	a := app.New(cfg, fx.Populate(&servers), fx.NopLogger)
	if err := a.Err(); err != nil {
		t.Fatalf("the graph does not build: %v", err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if servers.API.Addr() == nil || servers.Admin.Addr() == nil {
		t.Fatal("listeners not bound after start")
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestGraphRefusesBadTokensFile checks a constructor's error stops the app
// before anything listens.
func TestGraphRefusesBadTokensFile(t *testing.T) {
	cfg, err := config.Parse([]string{"--auth-tokens-file", t.TempDir() + "/missing",
		"--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.New(cfg, fx.NopLogger).Err(); err == nil {
		t.Fatal("an unreadable tokens file did not stop the application")
	}
}
