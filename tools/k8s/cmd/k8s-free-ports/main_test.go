package main

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestFreePorts(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"3"}, &out); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range strings.Fields(out.String()) {
		if _, err := strconv.Atoi(p); err != nil || seen[p] {
			t.Fatalf("ports %q: not three distinct numbers", out.String())
		}
		seen[p] = true
		if n, _ := strconv.Atoi(p); n < 10000 || n >= ephemeralLow() {
			t.Errorf("port %s: not below the ephemeral range (%d on)", p, ephemeralLow())
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+p)
		if err != nil {
			t.Errorf("port %s is not free: %v", p, err)
			continue
		}
		l.Close()
	}
	if len(seen) != 3 {
		t.Errorf("ports %q: want 3", out.String())
	}
}

func TestFreePortsArgs(t *testing.T) {
	var out bytes.Buffer
	if err := run(nil, &out); err != nil || len(strings.Fields(out.String())) != 1 {
		t.Errorf("no N: %q, %v; want one port", out.String(), err)
	}
	for _, bad := range [][]string{{"x"}, {"0"}, {"-1"}, {"1", "2"}} {
		if err := run(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
