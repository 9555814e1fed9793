package store

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// MemoryCollector exports how close the store is to refusing writes: the
// memory Redis uses and its maxmemory, read with INFO memory at each scrape
// from every master (a Cluster has several; the one nearest its limit is
// reported, since it refuses first). A scrape whose reading fails or takes
// longer than the timeout exports neither, rather than a stale value.
type MemoryCollector struct {
	read      func(ctx context.Context) ([]map[string]string, error)
	timeout   time.Duration
	used, max *prometheus.Desc
}

// NewMemoryCollector returns the collector of client's masters, each
// reading bounded by timeout.
func NewMemoryCollector(client redis.UniversalClient, timeout time.Duration) *MemoryCollector {
	return newMemoryCollector(func(ctx context.Context) ([]map[string]string, error) { return memoryInfo(ctx, client) }, timeout)
}

func newMemoryCollector(read func(ctx context.Context) ([]map[string]string, error), timeout time.Duration) *MemoryCollector {
	return &MemoryCollector{
		read:    read,
		timeout: timeout,
		used: prometheus.NewDesc("plantstore_store_memory_used_bytes",
			"Memory the store uses (Redis used_memory), on the master nearest its maxmemory; read at each scrape. The same on every replica: aggregate with max.", nil, nil),
		max: prometheus.NewDesc("plantstore_store_memory_max_bytes",
			"The store's memory limit (Redis maxmemory; 0: none) on that master. Past it, with noeviction, creates answer 507.", nil, nil),
	}
}

// memoryInfo returns the fields of the INFO memory section of every master
// of client.
func memoryInfo(ctx context.Context, client redis.UniversalClient) ([]map[string]string, error) {
	var mu sync.Mutex
	var infos []map[string]string
	err := eachMaster(ctx, client, func(ctx context.Context, node redis.Cmdable) error {
		info, err := node.InfoMap(ctx, "memory").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		infos = append(infos, info["Memory"])
		mu.Unlock()
		return nil
	})
	return infos, err
}

// Describe implements prometheus.Collector.
func (c *MemoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.used
	ch <- c.max
}

// Collect implements prometheus.Collector.
func (c *MemoryCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	infos, err := c.read(ctx)
	if err != nil || len(infos) == 0 {
		return
	}
	used, limit, ok := nearestLimit(infos)
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(used))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(limit))
}

// nearestLimit picks, of INFO memory sections, the node with the highest
// share of its maxmemory used; when no node has a limit, the one using the
// most. ok is false when a section lacks the fields.
func nearestLimit(infos []map[string]string) (used, limit int64, ok bool) {
	for i, info := range infos {
		u, errU := strconv.ParseInt(info["used_memory"], 10, 64)
		m, errM := strconv.ParseInt(info["maxmemory"], 10, 64)
		if errU != nil || errM != nil {
			return 0, 0, false
		}
		if i == 0 || fuller(u, m, used, limit) {
			used, limit = u, m
		}
	}
	return used, limit, true
}

// fuller: a node using u of its limit m is nearer refusing writes than one
// using used of limit (0: no limit, which never refuses).
func fuller(u, m, used, limit int64) bool {
	switch {
	case (m > 0) != (limit > 0):
		return m > 0
	case m > 0:
		return float64(u)/float64(m) > float64(used)/float64(limit)
	default:
		return u > used
	}
}
