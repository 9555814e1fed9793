package config

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWebhookOptions(t *testing.T) {
	cleanEnv(t)
	c := mustParse(t, "--dev")
	if c.Webhook.SubscribersFile != "" || c.Webhook.Policy.MaxAttempts != 15 || c.Webhook.Policy.Lease != time.Minute ||
		c.Webhook.Timeout != 5*time.Second || len(c.Webhook.Allow) != 0 || c.Webhook.Policy.UnknownGrace != 70*time.Second {
		t.Fatalf("defaults = %+v", c.Webhook)
	}
	t.Setenv("PLANTSTORE_WEBHOOK_SUBSCRIBERS_FILE", "/etc/plantstore/subscribers")
	t.Setenv("PLANTSTORE_WEBHOOK_ALLOW_CIDRS", "127.0.0.0/8, 10.1.2.3,fd00::/8")
	c = mustParse(t, "--dev", "--webhook-max-attempts", "3", "--webhook-reload-interval", "1s")
	want := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.1.2.3/32"), netip.MustParsePrefix("fd00::/8")}
	if c.Webhook.SubscribersFile != "/etc/plantstore/subscribers" || c.Webhook.Policy.MaxAttempts != 3 ||
		!slices.Equal(c.Webhook.Allow, want) || c.Webhook.Policy.UnknownGrace != 62*time.Second {
		t.Fatalf("from flags and environment: %+v", c.Webhook)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--webhook-allow-cidrs", "10.0.0.0/33"}, "--webhook-allow-cidrs"},
		{[]string{"--webhook-allow-cidrs", "intranet"}, "--webhook-allow-cidrs"},
		{[]string{"--webhook-max-attempts", "0"}, "--webhook-max-attempts"},
		{[]string{"--webhook-subscriber-concurrency", "0"}, "--webhook-subscriber-concurrency"},
		{[]string{"--webhook-lease", "5s"}, "--webhook-lease (5s) must exceed --webhook-timeout (5s)"},
		{[]string{"--webhook-backoff-base", "2h"}, "--webhook-backoff-base (2h0m0s) must not exceed"},
		{[]string{"--webhook-timeout", "0s"}, "--webhook-timeout must be positive"},
		{[]string{"--webhook-poll-interval", "-1s"}, "--webhook-poll-interval must be positive"},
	} {
		_, _, err := parse(t, append([]string{"--dev"}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}
