package kube

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plantstore/plantstore/internal/config"
)

// revisionLabel is the label the StatefulSet controller puts on each pod:
// the revision of the pod template it was made from.
const revisionLabel = "controller-revision-hash"

// Pods is the part of Client that Roll uses.
type Pods interface {
	StatefulSet(ctx context.Context, name string) (*StatefulSet, error)
	Pod(ctx context.Context, name string) (*Pod, error)
	DeletePod(ctx context.Context, name, uid string) error
}

// MasterFunc names the current master as the Sentinels do: a host name or
// an IP address.
type MasterFunc func(ctx context.Context) (string, error)

// RollSpec is what Roll restarts, and how.
type RollSpec struct {
	StatefulSet string
	// Partition: pods with a lower ordinal keep their revision (the
	// StatefulSet's rollingUpdate.partition).
	Partition int
	// Poll is the time between two looks at the pods.
	Poll time.Duration
	// Log gets a line for each step.
	Log func(format string, args ...any)
}

// RollOutcome is what a Roll did.
type RollOutcome struct {
	Revision  string
	Restarted []string // the pods, in the order they were restarted
	Master    string   // the master before its restart, if it was restarted
}

// Roll restarts the pods of a Sentinel-mode Redis StatefulSet (updateStrategy
// OnDelete) that run an older revision than its updateRevision: the replicas
// first, highest ordinal first, then the master, whose preStop hands over to
// one of the updated replicas; so a roll costs one failover, wherever the
// master was. Each pod is deleted only while every pod is Ready (a replica is
// Ready once its master link is up), and the next waits for the restarted
// one to be Ready at the new revision. It returns when no pod is left on an
// older revision, or with ctx's error.
func Roll(ctx context.Context, pods Pods, master MasterFunc, spec RollSpec) (RollOutcome, error) {
	var out RollOutcome
	waiting := ""
	wait := func(why string) error {
		if why != waiting {
			spec.Log("roll-redis: waiting: %s", why)
			waiting = why
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w while waiting: %s", ctx.Err(), why)
		case <-time.After(spec.Poll):
			return nil
		}
	}
	for {
		sts, err := pods.StatefulSet(ctx, spec.StatefulSet)
		if err != nil {
			return out, err
		}
		if sts.Status.ObservedGeneration < sts.Metadata.Generation || sts.Status.UpdateRevision == "" {
			if err := wait("the StatefulSet controller has not seen generation " + strconv.FormatInt(sts.Metadata.Generation, 10)); err != nil {
				return out, err
			}
			continue
		}
		out.Revision = sts.Status.UpdateRevision
		current, notReady, err := readPods(ctx, pods, spec.StatefulSet, sts.Spec.Replicas)
		if err != nil {
			return out, err
		}
		var outdated []*Pod
		for i, p := range current {
			if p != nil && i >= spec.Partition && p.Metadata.Labels[revisionLabel] != out.Revision {
				outdated = append(outdated, p)
			}
		}
		if len(outdated) == 0 && notReady == "" {
			spec.Log("roll-redis: %s: every pod at revision %s", spec.StatefulSet, out.Revision)
			return out, nil
		}
		if notReady != "" {
			if err := wait(notReady + " is not Ready"); err != nil {
				return out, err
			}
			continue
		}
		host, err := master(ctx)
		if err != nil {
			if err := wait("the master: " + err.Error()); err != nil {
				return out, err
			}
			continue
		}
		masterPod := podOf(current, host)
		if masterPod == nil {
			if err := wait("the master " + host + " is none of the pods"); err != nil {
				return out, err
			}
			continue
		}
		// The replicas first, highest ordinal first (as the StatefulSet
		// controller would); the master last.
		next := masterPod
		for i := len(outdated) - 1; i >= 0; i-- {
			if outdated[i] != masterPod {
				next = outdated[i]
				break
			}
		}
		role := "replica"
		if next == masterPod {
			role = "master, which hands over to an updated replica as it stops"
			out.Master = next.Metadata.Name
		}
		spec.Log("roll-redis: restarting %s (%s)", next.Metadata.Name, role)
		if err := pods.DeletePod(ctx, next.Metadata.Name, next.Metadata.UID); err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict) {
			return out, err
		}
		out.Restarted = append(out.Restarted, next.Metadata.Name)
		if err := awaitRestart(ctx, pods, next, out.Revision, wait); err != nil {
			return out, err
		}
	}
}

// readPods reads the StatefulSet's pods by ordinal (nil for a missing one)
// and names one that is not Ready, if any.
func readPods(ctx context.Context, pods Pods, sts string, replicas int) ([]*Pod, string, error) {
	current := make([]*Pod, replicas)
	notReady := ""
	for i := range current {
		name := sts + "-" + strconv.Itoa(i)
		p, err := pods.Pod(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, "", err
		default:
			current[i] = p
		}
		if notReady == "" && (current[i] == nil || !current[i].Ready()) {
			notReady = name
		}
	}
	return current, notReady, nil
}

// awaitRestart waits for the pod that replaces old to be Ready at revision.
func awaitRestart(ctx context.Context, pods Pods, old *Pod, revision string, wait func(string) error) error {
	for {
		p, err := pods.Pod(ctx, old.Metadata.Name)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return err
		case p.Metadata.UID != old.Metadata.UID && p.Metadata.Labels[revisionLabel] == revision && p.Ready():
			return nil
		}
		if err := wait(old.Metadata.Name + " to be Ready at revision " + revision); err != nil {
			return err
		}
	}
}

// podOf finds the pod a Sentinel's master address names: its IP, or a host
// name whose first label is the pod's name (the chart's Redis announces
// <pod>.<headless service>...).
func podOf(current []*Pod, host string) *Pod {
	first, _, _ := strings.Cut(host, ".")
	for _, p := range current {
		if p != nil && (p.Status.PodIP == host || (net.ParseIP(host) == nil && p.Metadata.Name == first)) {
			return p
		}
	}
	return nil
}

// SentinelMaster asks each Sentinel for the master of masterName and names
// it when a majority of them answer and all that answer agree: mid-failover
// they may not, and the roll waits.
func SentinelMaster(addrs []string, masterName, username, password string) MasterFunc {
	return func(ctx context.Context) (string, error) {
		var answers, failures []string
		for _, addr := range addrs {
			c := redis.NewSentinelClient(&redis.Options{
				Addr: addr, Username: username, Password: password,
				DialTimeout: 3 * time.Second, ReadTimeout: 3 * time.Second, MaxRetries: -1,
			})
			hp, err := c.GetMasterAddrByName(ctx, masterName).Result()
			_ = c.Close()
			if err != nil || len(hp) != 2 {
				failures = append(failures, fmt.Sprintf("%s: %v", addr, err))
				continue
			}
			answers = append(answers, hp[0])
		}
		switch {
		case len(answers) <= len(addrs)/2:
			return "", fmt.Errorf("%d of %d Sentinels answered (%s)", len(answers), len(addrs), strings.Join(failures, "; "))
		case slices.ContainsFunc(answers, func(a string) bool { return a != answers[0] }):
			return "", fmt.Errorf("the Sentinels disagree: %s", strings.Join(answers, ", "))
		}
		return answers[0], nil
	}
}

// rollUsage heads the help of `plantstore roll-redis`.
const rollUsage = `Usage: plantstore roll-redis --statefulset NAME --sentinels HOST:PORT,... --master-name NAME [flags]

Restarts the pods of the chart's Sentinel-mode Redis that run an older pod
spec than their StatefulSet's (whose updateStrategy is OnDelete): the
replicas first, each once every pod is Ready, then the master, which hands
over to an updated replica as it stops; one failover a roll. The chart runs it
as a post-upgrade and post-rollback hook, in a pod whose service account may
get the StatefulSet and get and delete its pods. The Sentinels' password is
read from ` + config.EnvRedisSentinelPassword + `.

`

// RunRoll is the command: it parses args, rolls through the API server of
// the pod it runs in (or of --server), and reports each step on out.
func RunRoll(ctx context.Context, args []string, out, errOut io.Writer, getenv func(string) string) error {
	spec, cfg, sentinels, masterName, timeout := RollSpec{}, ClientConfig{}, "", "", time.Duration(0)
	fs := newRollFlagSet(errOut, &spec, &cfg, &sentinels, &masterName, &timeout)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case spec.StatefulSet == "" || sentinels == "" || masterName == "":
		return errors.New("--statefulset, --sentinels and --master-name are required")
	case spec.Partition < 0 || spec.Poll <= 0 || timeout <= 0:
		return errors.New("--partition must not be negative, --poll and --timeout must be positive")
	}
	client, err := clientFor(cfg)
	if err != nil {
		return err
	}
	spec.Log = func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	master := SentinelMaster(strings.Split(sentinels, ","), masterName, "", getenv(config.EnvRedisSentinelPassword))
	done, err := Roll(ctx, client, master, spec)
	if err == nil && len(done.Restarted) > 0 {
		spec.Log("roll-redis: restarted %s in %s", strings.Join(done.Restarted, ", "), time.Since(start).Round(time.Second))
	}
	return err
}

// newRollFlagSet declares roll-redis's flags.
func newRollFlagSet(errOut io.Writer, spec *RollSpec, cfg *ClientConfig, sentinels, masterName *string, timeout *time.Duration) *flag.FlagSet {
	fs := commandFlags("roll-redis", rollUsage, errOut)
	fs.StringVar(&spec.StatefulSet, "statefulset", "", "the Redis StatefulSet; its pods are <name>-<ordinal>")
	fs.IntVar(&spec.Partition, "partition", 0, "pods with a lower ordinal keep their revision (the chart's redis.updateStrategy.rollingUpdate.partition)")
	fs.DurationVar(&spec.Poll, "poll", time.Second, "time between two looks at the pods")
	fs.StringVar(sentinels, "sentinels", "", "the Sentinels, host:port separated by commas")
	fs.StringVar(masterName, "master-name", "", "the master's name in the Sentinels")
	fs.DurationVar(timeout, "timeout", 10*time.Minute, "give up after this long")
	clientFlags(fs, cfg)
	return fs
}
