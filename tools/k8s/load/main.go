// Command k8s-load is the open-loop create load of the cluster scenarios
// (tools/k8s/cluster.sh). It runs in a pod of the release's namespace and
// posts fresh plants to the Service at a fixed rate whatever the answers
// take (vegeta's attacker and constant pacer), so that a slow or missing
// replica shows as errors rather than as a slower load. It classifies every
// answer, checks afterwards that every acknowledged plant is stored, and
// prints one JSON summary line. With -retries it sends through the
// service's generated Go client instead, and counts what a caller of that
// client sees after its retries; with -events-url it also asks the webhook
// subscriber whether every acknowledged plant's plant.created arrived.
//
//	k8s-load -url http://plantstore:8080 -token-file /etc/load/tokens -rate 250 -duration 60s
//
// The summary's times are Unix milliseconds of this machine's clock, so the
// harness can set them against the events it caused (a rollout, a deleted
// pod) on the same node.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	plantclient "github.com/plantstore/plantstore/api/client"

	"github.com/plantstore/plantstore/internal/tlsca"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func main() {
	var o options
	flag.StringVar(&o.url, "url", "", "base URL of the API, e.g. http://plantstore:8080")
	flag.StringVar(&o.tokenFile, "token-file", "", "tokens file: the first raw token is used")
	flag.Float64Var(&o.rate, "rate", 200, "creates per second (open loop)")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long to send")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Second, "deadline of one request")
	flag.IntVar(&o.maxInFlight, "max-in-flight", 1000, "requests in flight at most; a slot falling due beyond it counts as a generator stall")
	flag.DurationVar(&o.verifyFor, "verify-for", 60*time.Second, "how long the check of acknowledged plants may take")
	flag.IntVar(&o.retries, "retries", 0, "send each create through the generated Go client (api/client) with this many attempts in all: retried after a 503, a 429 with Retry-After or a connection error, as that client does, each attempt bounded by -timeout; 0: plain HTTP, one attempt, every answer as the server gave it")
	flag.StringVar(&o.caFile, "ca-file", "", "PEM certificates to trust for an https -url (a Gateway's CA), instead of the system's")
	flag.StringVar(&o.eventsURL, "events-url", "", "base URL of a k8s-webhook-receiver the release delivers to: then every acknowledged plant's plant.created must arrive there (within -verify-for)")
	history := flag.Int("history", 0, "instead of the create load: this many callers create, read, delete and list plants on -ids contended ids, each pausing -pause between operations, for -duration; prints the recorded history (one JSON line) for -check")
	ids := flag.Int("ids", 8, "contended ids of -history and -check")
	pause := flag.Duration("pause", 20*time.Millisecond, "pause of each -history caller between its operations")
	checkFiles := flag.Bool("check", false, "check the histories in the files named as arguments (outputs of -history runs) for linearizability, each id on its own; prints the verdict (one JSON line), exits 1 when it is not linearizable")
	visualize := flag.String("visualize", "linearizability", "with -check: path prefix of an illegal id's picture (-id<N>.html) and operations (-id<N>.json)")
	checkTimeout := flag.Duration("check-timeout", time.Minute, "with -check: the checker's time for one id")
	stopAddr := flag.String("stop-addr", "", "listen here for POST /stop, which ends the sending before -duration is up (the check and the summary follow as after it): for a scenario that knows when its fault is over")
	flag.Parse()
	if *checkFiles {
		v, err := check(flag.Args(), *ids, *checkTimeout, *visualize)
		if err != nil {
			fmt.Fprintln(os.Stderr, "k8s-load:", err)
			os.Exit(2)
		}
		_ = json.NewEncoder(os.Stdout).Encode(v)
		if !v.Linearizable {
			os.Exit(1)
		}
		return
	}
	if o.url == "" || o.tokenFile == "" || o.rate <= 0 || o.duration <= 0 || o.maxInFlight <= 0 {
		fmt.Fprintln(os.Stderr, "k8s-load: -url, -token-file, a positive -rate, -duration and -max-in-flight are required")
		os.Exit(2)
	}
	token, err := firstToken(o.tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8s-load:", err)
		os.Exit(2)
	}
	o.token = token
	if o.caFile != "" {
		if o.roots, err = tlsca.Pool(o.caFile); err != nil {
			fmt.Fprintln(os.Stderr, "k8s-load:", err)
			os.Exit(2)
		}
	}
	if o.retries < 0 {
		fmt.Fprintln(os.Stderr, "k8s-load: -retries must be 0 or more")
		os.Exit(2)
	}
	if _, err := plantclient.New(o.url, o.token); o.retries > 0 && err != nil {
		fmt.Fprintln(os.Stderr, "k8s-load:", err)
		os.Exit(2)
	}
	if *history > 0 {
		_ = json.NewEncoder(os.Stdout).Encode(runHistory(context.Background(), o, *history, *ids, *pause))
		return
	}
	if *stopAddr != "" {
		ln, err := net.Listen("tcp", *stopAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "k8s-load:", err)
			os.Exit(2)
		}
		o.stop = serveStop(ln)
	}
	s := run(context.Background(), o)
	_ = json.NewEncoder(os.Stdout).Encode(s)
}

type options struct {
	url, tokenFile, token string
	caFile                string
	roots                 *x509.CertPool // from caFile; nil: the system's
	eventsURL             string
	rate                  float64
	duration, timeout     time.Duration
	verifyFor             time.Duration
	maxInFlight           int
	retries               int
	stop                  <-chan struct{} // closed: send no more (-stop-addr)
}

// serveStop serves POST /stop on ln: the channel it returns closes at the
// first one.
func serveStop(ln net.Listener) <-chan struct{} {
	stop := make(chan struct{})
	var once sync.Once
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/stop" {
				http.Error(w, "POST /stop", http.StatusNotFound)
				return
			}
			once.Do(func() { close(stop) })
			w.WriteHeader(http.StatusNoContent)
		}))
	}()
	return stop
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
	// FirstTransportError and LastTransportError are when the first and
	// the last of them were sent (Unix ms); 0 when none.
	FirstTransportError, LastTransportError int64
	// AnswerSamples are the first few answers other than 200 and 503 (a
	// Gateway's 502 or 504, say): status, when sent, how long, body.
	AnswerSamples []string
	// Slowest are the slowest answers, slowest first, as AnswerSamples:
	// when a run stalls, when they were sent tells what held them.
	Slowest []string
	// Unavailable are the 503s; NoRetryAfter those of them without Retry-After.
	Unavailable       int
	NoRetryAfter      int
	First503, Last503 int64 // Unix ms; 0 when none
	// FirstOKAfter503 is the first 200 sent after the last 503 (Unix ms).
	FirstOKAfter503 int64
	// Stalls are the slots of the schedule that fell due while
	// -max-in-flight requests were open, so the create went out late.
	Stalls int
	// Latencies of the answered requests: vegeta's estimates of the
	// percentiles, and the largest.
	LatencyP50Ms float64
	LatencyP99Ms float64
	LatencyMaxMs float64
	Acknowledged int // 200s
	Verified     int // acknowledged plants found stored afterwards
	Lost         []int64
	// Unverifiable are the acknowledged creates that could not be checked:
	// a 200 that named no plant this run created, or a check that got no
	// clear answer within -verify-for.
	Unverifiable int
	// With -events-url: the acknowledged plants whose plant.created was
	// looked for at the subscriber, and those of them it never received
	// within -verify-for (EventsMissing, the first few in
	// EventsMissingSample); EventsError when it could not be asked.
	EventsChecked       int
	EventsMissing       int
	EventsMissingSample []int64
	EventsError         string
}

func run(ctx context.Context, o options) Summary {
	// The generated client's transport (a connect timeout, HTTP/2 health
	// checks), plain or not: a caller without retries is still one that
	// leaves a connection whose peer vanished, through a Gateway too.
	tr := plantclient.NewTransport()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	tr.TLSClientConfig = &tls.Config{RootCAs: o.roots, MinVersion: tls.VersionTLS12}
	client := &http.Client{Transport: tr, Timeout: o.timeout}
	if o.retries > 0 {
		// What a caller of the generated client sees: the last answer after
		// its retries, or its error. Each attempt keeps -timeout; the whole
		// call gets room for every attempt and the waits between them.
		ps, err := plantclient.New(o.url, o.token, plantclient.WithRetries(o.retries),
			plantclient.WithHTTPDoer(&http.Client{Transport: tr, Timeout: o.timeout}))
		if err != nil {
			panic(err) // main checked the URL and the token
		}
		client = &http.Client{Transport: doerTransport{ps.Doer()}, Timeout: time.Duration(o.retries) * (o.timeout + 10*time.Second)}
	}
	base := idBase()
	var next atomic.Int64
	targeter := func(t *vegeta.Target) error {
		id := base + next.Add(1) - 1
		*t = createTarget(o, id, plantName(id))
		return nil
	}
	interval := time.Duration(float64(time.Second) / o.rate)
	attacker := vegeta.NewAttacker(vegeta.Client(client), vegeta.MaxWorkers(uint64(o.maxInFlight)))
	defer context.AfterFunc(ctx, func() { attacker.Stop() })()
	if o.stop != nil {
		go func() { <-o.stop; attacker.Stop() }()
	}
	began := time.Now()
	results := attacker.Attack(targeter, vegeta.ConstantPacer{Freq: 1, Per: interval}, o.duration, "")

	s := Summary{Codes: map[int]int{}}
	var acked []int64
	var okAt []int64 // send time of each 200, Unix ms
	seen := map[int64]bool{}
	var busy []window
	var lat vegeta.LatencyMetrics
	var last503 int64
	var slowest []*vegeta.Result
	for r := range results {
		s.Sent++
		ms := r.Timestamp.UnixMilli()
		if s.Start == 0 || ms < s.Start {
			s.Start = ms
		}
		if ms > s.End {
			s.End = ms
		}
		busy = append(busy, window{r.Timestamp, r.End()})
		if r.Code == 0 { // vegeta's mark of a request without an HTTP answer
			s.TransportErrors++
			if s.FirstTransportError == 0 || ms < s.FirstTransportError {
				s.FirstTransportError = ms
			}
			s.LastTransportError = max(s.LastTransportError, ms)
			if len(s.ErrorSamples) < 5 {
				s.ErrorSamples = append(s.ErrorSamples, r.Error)
			}
			continue
		}
		s.Codes[int(r.Code)]++
		lat.Add(r.Latency)
		if i := sort.Search(len(slowest), func(i int) bool { return slowest[i].Latency < r.Latency }); i < slowestKept {
			slowest = slices.Insert(slowest, i, r)[:min(len(slowest)+1, slowestKept)]
		}
		switch r.Code {
		case http.StatusOK:
			s.Acknowledged++
			okAt = append(okAt, ms)
			// The answer names the plant, whose name names its id; one
			// that names no plant this run created, or one already
			// answered, cannot be checked.
			id, ok := idOf(r.Body)
			if !ok || id < base || id >= base+next.Load() || seen[id] {
				s.Unverifiable++
				continue
			}
			seen[id] = true
			acked = append(acked, id)
		case http.StatusServiceUnavailable:
			s.Unavailable++
			if r.Headers.Get("Retry-After") == "" {
				s.NoRetryAfter++
			}
			if s.First503 == 0 || ms < s.First503 {
				s.First503 = ms
			}
			if ms > last503 {
				last503 = ms
			}
		default:
			if len(s.AnswerSamples) < 5 {
				s.AnswerSamples = append(s.AnswerSamples, answerSample(r))
			}
		}
	}
	for _, r := range slowest {
		s.Slowest = append(s.Slowest, answerSample(r))
	}
	s.Stalls = stalls(busy, began, interval, int(o.duration/interval), o.maxInFlight)
	s.Last503 = last503
	if s.Sent > s.TransportErrors {
		s.LatencyP50Ms = millis(lat.Quantile(0.50))
		s.LatencyP99Ms = millis(lat.Quantile(0.99))
		s.LatencyMaxMs = millis(lat.Max)
	}
	for _, at := range okAt {
		if last503 != 0 && at > last503 && (s.FirstOKAfter503 == 0 || at < s.FirstOKAfter503) {
			s.FirstOKAfter503 = at
		}
	}
	verified, lost, unclear := verify(ctx, client, o, acked)
	s.Verified, s.Lost, s.Unverifiable = verified, lost, s.Unverifiable+unclear
	if o.eventsURL != "" {
		// Plain HTTP: the subscriber is not the service (the generated
		// client would not send there).
		missing, err := missingEvents(ctx, &http.Client{Transport: tr, Timeout: o.timeout}, o, acked)
		s.EventsChecked, s.EventsMissing = len(acked), len(missing)
		s.EventsMissingSample = missing[:min(len(missing), 5)]
		if err != nil {
			s.EventsError = err.Error()
		}
	}
	return s
}

// slowestKept is how many of the slowest answers a Summary keeps.
const slowestKept = 5

// answerSample says what a reader needs to place an unexpected answer: its
// status, when it was sent (Unix ms, to set beside the disruption's
// timeline), how long it took and the start of its body.
func answerSample(r *vegeta.Result) string {
	body := r.Body
	if len(body) > 120 {
		body = body[:120]
	}
	return fmt.Sprintf("%d sent=%d after=%dms %q", r.Code, r.Timestamp.UnixMilli(), r.Latency.Milliseconds(), bytes.TrimSpace(body))
}

// missingEvents asks the subscriber which of ids it never received a
// plant.created for, again until none is missing or -verify-for has passed
// (deliveries trail the answers: the outbox sends them after the create).
func missingEvents(ctx context.Context, client *http.Client, o options, ids []int64) ([]int64, error) {
	deadline := time.Now().Add(o.verifyFor)
	missing := ids
	for {
		body, err := json.Marshal(missing)
		if err != nil {
			return missing, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.eventsURL+"/missing", bytes.NewReader(body))
		if err != nil {
			return missing, err
		}
		req.Header.Set("Content-Type", "application/json")
		var still []int64
		resp, err := client.Do(req)
		if err == nil {
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("POST %s/missing: %s", o.eventsURL, resp.Status)
			} else {
				err = json.NewDecoder(resp.Body).Decode(&still)
			}
			resp.Body.Close()
		}
		if err == nil {
			missing = still
		}
		if len(missing) == 0 || !time.Now().Before(deadline) {
			sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
			return missing, err
		}
		time.Sleep(time.Second)
	}
}

// doerTransport sends through the generated client's HTTP layer.
type doerTransport struct{ doer plantclient.HttpRequestDoer }

func (t doerTransport) RoundTrip(req *http.Request) (*http.Response, error) { return t.doer.Do(req) }

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// idBase is a random positive base for this run's ids, far from other runs'.
func idBase() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>2) &^ (1<<24 - 1) // 2^24 ids of room
}

const namePrefix = "load-"

func plantName(id int64) string { return namePrefix + strconv.FormatInt(id, 10) }

// idOf reads the id back from a create's answer: the stored plant, whose
// name the load made from its id (the answer carries no id).
func idOf(body []byte) (int64, bool) {
	var p struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(body, &p) != nil {
		return 0, false
	}
	digits, ok := strings.CutPrefix(p.Name, namePrefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	return id, err == nil
}

// createTarget is the request that creates plant id with the given name.
func createTarget(o options, id int64, name string) vegeta.Target {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+o.token)
	h.Set("Content-Type", "application/json")
	// A create is idempotent (the same id and body answer 200 again), and
	// saying so lets Go's transport resend it on a kept-alive connection the
	// server closed unread, as a draining replica does; a real client would.
	h.Set("Idempotency-Key", strconv.FormatInt(id, 10))
	return vegeta.Target{
		Method: http.MethodPost,
		URL:    o.url + "/plants",
		Body:   fmt.Appendf(nil, `{"id": %d, "name": %q}`, id, name),
		Header: h,
	}
}

// window is when one request held one of vegeta's workers.
type window struct{ from, to time.Time }

// stalls counts the pacer's slots (began + k·interval, 1 ≤ k ≤ slots) that
// fell due while maxOpen requests were open. Every worker vegeta may start
// was busy then, so the slot's create went out late (vegeta sends the slots
// it missed at once when a worker is free again) or, when the run ended
// first, not at all.
func stalls(busy []window, began time.Time, interval time.Duration, slots, maxOpen int) int {
	type event struct {
		at    time.Time
		delta int
	}
	events := make([]event, 0, 2*len(busy))
	for _, w := range busy {
		events = append(events, event{w.from, 1}, event{w.to, -1})
	}
	sort.Slice(events, func(i, j int) bool {
		if !events[i].at.Equal(events[j].at) {
			return events[i].at.Before(events[j].at)
		}
		return events[i].delta < events[j].delta
	})
	// Slots due by t, and due before t: one due as a worker frees is served.
	dueBy := func(t time.Time) int { return min(int(t.Sub(began)/interval), slots) }
	dueBefore := func(t time.Time) int { return min(int((t.Sub(began)+interval-1)/interval)-1, slots) }
	open, n := 0, 0
	var full time.Time
	for _, e := range events {
		open += e.delta
		switch {
		case e.delta > 0 && open == maxOpen:
			full = e.at
		case e.delta < 0 && open == maxOpen-1:
			n += max(dueBefore(e.at)-dueBy(full), 0)
		}
	}
	return n
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
		wg.Go(func() {
			for id := range work {
				code := 0
				for time.Now().Before(deadline) {
					c, err := send(ctx, client, createTarget(o, id, "verify-other-body"))
					if err == nil && (c == http.StatusConflict || c == http.StatusOK) {
						code = c
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
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	return verified, lost, unclear
}

// send makes one request and returns its status.
func send(ctx context.Context, client *http.Client, t vegeta.Target) (int, error) {
	req, err := t.Request()
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
