package servicetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Request is one request of a load.
type Request struct {
	ID     int64  // the plant id, when the request creates one
	Method string // default POST
	Path   string // default /plants
	Body   string
	Header map[string]string // set after the defaults (Content-Type, Authorization); "" deletes
	Kind   string            // the caller's label, for its own accounting
}

// CreateRequest is the default request: a create of plant id with a body
// that is unique to it.
func CreateRequest(id int64) Request {
	return Request{ID: id, Body: fmt.Sprintf(`{"id": %d, "name": "plant %d", "tag": "load"}`, id, id), Kind: "create"}
}

// LoadOptions shape a load. Workers each keep one keep-alive connection
// busy, sending one request after another.
type LoadOptions struct {
	Workers     int           // default 8
	Duration    time.Duration // stop after this long; 0: no time bound
	MaxRequests int64         // stop after this many requests; 0: no count bound
	FirstID     int64         // Next gets FirstID, FirstID+1, ...: unique across workers
	// Next builds the request for a sequence number (default CreateRequest).
	Next func(n int64) Request
	// RetryRefused resends a request whose connection was refused (so
	// nothing was sent) every 10 ms until it is sent or the load stops,
	// the way a client retries another replica.
	RetryRefused bool
	// IdempotencyKey sets Idempotency-Key on each request, which lets Go's
	// transport resend a POST on a kept-alive connection the server closed
	// before reading it (creates are idempotent by the contract).
	IdempotencyKey bool
	Timeout        time.Duration // per request; default 10 s
	Token          string        // default the service's
}

// Record is what happened to one request.
type Record struct {
	Request
	Start      time.Time     // when it was first sent
	Latency    time.Duration // of the last attempt
	Attempts   int
	Status     int // 0 when no response came
	RetryAfter string
	Code       int32  // the Error body's code on a failure status; 0 when not well-formed
	BodyErr    error  // why a failure's body is not a well-formed Error
	Reply      []byte // the response body
	Err        error  // transport error (connection refused, reset, timeout...)
	Refused    bool   // Err is a refused connection: nothing was sent
	// FirstRefusal is when a connection for it was first refused (zero when
	// none was): with RetryRefused the request may still have succeeded later.
	FirstRefusal time.Time
	// Reused says the last attempt went out on a kept-alive connection
	// rather than a new one.
	Reused bool
}

// Load is a running load generator.
type Load struct {
	cancel    context.CancelFunc
	done      chan struct{}
	sent      atomic.Int64
	result    *LoadResult
	transport *http.Transport
}

// StartLoad starts opts.Workers workers against s's API. Stop it with Stop,
// or wait for its bound with Wait.
func StartLoad(s *Service, opts LoadOptions) *Load {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Next == nil {
		opts.Next = CreateRequest
	}
	if opts.Token == "" {
		opts.Token = s.Token
	}
	var ctx context.Context
	var cancel context.CancelFunc
	if opts.Duration > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), opts.Duration)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	l := &Load{
		cancel: cancel,
		done:   make(chan struct{}),
		transport: &http.Transport{
			MaxIdleConnsPerHost: opts.Workers,
			IdleConnTimeout:     time.Minute,
		},
	}
	client := &http.Client{Transport: l.transport, Timeout: opts.Timeout}
	var next atomic.Int64
	records := make([][]Record, opts.Workers)
	var wg sync.WaitGroup
	for w := range opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n := next.Add(1) - 1
				if opts.MaxRequests > 0 && n >= opts.MaxRequests {
					return
				}
				records[w] = append(records[w], l.send(ctx, client, s.API, opts, opts.Next(opts.FirstID+n)))
			}
		}()
	}
	go func() {
		wg.Wait()
		// Close the kept-alive connections, so that the server's side of
		// them (a goroutine and a descriptor each) can return to baseline.
		l.transport.CloseIdleConnections()
		r := &LoadResult{}
		for _, rs := range records {
			r.Records = append(r.Records, rs...)
		}
		slices.SortFunc(r.Records, func(a, b Record) int { return a.Start.Compare(b.Start) })
		l.result = r
		close(l.done)
	}()
	return l
}

// send sends one request, resending it while its connection is refused
// when asked to.
func (l *Load) send(ctx context.Context, client *http.Client, base string, opts LoadOptions, r Request) Record {
	rec := Record{Request: r, Start: time.Now()}
	method, path := r.Method, r.Path
	if method == "" {
		method = http.MethodPost
	}
	if path == "" {
		path = "/plants"
	}
	for {
		rec.Attempts++
		req, err := http.NewRequest(method, base+path, strings.NewReader(r.Body))
		if err != nil {
			rec.Err = err
			return rec
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+opts.Token)
		if opts.IdempotencyKey {
			req.Header.Set("Idempotency-Key", strconv.FormatInt(r.ID, 10))
		}
		for k, v := range r.Header {
			if v == "" {
				req.Header.Del(k)
			} else {
				req.Header.Set(k, v)
			}
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { rec.Reused = info.Reused },
		}))
		start := time.Now()
		resp, err := client.Do(req)
		if err == nil {
			rec.Reply, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		rec.Latency = time.Since(start)
		l.sent.Add(1)
		if err != nil {
			rec.Err = err
			rec.Refused = errors.Is(err, syscall.ECONNREFUSED)
			if rec.Refused && rec.FirstRefusal.IsZero() {
				// When the refusal came, not when the attempt began: the
				// transport may first have tried a kept-alive connection.
				rec.FirstRefusal = time.Now()
			}
			if rec.Refused && opts.RetryRefused && ctx.Err() == nil {
				select {
				case <-ctx.Done():
					return rec
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			return rec
		}
		rec.Err, rec.Refused = nil, false
		rec.Status = resp.StatusCode
		rec.RetryAfter = resp.Header.Get("Retry-After")
		if rec.Status != http.StatusOK {
			rec.Code, rec.BodyErr = Reply{Status: resp.StatusCode, Header: resp.Header, Body: rec.Reply}.Code()
		}
		return rec
	}
}

// Sent is the number of attempts so far.
func (l *Load) Sent() int64 { return l.sent.Load() }

// Stop stops the workers after their requests in flight and returns the result.
func (l *Load) Stop() *LoadResult {
	l.cancel()
	return l.Wait()
}

// Wait waits for the load's bound and returns the result.
func (l *Load) Wait() *LoadResult {
	<-l.done
	l.cancel()
	return l.result
}

// LoadResult is every request of a load, in the order they were sent.
type LoadResult struct {
	Records []Record
}

// ByStatus counts the requests by status (0: no response).
func (r *LoadResult) ByStatus() map[int]int {
	out := map[int]int{}
	for _, rec := range r.Records {
		out[rec.Status]++
	}
	return out
}

// Count is the number of requests that answered status.
func (r *LoadResult) Count(status int) int { return r.ByStatus()[status] }

// Errors are the requests that got no response.
func (r *LoadResult) Errors() []Record {
	return r.Filter(func(rec Record) bool { return rec.Err != nil })
}

// Filter returns the records keep accepts.
func (r *LoadResult) Filter(keep func(Record) bool) []Record {
	var out []Record
	for _, rec := range r.Records {
		if keep(rec) {
			out = append(out, rec)
		}
	}
	return out
}

// Acknowledged maps every id whose create answered 200 to the body sent.
func (r *LoadResult) Acknowledged() map[int64]string {
	out := map[int64]string{}
	for _, rec := range r.Records {
		if rec.Status == http.StatusOK && rec.Kind == "create" {
			out[rec.ID] = rec.Body
		}
	}
	return out
}

// Percentile is the p-th percentile (0 < p <= 100) of the latencies of the
// records keep accepts (all of them when keep is nil), nearest-rank.
func (r *LoadResult) Percentile(p float64, keep func(Record) bool) time.Duration {
	return Percentile(latencies(r.Records, keep), p)
}

// Max is the largest latency of the records keep accepts.
func (r *LoadResult) Max(keep func(Record) bool) time.Duration {
	return Percentile(latencies(r.Records, keep), 100)
}

func latencies(records []Record, keep func(Record) bool) []time.Duration {
	var out []time.Duration
	for _, rec := range records {
		if keep == nil || keep(rec) {
			out = append(out, rec.Latency)
		}
	}
	return out
}

// Percentile is the nearest-rank p-th percentile of ds (0 < p <= 100; 0
// when ds is empty): the smallest sample that at least p % of them are at
// or below.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := ds
	if !slices.IsSorted(s) { // a caller's sorted samples are read as they are
		s = slices.Clone(ds)
		slices.Sort(s)
	}
	// The epsilon keeps float error (99.9/100*1000 = 999.0000000000001)
	// from moving the rank up by one.
	rank := int(math.Ceil(p/100*float64(len(s)) - 1e-9))
	return s[min(max(rank, 1), len(s))-1]
}

// String summarises the result: counts by status and latency percentiles.
func (r *LoadResult) String() string {
	counts := r.ByStatus()
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d:%d", st, counts[st]))
	}
	return fmt.Sprintf("requests=%d statuses=[%s] p50=%v p99=%v max=%v", len(r.Records), strings.Join(parts, " "),
		r.Percentile(50, nil).Round(time.Microsecond), r.Percentile(99, nil).Round(time.Microsecond), r.Max(nil).Round(time.Microsecond))
}
