package chart

import (
	"regexp"
	"testing"
)

// redisConfLine is the maxmemory line of the chart's redis.conf.
var redisConfLine = regexp.MustCompile(`(?m)^maxmemory (\S+)$`)

// TestRedisMaxmemory: unless redis.maxmemory is set, the chart's Redis
// refuses writes (507) at three quarters of its container's memory limit,
// before the kernel would kill it at the limit; "0" still means no limit,
// and a limit the chart cannot read fails the render with what to set.
func TestRedisMaxmemory(t *testing.T) {
	limit := func(memory any) map[string]any {
		return map[string]any{"redis": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": memory}}}}
	}
	for _, tc := range []struct {
		name   string
		values []map[string]any
		want   string
	}{
		{"default: 3/4 of 256Mi", nil, "201326592"},
		{"3/4 of 1Gi", []map[string]any{limit("1Gi")}, "805306368"},
		{"3/4 of 500M", []map[string]any{limit("500M")}, "375000000"},
		{"3/4 of a plain byte count", []map[string]any{limit("400000000")}, "300000000"},
		{"3/4 of 1.5Gi", []map[string]any{limit("1.5Gi")}, "1207959552"},
		{"no memory limit: no maxmemory", []map[string]any{limit(nil)}, "0"},
		{"set explicitly", []map[string]any{{"redis": map[string]any{"maxmemory": "100mb"}}}, "100mb"},
		{`"0": no limit, as before`, []map[string]any{{"redis": map[string]any{"maxmemory": "0"}}}, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, nil, tc.values...)
			conf, _ := dig(r.get(t, "ConfigMap", "plantstore-redis").Obj, "data", "redis.conf").(string)
			m := redisConfLine.FindStringSubmatch(conf)
			if m == nil || m[1] != tc.want {
				t.Fatalf("redis.conf maxmemory = %v, want %s:\n%s", m, tc.want, conf)
			}
		})
	}

	mustFail(t, []string{"set redis.maxmemory"}, nil, limit("2e9"))
}
