package store

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
)

// BenchmarkCreateParallel: creates of distinct plants from about 50
// goroutines at once (the 50 connections), each with the service's
// 1 s store deadline, on a redis-server that fsyncs every write (appendfsync
// always, as the chart's), with one round trip per create (plain) and
// through the Batcher with 2 and 4 pipelines in flight. Besides ns/op it reports ops/s,
// the CPU time redis-server (INFO cpu) and this process spent per 1,000
// creates, and the batches' mean size.
//
//	go test -run '^$' -bench CreateParallel -benchtime 3s -count 3 ./internal/store/
func BenchmarkCreateParallel(b *testing.B) {
	srv := redistest.Start(b, "--appendonly", "yes", "--appendfsync", "always")
	parallelism := max(1, 50/runtime.GOMAXPROCS(0))
	admin := srv.Client()
	var ids atomic.Int64
	for _, bc := range []struct {
		name  string
		batch *BatchOptions
	}{
		{"plain", nil},
		{"batch-inflight=2", &BatchOptions{InFlight: 2}},
		{"batch-inflight=4", &BatchOptions{InFlight: 4}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			client, err := NewRedisClient(RedisOptions{Addrs: []string{srv.Addr},
				DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			r := NewRedis(client, "plantstore:")
			reg := prometheus.NewRegistry()
			if bc.batch != nil {
				batcher, err := NewBatcher(client, *bc.batch, reg)
				if err != nil {
					b.Fatal(err)
				}
				defer batcher.Close()
				r.Batch(batcher)
			}
			ctx := context.Background()
			redisCPU := func() float64 { return infoCPU(b, admin) }
			startRedis, startSelf, start := redisCPU(), selfCPU(), time.Now()
			b.SetParallelism(parallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := ids.Add(1)
					octx, cancel := context.WithTimeout(ctx, time.Second)
					_, _, err := r.Create(octx, plant.Plant{ID: id, Name: "bench"})
					cancel()
					if err != nil {
						b.Errorf("create %d: %v", id, err)
						return
					}
				}
			})
			b.StopTimer()
			elapsed, ops := time.Since(start), float64(b.N)
			b.ReportMetric(ops/elapsed.Seconds(), "ops/s")
			b.ReportMetric((redisCPU()-startRedis)*1e3/ops*1e3, "redis-cpu-ms/1k-ops")
			b.ReportMetric((selfCPU()-startSelf)*1e3/ops*1e3, "client-cpu-ms/1k-ops")
			if bc.batch != nil {
				b.ReportMetric(meanBatch(b, reg), "commands/batch")
			}
		})
	}
}

// infoCPU is the CPU time redis-server has used, user and system, in seconds.
func infoCPU(b *testing.B, admin redis.Cmdable) float64 {
	info, err := admin.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(fmt.Errorf("INFO cpu %s: %w", k, err))
			}
			total += f
		}
	}
	return total
}

// selfCPU is the CPU time this process has used, user and system, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// meanBatch is the mean size of the batches on reg so far.
func meanBatch(b *testing.B, reg *prometheus.Registry) float64 {
	families, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "plantstore_redis_batch_size" {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleSum() / float64(h.GetSampleCount())
		}
	}
	b.Fatal("no plantstore_redis_batch_size")
	return 0
}
