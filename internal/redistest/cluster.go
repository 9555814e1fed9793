package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters (and replicas added later) on
// loopback, owned by a test.
type Cluster struct {
	t testing.TB
	// Masters hold the 16384 slots, spread evenly by redis-cli.
	Masters  []*Server
	Replicas []*Server
	extra    []string
	busPorts map[*Server]int
	host     string // every node's loopback address, the cluster's own (ownLoopback)
}

// CLI returns the path of redis-cli: $REDIS_CLI, then PATH, then Debian's
// location.
func CLI() (string, error) {
	return find("redis-cli", "REDIS_CLI", "apt-get install redis-tools")
}

// startNode starts a cluster-enabled redis-server with its own cluster bus
// port (a second free port, not port+10000, which may be taken).
func (c *Cluster) startNode() *Server {
	c.t.Helper()
	var bus int
	s := startOnFreePorts(c.t, c.host, 2, func(ports []int) []string {
		bus = ports[1]
		return append(append(hostArgs(c.host),
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			// Small, for quick failure detection, yet above the stalls of a
			// loaded 2-core machine (over a second has been seen), which would
			// otherwise mark live nodes failed and take the cluster down.
			"--cluster-node-timeout", "3000", "--cluster-port", strconv.Itoa(bus),
			// A replica takes over at once, whatever its link's age.
			"--cluster-replica-validity-factor", "0",
		), c.extra...)
	})
	c.busPorts[s] = bus
	return s
}

// StartCluster starts masters cluster-enabled redis-servers (three when 0)
// on free loopback ports, assigns each an even range of the slots and waits until every node reports cluster_state:ok and knows every other.
// extra is appended to every node's command line (e.g. AOF). Everything is
// killed when the test ends; the test fails (never skips) when the cluster
// cannot be formed.
func StartCluster(t testing.TB, masters int, extra ...string) *Cluster {
	t.Helper()
	if masters == 0 {
		masters = 3
	}
	c := &Cluster{t: t, extra: extra, busPorts: map[*Server]int{}, host: ownLoopback()}
	for i := 0; i < masters; i++ {
		c.Masters = append(c.Masters, c.startNode())
	}
	// What redis-cli --cluster create does, without its one-second polls:
	// each master takes an even range of slots and its own config epoch,
	// then meets the first.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, s := range c.Masters {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		start, end := i*16384/masters, (i+1)*16384/masters-1
		err := cl.Do(ctx, "cluster", "addslotsrange", start, end).Err()
		if err == nil {
			err = cl.Do(ctx, "cluster", "set-config-epoch", i+1).Err()
		}
		if err == nil && i > 0 {
			host, port, _ := net.SplitHostPort(c.Masters[0].Addr)
			err = cl.Do(ctx, "cluster", "meet", host, port, c.busPorts[c.Masters[0]]).Err()
		}
		_ = cl.Close()
		if err != nil {
			t.Fatalf("forming the cluster on %s: %v", s.Addr, err)
		}
	}
	c.WaitOK(60 * time.Second)
	return c
}

// Addrs are the masters' addresses, for --redis-addr.
func (c *Cluster) Addrs() []string { return addrs(c.Masters) }

// Nodes are every node of the cluster, masters first.
func (c *Cluster) Nodes() []*Server {
	return append(append([]*Server(nil), c.Masters...), c.Replicas...)
}

// WaitOK waits until every running node reports cluster_state:ok, all 16384
// slots assigned and every node known.
func (c *Cluster) WaitOK(within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	want := strconv.Itoa(len(c.Nodes()))
	for _, s := range c.Nodes() {
		if s.cmd == nil {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err := cl.ClusterInfo(ctx).Result()
			cancel()
			f := infoFields(info)
			if err == nil && f["cluster_state"] == "ok" && f["cluster_slots_assigned"] == "16384" &&
				f["cluster_slots_ok"] == "16384" && f["cluster_known_nodes"] == want {
				break
			}
			if time.Now().After(deadline) {
				_ = cl.Close()
				c.t.Fatalf("cluster node %s not ok with %s nodes within %v: %v\n%s", s.Addr, want, within, err, info)
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = cl.Close()
	}
}

// NodeID is the cluster node id of s.
func (c *Cluster) NodeID(s *Server) string {
	c.t.Helper()
	cl := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := cl.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		c.t.Fatalf("CLUSTER MYID on %s: %v", s.Addr, err)
	}
	return id
}

// AddReplica starts a node, joins it to the cluster as a replica of master
// and waits until it is in sync and every node knows it.
func (c *Cluster) AddReplica(master *Server) *Server {
	c.t.Helper()
	r := c.startNode()
	masterID := c.NodeID(master)
	cl := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer cl.Close()
	host, port, _ := net.SplitHostPort(master.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// MEET names the cluster bus port: it is not port+10000 here.
	if err := cl.Do(ctx, "cluster", "meet", host, port, c.busPorts[master]).Err(); err != nil {
		c.t.Fatalf("CLUSTER MEET from %s: %v", r.Addr, err)
	}
	// REPLICATE needs the new node to know the master through gossip first.
	for {
		err := cl.ClusterReplicate(ctx, masterID).Err()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			c.t.Fatalf("CLUSTER REPLICATE %s on %s: %v (last: %v)", masterID, r.Addr, ctx.Err(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.Replicas = append(c.Replicas, r)
	WaitReplicas(c.t, master, 1, 30*time.Second)
	c.WaitOK(30 * time.Second)
	return r
}

// MasterOfSlot returns the master serving slot, as the first running master
// sees the slot map.
func (c *Cluster) MasterOfSlot(ctx context.Context, slot int) (*Server, error) {
	for _, s := range c.Masters {
		if s.cmd == nil {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		slots, err := SlotMap(ctx, cl)
		_ = cl.Close()
		if err != nil {
			continue
		}
		for _, r := range slots {
			if slot >= r.Start && slot <= r.End {
				for _, n := range c.Nodes() {
					if n.Addr == r.Master {
						return n, nil
					}
				}
				return nil, fmt.Errorf("slot %d served by %s, not a node of the cluster", slot, r.Master)
			}
		}
		return nil, fmt.Errorf("slot %d not assigned", slot)
	}
	return nil, fmt.Errorf("no master answered CLUSTER SLOTS")
}

// Dir is the server's data directory (its log is redis.log there).
func (s *Server) Dir() string { return s.dir }

// Log returns the server's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return string(b)
}

// Running reports whether the process is started (and not stopped by Stop).
func (s *Server) Running() bool { return s.cmd != nil }

// SlotRange is a range of hash slots and the address of the master that
// serves it.
type SlotRange struct {
	Start, End int
	Master     string
}

// SlotMap reads which master serves which slots (CLUSTER SHARDS) from the
// node behind c.
func SlotMap(ctx context.Context, c redis.Cmdable) ([]SlotRange, error) {
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		return nil, err
	}
	var out []SlotRange
	for _, sh := range shards {
		master := ""
		for _, n := range sh.Nodes {
			if n.Role == "master" {
				master = net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
			}
		}
		if master == "" {
			continue
		}
		for _, r := range sh.Slots {
			out = append(out, SlotRange{Start: int(r.Start), End: int(r.End), Master: master})
		}
	}
	return out, nil
}
