// Command k8s-load is the open-loop create load of the cluster scenarios
// (tools/k8s/cluster.sh). It runs in a pod of the release's namespace and
// posts fresh plants to the Service at a fixed rate whatever the answers
// take, so that a slow or missing replica shows as errors rather than as a
// slower load. It classifies every answer, checks afterwards that every
// acknowledged plant is stored, and prints one JSON summary line.
//
//	k8s-load -url http://plantstore:8080 -token-file /etc/load/tokens -rate 250 -duration 60s
//
// The summary's times are Unix milliseconds of this machine's clock, so the
// harness can set them against the events it caused (a rollout, a deleted
// pod) on the same node.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.url, "url", "", "base URL of the API, e.g. http://plantstore:8080")
	flag.StringVar(&o.tokenFile, "token-file", "", "tokens file: the first raw token is used")
	flag.Float64Var(&o.rate, "rate", 200, "creates per second (open loop)")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long to send")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Second, "deadline of one request")
	flag.IntVar(&o.maxInFlight, "max-in-flight", 1000, "requests in flight at most; a tick beyond it counts as a generator stall")
	flag.DurationVar(&o.verifyFor, "verify-for", 60*time.Second, "how long the check of acknowledged plants may take")
	flag.Parse()
	if o.url == "" || o.tokenFile == "" || o.rate <= 0 || o.duration <= 0 {
		fmt.Fprintln(os.Stderr, "k8s-load: -url, -token-file, a positive -rate and -duration are required")
		os.Exit(2)
	}
	token, err := firstToken(o.tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8s-load:", err)
		os.Exit(2)
	}
	o.token = token
	s := run(context.Background(), o)
	_ = json.NewEncoder(os.Stdout).Encode(s)
}

type options struct {
	url, tokenFile, token string
	rate                  float64
	duration, timeout     time.Duration
	verifyFor             time.Duration
	maxInFlight           int
}

// firstToken is the first raw token of a tokens file: comments, blank lines
// and sha256: digests are skipped, attributes after the token ignored.
func firstToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") || strings.HasPrefix(fields[0], "sha256:") {
			continue
		}
		return fields[0], nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s holds no raw token", path)
}

// Summary is what one run measured.
type Summary struct {
	Start, End int64 // Unix ms of the first and the last send
	Sent       int
	Codes      map[int]int // answers by status
	// TransportErrors are requests without an HTTP answer: refused, reset,
	// EOF, timed out. ErrorSamples holds the first few.
	TransportErrors int
	ErrorSamples    []string
	// Unavailable are the 503s; NoRetryAfter those of them without Retry-After.
	Unavailable       int
	NoRetryAfter      int
	First503, Last503 int64 // Unix ms; 0 when none
	// FirstOKAfter503 is the first 200 sent after the last 503 (Unix ms).
	FirstOKAfter503 int64
	Stalls          int // ticks skipped because max-in-flight requests were open
	LatencyP50Ms    float64
	LatencyP99Ms    float64
	LatencyMaxMs    float64
	Acknowledged    int
	Verified        int // acknowledged plants found stored afterwards
	Lost            []int64
	Unverifiable    int // checks that got no clear answer within -verify-for
}

type result struct {
	id      int64
	sent    time.Time
	latency time.Duration
	code    int
	retry   bool
	err     error
}

func run(ctx context.Context, o options) Summary {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
	client := &http.Client{Transport: tr, Timeout: o.timeout}
	base := idBase()

	results := make(chan result, 4096)
	var wg sync.WaitGroup
	inFlight := make(chan struct{}, o.maxInFlight)
	stalls := 0
	interval := time.Duration(float64(time.Second) / o.rate)
	start := time.Now()
	var n int64
	go func() {
		defer close(results)
		for next := start; time.Since(start) < o.duration; next = next.Add(interval) {
			time.Sleep(time.Until(next))
			select {
			case inFlight <- struct{}{}:
			default:
				stalls++
				continue
			}
			id := base + n
			n++
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-inFlight }()
				results <- create(ctx, client, o, id, fmt.Sprintf("load-%d", id))
			}()
		}
		wg.Wait()
	}()

	s := Summary{Codes: map[int]int{}}
	var acked []int64
	var ackedAt []int64 // send time of each acknowledged create, Unix ms
	var lat []float64
	var last503 int64
	for r := range results {
		s.Sent++
		ms := r.sent.UnixMilli()
		if s.Start == 0 || ms < s.Start {
			s.Start = ms
		}
		if ms > s.End {
			s.End = ms
		}
		if r.err != nil {
			s.TransportErrors++
			if len(s.ErrorSamples) < 5 {
				s.ErrorSamples = append(s.ErrorSamples, r.err.Error())
			}
			continue
		}
		s.Codes[r.code]++
		lat = append(lat, float64(r.latency.Microseconds())/1000)
		switch r.code {
		case http.StatusOK:
			acked = append(acked, r.id)
			ackedAt = append(ackedAt, ms)
		case http.StatusServiceUnavailable:
			s.Unavailable++
			if !r.retry {
				s.NoRetryAfter++
			}
			if s.First503 == 0 || ms < s.First503 {
				s.First503 = ms
			}
			if ms > last503 {
				last503 = ms
			}
		}
	}
	s.Stalls = stalls
	s.Last503 = last503
	sort.Float64s(lat)
	if len(lat) > 0 {
		s.LatencyP50Ms = lat[len(lat)/2]
		s.LatencyP99Ms = lat[len(lat)*99/100]
		s.LatencyMaxMs = lat[len(lat)-1]
	}
	s.Acknowledged = len(acked)
	for _, at := range ackedAt {
		if last503 != 0 && at > last503 && (s.FirstOKAfter503 == 0 || at < s.FirstOKAfter503) {
			s.FirstOKAfter503 = at
		}
	}
	s.Verified, s.Lost, s.Unverifiable = verify(ctx, client, o, acked)
	return s
}

// idBase is a random positive base for this run's ids, far from other runs'.
func idBase() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>2) &^ (1<<24 - 1) // 2^24 ids of room
}

func create(ctx context.Context, client *http.Client, o options, id int64, name string) result {
	body := fmt.Sprintf(`{"id": %d, "name": %q}`, id, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url+"/plants", strings.NewReader(body))
	if err != nil {
		return result{id: id, err: err}
	}
	req.Header.Set("Authorization", "Bearer "+o.token)
	req.Header.Set("Content-Type", "application/json")
	// A create is idempotent (the same id and body answer 200 again), and
	// saying so lets Go's transport resend it on a kept-alive connection the
	// server closed unread, as a draining replica does; a real client would.
	req.Header.Set("Idempotency-Key", strconv.FormatInt(id, 10))
	t0 := time.Now()
	resp, err := client.Do(req)
	r := result{id: id, sent: t0, latency: time.Since(t0)}
	if err != nil {
		r.err = err
		return r
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.code = resp.StatusCode
	r.retry = resp.Header.Get("Retry-After") != ""
	return r
}

// verify checks every acknowledged id: a create of the same id with another
// name must answer 409 (stored, with the acknowledged body). A 200 would
// mean the acknowledged plant was gone and has just been created anew.
func verify(ctx context.Context, client *http.Client, o options, ids []int64) (verified int, lost []int64, unclear int) {
	deadline := time.Now().Add(o.verifyFor)
	work := make(chan int64)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				code := 0
				for time.Now().Before(deadline) {
					r := create(ctx, client, o, id, "verify-other-body")
					if r.err == nil && (r.code == http.StatusConflict || r.code == http.StatusOK) {
						code = r.code
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				mu.Lock()
				switch code {
				case http.StatusConflict:
					verified++
				case http.StatusOK:
					lost = append(lost, id)
				default:
					unclear++
				}
				mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	return verified, lost, unclear
}
