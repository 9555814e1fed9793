package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/plantstore/plantstore/tools/bench/internal/cpuprof"
	"github.com/plantstore/plantstore/tools/bench/internal/report"
)

// profiles are what profileService saves, by file name: the admin
// listener's pprof path, fetched after the closed loop (the CPU profile is
// taken during it).
var profiles = []struct{ file, path string }{
	{"allocs.pprof", "/debug/pprof/allocs"},
	{"heap.pprof", "/debug/pprof/heap"},
	{"mutex.pprof", "/debug/pprof/mutex"},
	{"block.pprof", "/debug/pprof/block"},
	{"goroutine.pprof", "/debug/pprof/goroutine"},
}

// profileService runs the service once more, with --pprof, under the closed
// loop of a round, and saves its CPU, allocation, heap, mutex, block and
// goroutine profiles into dir, and the CPU profile's breakdown into the
// report. It comes after the rounds and counts for no other figure:
// profiling costs the service CPU of its own.
func (h *harness) profileService(ctx context.Context, v variant, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	v.args = append(append([]string(nil), v.args...), "--pprof")
	s, err := h.launch(ctx, v.name+"-profiled", v.bin, v.args, v.env, v.name+"-profiled.log")
	if err != nil {
		return err
	}
	defer s.stop()
	seconds := max(1, int(h.opts.duration/time.Second))
	cpu := make(chan error, 1)
	start := func() {
		go func() {
			cpu <- fetch(ctx, "http://"+s.admin+"/debug/pprof/profile?seconds="+strconv.Itoa(seconds), filepath.Join(dir, "cpu.pprof"))
		}()
	}
	res, err := s.target.Closed(ctx, h.opts.conns, h.opts.warmup, time.Duration(seconds)*time.Second+500*time.Millisecond, start, func() {})
	if err != nil {
		return fmt.Errorf("closed loop: %w", err)
	}
	if err := <-cpu; err != nil {
		return err
	}
	for _, prof := range profiles {
		if err := fetch(ctx, "http://"+s.admin+prof.path, filepath.Join(dir, prof.file)); err != nil {
			return err
		}
	}
	h.logf("profiled %s: %.0f req/s under profiling; profiles in %s (go tool pprof %s %s)",
		v.name, res.Throughput(), dir, v.bin, filepath.Join(dir, "cpu.pprof"))
	f, err := os.Open(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := cpuprof.Read(f, 15)
	if err != nil {
		return err
	}
	h.run.Profile = &report.Profile{Dir: dir, Conns: h.opts.conns, Throughput: res.Throughput(), Breakdown: b}
	for _, c := range b.Components {
		h.logf("profile: %-36s flat %5.1f %%, through %5.1f %%", c.Name, c.Flat*100, c.Cum*100)
	}
	return nil
}

// fetch saves the body of a GET of url into file.
func fetch(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("fetching %s: %w", url, err)
	}
	return f.Close()
}
