package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartReplica starts a redis-server replicating master and waits until the
// master counts it as an online replica with its offset caught up.
func StartReplica(t testing.TB, master *Server, extra ...string) *Server {
	t.Helper()
	host, port, _ := net.SplitHostPort(master.Addr)
	r := Start(t, append([]string{"--replicaof", host, port}, extra...)...)
	WaitReplicas(t, master, 1, 15*time.Second)
	return r
}

// WaitReplicas waits until master has at least n online replicas that hold
// everything written so far. It fails the test after within.
func WaitReplicas(t testing.TB, master *Server, n int, within time.Duration) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: master.Addr, Password: master.Password, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(within)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		last = replicasInSync(ctx, c, n)
		cancel()
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has not %d replica(s) in sync after %v: %s", master.Addr, n, within, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replicasInSync returns "" when the master behind c has n replicas in sync,
// and otherwise what is missing. Online is not enough: after a sync a replica
// gets the command stream only from its first acknowledgement on, up to a
// second later. So it writes (and deletes) a key and WAITs for it on the
// same connection: the replicas that acknowledge it hold everything written
// before.
func replicasInSync(ctx context.Context, c *redis.Client, n int) string {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return err.Error()
	}
	fields := infoFields(info)
	if fields["role"] != "master" {
		return "not a master: " + info
	}
	online := 0
	for i := 0; ; i++ {
		v, ok := fields["slave"+strconv.Itoa(i)]
		if !ok {
			break
		}
		if strings.Contains(v, "state=online") {
			online++
		}
	}
	if online < n {
		return fmt.Sprintf("%d replicas online: %s", online, info)
	}
	key, err := ownKey(ctx, c)
	if err != nil {
		return err.Error()
	}
	var wait *redis.Cmd
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, "1", 0)
		p.Del(ctx, key)
		wait = p.Do(ctx, "wait", n, 200)
		return nil
	}); err != nil {
		return fmt.Sprintf("write and WAIT: %v", err)
	}
	if acked, _ := wait.Int64(); acked < int64(n) {
		return fmt.Sprintf("%d of %d replicas acknowledged a write", acked, n)
	}
	return ""
}

// ownKey returns a key the server behind c accepts writes of: any key on a
// single node, one of its own slots in a Cluster.
func ownKey(ctx context.Context, c *redis.Client) (string, error) {
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil {
		return "", err
	}
	if infoFields(info)["cluster_enabled"] != "1" {
		return "redistest:sync", nil
	}
	myself := c.Options().Addr
	slots, err := SlotMap(ctx, c)
	if err != nil {
		return "", err
	}
	for i := 0; i < 1000; i++ {
		key := "redistest:sync:{" + strconv.Itoa(i) + "}"
		slot, err := c.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return "", err
		}
		for _, r := range slots {
			if int64(r.Start) <= slot && slot <= int64(r.End) && r.Master == myself {
				return key, nil
			}
		}
	}
	return "", fmt.Errorf("%s serves no slot", myself)
}

func infoFields(info string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// SentinelGroup is a master, its replicas and three sentinels watching them
// (quorum 2), all on loopback, owned by a test.
type SentinelGroup struct {
	t          testing.TB
	MasterName string
	// Servers are the data nodes: Servers[0] started as the master. After a
	// failover ask CurrentMaster which one is.
	Servers   []*Server
	Sentinels []*Server
}

// SentinelOptions tune a group; zero values take the defaults.
type SentinelOptions struct {
	Replicas int // default 1
	// DownAfter is the sentinels' down-after-milliseconds (default 1s) and
	// FailoverTimeout their failover-timeout (default 3s).
	DownAfter       time.Duration
	FailoverTimeout time.Duration
	// Extra is appended to every data node's command line (e.g. AOF).
	Extra []string
	// Hosts[i] is the loopback address of data node i (0: the first
	// master) and of sentinel i; default one address of the group's own
	// (ownLoopback) for all, 127.0.0.1 past a shorter list (see StartOn).
	Hosts []string
}

// host is the address of data node and sentinel i.
func (o SentinelOptions) host(i int) string {
	if i < len(o.Hosts) {
		return o.Hosts[i]
	}
	return "127.0.0.1"
}

// StartSentinelGroup starts a master, opts.Replicas replicas and three
// sentinels (quorum 2) on free loopback ports, and waits until every
// sentinel knows the master, every replica and the two other sentinels, and
// the replicas are in sync. Everything is killed when the test ends. It fails
// the test (never skips) when something does not start.
func StartSentinelGroup(t testing.TB, opts SentinelOptions) *SentinelGroup {
	t.Helper()
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.DownAfter == 0 {
		opts.DownAfter = time.Second
	}
	if opts.FailoverTimeout == 0 {
		opts.FailoverTimeout = 3 * time.Second
	}
	if len(opts.Hosts) == 0 {
		own := ownLoopback()
		for range max(opts.Replicas+1, 3) {
			opts.Hosts = append(opts.Hosts, own)
		}
	}
	g := &SentinelGroup{t: t, MasterName: "plantstore-test"}
	master := StartOn(t, opts.host(0), opts.Extra...)
	g.Servers = append(g.Servers, master)
	host, port, _ := net.SplitHostPort(master.Addr)
	for i := 1; i <= opts.Replicas; i++ {
		g.Servers = append(g.Servers, StartOn(t, opts.host(i), append([]string{"--replicaof", host, port}, opts.Extra...)...))
	}
	WaitReplicas(t, master, opts.Replicas, 20*time.Second)

	for i := range 3 {
		s := launchOnFreePorts(t, opts.host(i), 1, func(ports []int, dir string) []string {
			conf := filepath.Join(dir, "sentinel.conf")
			text := fmt.Sprintf(`port %d
bind %s
dir %s
logfile %s
sentinel monitor %s %s %s 2
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s 1
`, ports[0], opts.host(i), dir, filepath.Join(dir, "redis.log"), g.MasterName, host, port,
				g.MasterName, opts.DownAfter.Milliseconds(), g.MasterName, opts.FailoverTimeout.Milliseconds(), g.MasterName)
			if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			return append([]string{conf, "--sentinel"}, hostArgs(opts.host(i))...)
		})
		g.Sentinels = append(g.Sentinels, s)
	}
	g.WaitAgreed(master.Addr, opts.Replicas, 30*time.Second)
	return g
}

// SentinelAddrs are the sentinels' addresses, for --redis-addr.
func (g *SentinelGroup) SentinelAddrs() []string { return addrs(g.Sentinels) }

// WaitAgreed waits until every running sentinel names master as the master,
// sees at least replicas replicas and the two other sentinels, and reports no
// failover in progress.
func (g *SentinelGroup) WaitAgreed(master string, replicas int, within time.Duration) {
	g.t.Helper()
	deadline := time.Now().Add(within)
	for _, s := range g.Sentinels {
		if s.cmd == nil {
			continue
		}
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			m, err := c.Master(ctx, g.MasterName).Result()
			cancel()
			var state string
			if err == nil {
				addr := net.JoinHostPort(m["ip"], m["port"])
				others, _ := strconv.Atoi(m["num-other-sentinels"])
				slaves, _ := strconv.Atoi(m["num-slaves"])
				if addr == master && others >= 2 && slaves >= replicas && !strings.Contains(m["flags"], "failover") && !strings.Contains(m["flags"], "down") {
					break
				}
				state = fmt.Sprintf("master %s, %d other sentinels, %d replicas, flags %s", addr, others, slaves, m["flags"])
			} else {
				state = err.Error()
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
				_ = c.Close()
				g.t.Fatalf("sentinel %s did not agree on master %s with %d replica(s) within %v: %s\n%s", s.Addr, master, replicas, within, state, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = c.Close()
	}
}

// CurrentMaster asks the sentinels which data node is the master now.
func (g *SentinelGroup) CurrentMaster(ctx context.Context) (*Server, error) {
	var lastErr error
	for _, s := range g.Sentinels {
		if s.cmd == nil {
			continue
		}
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		addr, err := c.GetMasterAddrByName(ctx, g.MasterName).Result()
		_ = c.Close()
		if err != nil {
			lastErr = err
			continue
		}
		a := net.JoinHostPort(addr[0], addr[1])
		for _, srv := range g.Servers {
			if srv.Addr == a {
				return srv, nil
			}
		}
		return nil, fmt.Errorf("sentinel %s names %s, not a server of the group", s.Addr, a)
	}
	return nil, fmt.Errorf("no sentinel answered: %v", lastErr)
}
