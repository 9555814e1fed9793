package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
)

// set is a Sentinel-mode Redis StatefulSet as the roll sees it: pods that
// the StatefulSet controller recreates at the update revision when deleted,
// and the master the Sentinels name, which moves to a replica when the
// master's pod is deleted (its preStop hand-over).
type set struct {
	mu        sync.Mutex
	replicas  int
	revision  string
	observed  bool // the controller has seen the spec
	pods      []*Pod
	master    int
	uids      int
	unready   map[string]int // a pod stays not Ready for this many more looks
	deleted   []string
	masterErr int // the next master lookups that fail
	// handOver picks the replica the Sentinels promote; by default the
	// highest-ordinal one at the update revision, else any.
	handOver func(s *set) int
}

func newSet(replicas, master int) *set {
	s := &set{replicas: replicas, revision: "new", observed: true, master: master, unready: map[string]int{}}
	for i := range replicas {
		s.pods = append(s.pods, s.pod(i, "old"))
	}
	return s
}

func (s *set) pod(i int, revision string) *Pod {
	s.uids++
	p := &Pod{Metadata: Metadata{Name: "ps-redis-" + strconv.Itoa(i), UID: "uid-" + strconv.Itoa(s.uids), Labels: map[string]string{revisionLabel: revision}}}
	p.Status.PodIP = "10.0.0." + strconv.Itoa(i+1)
	p.Status.Conditions = append(p.Status.Conditions, struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	}{"Ready", "True"})
	return p
}

func (s *set) StatefulSet(_ context.Context, name string) (*StatefulSet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name != "ps-redis" {
		return nil, fmt.Errorf("get statefulset %s: %w", name, ErrNotFound)
	}
	var sts StatefulSet
	sts.Metadata.Generation = 2
	sts.Spec.Replicas = s.replicas
	if s.observed {
		sts.Status.ObservedGeneration, sts.Status.UpdateRevision = 2, s.revision
	} else {
		sts.Status.ObservedGeneration, sts.Status.UpdateRevision, s.observed = 1, "old", true
	}
	return &sts, nil
}

func (s *set) Pod(_ context.Context, name string) (*Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pods {
		if p.Metadata.Name != name {
			continue
		}
		cp := *p
		if s.unready[name] > 0 {
			s.unready[name]--
			cp.Status.Conditions = nil
		}
		return &cp, nil
	}
	return nil, fmt.Errorf("get pod %s: %w", name, ErrNotFound)
}

func (s *set) DeletePod(_ context.Context, name, uid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.pods {
		if p.Metadata.Name != name {
			continue
		}
		if p.Metadata.UID != uid {
			return fmt.Errorf("delete pod %s: %w", name, ErrConflict)
		}
		s.deleted = append(s.deleted, name)
		if i == s.master {
			s.master = s.handOver(s)
		}
		s.pods[i] = s.pod(i, s.revision)
		s.unready[name] = 2 // starting, then syncing with its master
		return nil
	}
	return fmt.Errorf("delete pod %s: %w", name, ErrNotFound)
}

func updatedReplica(s *set) int {
	for i := len(s.pods) - 1; i >= 0; i-- {
		if i != s.master && s.pods[i].Metadata.Labels[revisionLabel] == s.revision {
			return i
		}
	}
	return (s.master + 1) % len(s.pods)
}

func (s *set) masterHost(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.masterErr > 0 {
		s.masterErr--
		return "", errors.New("the Sentinels disagree: a, b")
	}
	return fmt.Sprintf("ps-redis-%d.ps-redis-headless.shop.svc", s.master), nil
}

func rollSpec(t *testing.T, lines *[]string) RollSpec {
	return RollSpec{StatefulSet: "ps-redis", Poll: time.Millisecond, Log: func(format string, args ...any) {
		*lines = append(*lines, fmt.Sprintf(format, args...))
		t.Logf(format, args...)
	}}
}

// TestRollReplicasFirst: wherever the master is, the replicas restart
// first (highest ordinal first), then the master, and the master role
// moves once, to an updated replica.
func TestRollReplicasFirst(t *testing.T) {
	for _, tc := range []struct {
		replicas, master int
		want             []string
	}{
		{3, 0, []string{"ps-redis-2", "ps-redis-1", "ps-redis-0"}},
		{3, 1, []string{"ps-redis-2", "ps-redis-0", "ps-redis-1"}},
		{3, 2, []string{"ps-redis-1", "ps-redis-0", "ps-redis-2"}},
		{5, 3, []string{"ps-redis-4", "ps-redis-2", "ps-redis-1", "ps-redis-0", "ps-redis-3"}},
	} {
		t.Run(fmt.Sprintf("%d servers, master %d", tc.replicas, tc.master), func(t *testing.T) {
			s := newSet(tc.replicas, tc.master)
			s.handOver = updatedReplica
			var lines []string
			out, err := Roll(context.Background(), s, s.masterHost, rollSpec(t, &lines))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.deleted, tc.want) || !slices.Equal(out.Restarted, tc.want) {
				t.Fatalf("restarted %v (reported %v), want %v", s.deleted, out.Restarted, tc.want)
			}
			if want := fmt.Sprintf("ps-redis-%d", tc.master); out.Master != want {
				t.Fatalf("master %q, want %q", out.Master, want)
			}
			if s.master == tc.master {
				t.Fatal("the master role never moved")
			}
			for _, p := range s.pods {
				if p.Metadata.Labels[revisionLabel] != "new" {
					t.Fatalf("%s left at %s", p.Metadata.Name, p.Metadata.Labels[revisionLabel])
				}
			}
			if last := lines[len(lines)-1]; !strings.Contains(last, "every pod at revision new") {
				t.Fatalf("last line %q", last)
			}
		})
	}
}

// TestRollWaits: nothing is deleted before the controller has seen the new
// spec, while a pod is not Ready, or while the Sentinels do not name a
// master; a partition keeps the lower ordinals; a set at its revision is
// left alone.
func TestRollWaits(t *testing.T) {
	s := newSet(3, 0)
	s.handOver = updatedReplica
	s.observed = false
	s.unready["ps-redis-1"] = 3
	s.masterErr = 2
	var lines []string
	spec := rollSpec(t, &lines)
	spec.Partition = 1
	out, err := Roll(context.Background(), s, s.masterHost, spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ps-redis-2", "ps-redis-1"}; !slices.Equal(s.deleted, want) || out.Master != "" {
		t.Fatalf("restarted %v (master %q), want %v and the master (below the partition) kept", s.deleted, out.Master, want)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"has not seen generation 2", "ps-redis-1 is not Ready", "the Sentinels disagree", "ps-redis-2 to be Ready at revision new"} {
		if !strings.Contains(text, want) {
			t.Errorf("no line says %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "ps-redis-1 is not Ready") > strings.Index(text, "restarting ps-redis-2") {
		t.Error("a pod was deleted while another was not Ready")
	}

	s.deleted = nil
	if _, err := Roll(context.Background(), s, s.masterHost, spec); err != nil || len(s.deleted) > 0 {
		t.Fatalf("a second roll restarted %v (%v)", s.deleted, err)
	}
}

// TestRollFails: a pod that never becomes Ready, a master that is none of
// the pods, and an API error end the roll with an error that says which.
func TestRollFails(t *testing.T) {
	stuck := newSet(3, 0)
	stuck.handOver = updatedReplica
	stuck.unready["ps-redis-2"] = 1 << 30
	orphan := newSet(3, 0)
	orphan.handOver = updatedReplica
	for _, tc := range []struct {
		name   string
		pods   Pods
		master MasterFunc
		want   string
	}{
		{"never Ready", stuck, stuck.masterHost, "ps-redis-2 is not Ready"},
		{"master elsewhere", orphan, func(context.Context) (string, error) { return "10.9.9.9", nil }, "the master 10.9.9.9 is none of the pods"},
		{"no StatefulSet", orphan, orphan.masterHost, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			var lines []string
			spec := rollSpec(t, &lines)
			if tc.name == "no StatefulSet" {
				spec.StatefulSet = "other"
			}
			_, err := Roll(ctx, tc.pods, tc.master, spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
	if len(stuck.deleted)+len(orphan.deleted) > 0 {
		t.Fatalf("deleted %v %v", stuck.deleted, orphan.deleted)
	}
}

// TestPodOf: a Sentinel names the master by IP or by the host name the
// chart's Redis announces.
func TestPodOf(t *testing.T) {
	s := newSet(3, 0)
	for host, want := range map[string]string{
		"10.0.0.2": "ps-redis-1",
		"ps-redis-2.ps-redis-headless.shop.svc.cluster.local": "ps-redis-2",
		"ps-redis-0":                   "ps-redis-0",
		"10.0.0.9":                     "",
		"ps-redis-7.ps-redis-headless": "",
	} {
		got := ""
		if p := podOf(s.pods, host); p != nil {
			got = p.Metadata.Name
		}
		if got != want {
			t.Errorf("podOf(%q) = %q, want %q", host, got, want)
		}
	}
}

// TestSentinelMaster asks real Sentinels: the master while a majority
// answers, an error naming the silent ones when only one does.
func TestSentinelMaster(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	master := SentinelMaster(g.SentinelAddrs(), g.MasterName, "", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want, _, _ := strings.Cut(g.Servers[0].Addr, ":")
	if got, err := master(ctx); err != nil || got != want {
		t.Fatalf("master %q (%v), want %q", got, err, want)
	}
	if _, err := SentinelMaster(g.SentinelAddrs(), "other", "", "")(ctx); err == nil {
		t.Fatal("a master name no Sentinel knows was answered")
	}
	g.Sentinels[0].Stop()
	if got, err := master(ctx); err != nil || got != want {
		t.Fatalf("with 2 of 3 Sentinels: master %q (%v), want %q", got, err, want)
	}
	g.Sentinels[1].Stop()
	if _, err := master(ctx); err == nil || !strings.Contains(err.Error(), "1 of 3 Sentinels answered") || !strings.Contains(err.Error(), g.Sentinels[0].Addr) {
		t.Fatalf("with 1 of 3 Sentinels: %v", err)
	}
}

// TestRollClient: the API calls the roll makes, against the API server's
// paths, with the UID precondition on delete and 404 as ErrNotFound.
func TestRollClient(t *testing.T) {
	a, cfg := newAPIServer(t)
	var deleteBody map[string]any
	a.extra = func(w http.ResponseWriter, r *http.Request) bool {
		switch r.Method + " " + r.URL.Path {
		case "GET /apis/apps/v1/namespaces/shop/statefulsets/ps-redis":
			_, _ = w.Write([]byte(`{"metadata":{"name":"ps-redis","generation":3},"spec":{"replicas":3,"updateStrategy":{"type":"OnDelete"}},"status":{"observedGeneration":3,"updateRevision":"ps-redis-abc"}}`))
		case "GET /api/v1/namespaces/shop/pods/ps-redis-0":
			_, _ = w.Write([]byte(`{"metadata":{"name":"ps-redis-0","uid":"u0","labels":{"controller-revision-hash":"ps-redis-abc"}},"status":{"podIP":"10.1.2.3","conditions":[{"type":"Ready","status":"True"}]}}`))
		case "DELETE /api/v1/namespaces/shop/pods/ps-redis-0":
			_ = json.NewDecoder(r.Body).Decode(&deleteBody)
			_, _ = w.Write([]byte(`{}`))
		default:
			return false
		}
		return true
	}
	c, err := NewClient(cfg)
	must(t, err)
	ctx := context.Background()
	sts, err := c.StatefulSet(ctx, "ps-redis")
	must(t, err)
	if sts.Spec.Replicas != 3 || sts.Status.UpdateRevision != "ps-redis-abc" || sts.Metadata.Generation != 3 || sts.Spec.UpdateStrategy.Type != "OnDelete" {
		t.Fatalf("statefulset %+v", sts)
	}
	p, err := c.Pod(ctx, "ps-redis-0")
	must(t, err)
	if !p.Ready() || p.Status.PodIP != "10.1.2.3" || p.Metadata.UID != "u0" || p.Metadata.Labels[revisionLabel] != "ps-redis-abc" {
		t.Fatalf("pod %+v", p)
	}
	must(t, c.DeletePod(ctx, "ps-redis-0", "u0"))
	if pre, _ := deleteBody["preconditions"].(map[string]any); pre["uid"] != "u0" {
		t.Fatalf("delete options %v", deleteBody)
	}
	if _, err := c.Pod(ctx, "ps-redis-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing pod: %v", err)
	}
}
