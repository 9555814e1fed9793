package config

import (
	"reflect"
	"testing"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/plantstore/plantstore/internal/auth"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/server"
	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/telemetry"
)

func TestModuleProvidesParts(t *testing.T) {
	cleanEnv(t)
	c := mustParse(t, "--dev", "--http-addr=:18080", "--redis-addr=r:1,r:2", "--store-timeout=3s", "--log-level=debug",
		"--auth-tokens-file=/t", "--auth-reload-interval=2s")

	var (
		whole Config
		log   telemetry.LogOptions
		au    auth.Options
		redis store.RedisOptions
		api   httpapi.Options
		srv   server.Options
	)
	app := fxtest.New(t, Module(c), fx.Populate(&whole, &log, &au, &redis, &api, &srv))
	app.RequireStart().RequireStop()

	checks := []struct {
		name      string
		got, want any
	}{
		{"Config", whole, c},
		{"Log", log, c.Log},
		{"Auth", au, c.Auth},
		{"Redis", redis, c.Redis},
		{"API", api, c.API},
		{"Server", srv, c.Server},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %+v, want %+v", ch.name, ch.got, ch.want)
		}
	}
	if srv.HTTPAddr != ":18080" || len(redis.Addrs) != 2 || log.Level != "debug" || !au.Dev || au.TokensFile != "/t" {
		t.Errorf("parts do not carry the parsed values: %+v %+v %+v %+v", srv, redis, log, au)
	}
}
