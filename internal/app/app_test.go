package app_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"go.uber.org/fx"

	"github.com/plantstore/plantstore/internal/app"
	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/config"
	"github.com/plantstore/plantstore/internal/server"
)

// TestGraphStartsAndStops builds the whole fx graph from a parsed
// configuration, starts it on free loopback ports, checks the API listener
// serves the API behind the bearer middleware, and stops it.
func TestGraphStartsAndStops(t *testing.T) {
	cfg, err := config.Parse([]string{"--dev", "--log-level", "error",
		"--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var servers *server.Servers
	var token auth.DevToken
	a := app.New(cfg, fx.Populate(&servers, &token), fx.NopLogger)
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
	url := "http://" + servers.API.Addr().String() + "/plants"
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"dev token", string(token), http.StatusOK},
	} {
		if got := getStatus(t, url, tc.token); got != tc.want {
			t.Errorf("GET /plants with %s = %d, want %d", tc.name, got, tc.want)
		}
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

func getStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// No idle connection for the drain to wait out.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
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
