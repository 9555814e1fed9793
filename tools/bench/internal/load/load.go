// Package load generates traffic of one route (POST /plants, or one of API
// 1.1.0's reads and deletes: see Route) against a server on the loopback
// interface: a closed loop (a fixed number of connections, each
// sending its next request when the previous one is answered) to find the
// peak, and an open loop (requests at fixed intended times, whatever the
// server does) to measure latency without coordinated omission.
//
// The client is a minimal HTTP/1.1 one over raw keep-alive connections: on a
// small machine the load generator shares the CPUs with the server it
// measures, and net/http's client would spend several times more of them.
package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RequestTimeout bounds every request: past it the request counts as failed.
const RequestTimeout = 5 * time.Second

// Target is a server to load.
type Target struct {
	addr  string
	token string
	route Route
}

// NewTarget checks that addr is a loopback address (the generator never sends
// traffic anywhere else) and returns a target whose requests carry token as
// their bearer token and take their plant ids from ids, so that every create
// in a run is a fresh insert.
func NewTarget(addr, token string, ids *atomic.Int64) (*Target, error) {
	if err := Loopback(addr); err != nil {
		return nil, fmt.Errorf("load target: %w", err)
	}
	return &Target{addr: addr, token: token, route: Create{IDs: ids}}, nil
}

// Loopback returns an error unless every one of addrs is a loopback
// IP address and port.
func Loopback(addrs ...string) error {
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("address %q is not on loopback: only loopback addresses are allowed", a)
		}
	}
	return nil
}

// With returns a copy of the target that sends route's requests.
func (t *Target) With(route Route) *Target {
	c := *t
	c.route = route
	return &c
}

// AppendRequest appends the bytes of one POST /plants request creating plant
// id to buf.
func AppendRequest(buf []byte, host, token string, id int64) []byte {
	var body [64]byte
	b := append(body[:0], `{"id": `...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `, "name": "Monstera", "tag": "tropical"}`...)
	buf = append(buf, "POST /plants HTTP/1.1\r\nHost: "...)
	buf = append(buf, host...)
	buf = append(buf, "\r\nUser-Agent: plantstore-bench\r\nContent-Type: application/json\r\n"...)
	buf = appendToken(buf, token)
	buf = append(buf, "Content-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(b)), 10)
	buf = append(buf, "\r\n\r\n"...)
	return append(buf, b...)
}

// appendToken appends the Authorization header of token, none for "".
func appendToken(buf []byte, token string) []byte {
	if token == "" {
		return buf
	}
	buf = append(buf, "Authorization: Bearer "...)
	buf = append(buf, token...)
	return append(buf, "\r\n"...)
}

// appendHead appends the head of a request without a body to buf.
func appendHead(buf []byte, method, target, host, token string) []byte {
	buf = append(buf, method...)
	buf = append(buf, ' ')
	buf = append(buf, target...)
	buf = append(buf, " HTTP/1.1\r\nHost: "...)
	buf = append(buf, host...)
	buf = append(buf, "\r\nUser-Agent: plantstore-bench\r\n"...)
	return append(appendToken(buf, token), "\r\n"...)
}

// conn is one keep-alive connection, with the route's state on it.
type conn struct {
	c     net.Conn
	br    *bufio.Reader
	buf   []byte
	resp  Response
	state State
}

func (t *Target) dial(ctx context.Context) (*conn, error) {
	d := net.Dialer{Timeout: RequestTimeout}
	c, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, br: bufio.NewReaderSize(c, 4096), buf: make([]byte, 0, 512)}, nil
}

// do sends the route's next request and reads its answer. keep is false
// when the connection cannot be reused; bad is the route's verdict on an
// answer (a status or body it must not have).
func (t *Target) do(c *conn) (status int, keep bool, bad, err error) {
	c.buf, err = t.route.Append(c.buf[:0], t.addr, t.token, &c.state)
	if err != nil {
		return 0, true, nil, err
	}
	if err := c.c.SetDeadline(time.Now().Add(RequestTimeout)); err != nil {
		return 0, false, nil, err
	}
	if _, err := c.c.Write(c.buf); err != nil {
		return 0, false, nil, err
	}
	if err := readResponse(c.br, &c.resp); err != nil {
		return c.resp.Status, false, nil, err
	}
	return c.resp.Status, c.resp.Keep, t.route.Check(&c.resp, &c.state), nil
}

var errMalformed = errors.New("malformed HTTP response")

// Response is what the generator keeps of an answer: its status, whether
// the connection stays open, its Link header and its body.
type Response struct {
	Status int
	Keep   bool
	Link   []byte
	Body   []byte
}

// readResponse reads one HTTP/1.1 response from br into r, reusing r's
// buffers. r.Keep is false when the server closes the connection after it
// (or the body's length is unknown), and after an error.
func readResponse(br *bufio.Reader, r *Response) error {
	r.Status, r.Keep, r.Link, r.Body = 0, false, r.Link[:0], r.Body[:0]
	line, err := readLine(br)
	if err != nil {
		return err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	r.Status = status
	keep := line[7] == '1'
	length, chunked := int64(-1), false
	for {
		h, err := readLine(br)
		if err != nil {
			return err
		}
		if len(h) == 0 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return fmt.Errorf("%w: header %q", errMalformed, h)
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			length, err = strconv.ParseInt(string(v), 10, 64)
			if err != nil || length < 0 {
				return fmt.Errorf("%w: Content-Length %q", errMalformed, v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(v, []byte("chunked"))
		case bytes.EqualFold(k, []byte("Link")):
			r.Link = append(r.Link, v...)
		case bytes.EqualFold(k, []byte("Connection")):
			if bytes.EqualFold(v, []byte("close")) {
				keep = false
			}
		}
	}
	body := bodyWriter{r}
	switch {
	case status == 204 || status == 304 || status < 200:
		// No body, whatever the headers say (RFC 9112 section 6.3).
	case chunked:
		_, err = io.Copy(body, httputil.NewChunkedReader(br))
		if err == nil {
			// The trailer section ends with an empty line.
			for {
				var l []byte
				if l, err = readLine(br); err != nil || len(l) == 0 {
					break
				}
			}
		}
	case length >= 0:
		_, err = io.CopyN(body, br, length)
	default:
		// Delimited by the end of the connection.
		_, err = io.Copy(body, br)
		keep = false
	}
	r.Keep = keep && err == nil
	return err
}

// bodyWriter appends to a Response's body.
type bodyWriter struct{ r *Response }

func (w bodyWriter) Write(p []byte) (int, error) {
	w.r.Body = append(w.r.Body, p...)
	return len(p), nil
}

// ReadFrom reads into the body's own buffer (io.Copy would allocate one).
func (w bodyWriter) ReadFrom(src io.Reader) (int64, error) {
	var n int64
	for {
		if len(w.r.Body) == cap(w.r.Body) {
			w.r.Body = slices.Grow(w.r.Body, 4096)
		}
		m, err := src.Read(w.r.Body[len(w.r.Body):cap(w.r.Body)])
		w.r.Body = w.r.Body[:len(w.r.Body)+m]
		n += int64(m)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line longer than %d bytes", errMalformed, br.Size())
		}
		return nil, err
	}
	line = bytes.TrimRight(line, "\r\n")
	return line, nil
}

// Result is what one phase measured.
type Result struct {
	Window   time.Duration // the measured interval
	Requests int64         // answered within the window (any status)
	// Bad counts the answers over the whole phase, warm-up included, that
	// failed the route's check: a status other than its own (200, or 204
	// for DELETE) or a body that is not what was asked for.
	Bad       int64
	Errors    int64           // requests that got no answer (connection error, time-out)
	Statuses  map[int]int64   // every status seen over the whole phase
	Latencies []time.Duration // of the requests answered within the window
	Scheduled int64           // open loop: requests the schedule held
	// Lag is how late the open loop's requests left, after their intended
	// time (the generator's own tardiness; already inside Latencies).
	Lag []time.Duration
	// FirstError is the first request error, if any.
	FirstError string
}

// Throughput is answers per second over the window.
func (r Result) Throughput() float64 {
	if r.Window <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Window.Seconds()
}

// Failed is the number of requests that failed: no answer, or a bad one.
func (r Result) Failed() int64 { return r.Bad + r.Errors }

// Add merges o, a phase measured after r's, into r: the windows add up,
// and the latencies are those of both.
func (r *Result) Add(o Result) {
	r.Window += o.Window
	r.Requests += o.Requests
	r.Bad += o.Bad
	r.Errors += o.Errors
	if r.Statuses == nil {
		r.Statuses = map[int]int64{}
	}
	for s, n := range o.Statuses {
		r.Statuses[s] += n
	}
	r.Latencies = append(r.Latencies, o.Latencies...)
	r.Scheduled += o.Scheduled
	r.Lag = append(r.Lag, o.Lag...)
	if r.FirstError == "" {
		r.FirstError = o.FirstError
	}
}

// Closed runs conns connections in a closed loop for warmup+window. Only the
// answers that arrive within the window after the warm-up count; onStart and
// onEnd run at its two ends (to read the server's CPU time).
func (t *Target) Closed(ctx context.Context, conns int, warmup, window time.Duration, onStart, onEnd func()) (Result, error) {
	begin := time.Now()
	winStart, winEnd := begin.Add(warmup), begin.Add(warmup+window)
	ctx, cancel := context.WithDeadline(ctx, winEnd.Add(RequestTimeout))
	defer cancel()

	// The window's ends are marked by a timer of their own, not by a worker.
	marks := make(chan struct{})
	go func() {
		defer close(marks)
		for _, at := range []struct {
			t  time.Time
			fn func()
		}{{winStart, onStart}, {winEnd, onEnd}} {
			select {
			case <-time.After(time.Until(at.t)):
			case <-ctx.Done():
				return
			}
			if at.fn != nil {
				at.fn()
			}
		}
	}()

	var mu sync.Mutex
	var total Result
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			local := Result{Statuses: map[int]int64{}}
			fail := func(err error) {
				if local.FirstError == "" {
					local.FirstError = err.Error()
				}
			}
			var c *conn
			defer func() {
				if c != nil {
					c.c.Close()
				}
			}()
			for ctx.Err() == nil {
				if c == nil {
					var err error
					if c, err = t.dial(ctx); err != nil {
						local.Errors++
						fail(err)
						Sleep(ctx, 10*time.Millisecond)
						continue
					}
				}
				sent := time.Now()
				if !sent.Before(winEnd) {
					break
				}
				status, keep, bad, err := t.do(c)
				done := time.Now()
				if err != nil {
					local.Errors++
					fail(err)
					if !keep {
						c.c.Close()
						c = nil
					} else {
						Sleep(ctx, 10*time.Millisecond) // nothing sent: the route had no request
					}
					continue
				}
				local.Statuses[status]++
				if bad != nil {
					local.Bad++
					fail(bad)
				}
				if !done.Before(winStart) && !done.After(winEnd) {
					local.Latencies = append(local.Latencies, done.Sub(sent))
				}
				if !keep {
					c.c.Close()
					c = nil
				}
			}
			mu.Lock()
			total.Add(local)
			mu.Unlock()
		})
	}
	wg.Wait()
	<-marks
	if err := ctx.Err(); err != nil && time.Now().Before(winEnd) {
		return Result{}, err // interrupted, not finished
	}
	total.Window, total.Requests = window, int64(len(total.Latencies))
	return total, nil
}

// Open sends rate requests a second for window, each at its intended time
// start+i/rate whether or not earlier ones were answered, over as many
// connections as that takes (at most maxInFlight requests outstanding), and
// measures each latency from the intended time: a stalled server or a late
// generator shows up in the latencies instead of thinning the schedule.
func (t *Target) Open(ctx context.Context, rate float64, window time.Duration, maxInFlight int) (Result, error) {
	if rate <= 0 {
		return Result{}, fmt.Errorf("open loop: rate %v", rate)
	}
	n := int(rate * window.Seconds())
	if n < 1 {
		n = 1
	}
	interval := float64(time.Second) / rate
	ctx, cancel := context.WithTimeout(ctx, window+2*RequestTimeout)
	defer cancel()

	pool := make(chan *conn, maxInFlight)
	defer func() {
		for {
			select {
			case c := <-pool:
				c.c.Close()
			default:
				return
			}
		}
	}()
	sem := make(chan struct{}, maxInFlight)
	lat := make([]time.Duration, n)
	lag := make([]time.Duration, n)
	status := make([]int, n) // 0: no answer
	var wg sync.WaitGroup
	var errCount, badCount atomic.Int64
	var firstErr atomic.Pointer[error]
	sleep, done := preciseSleeper()
	defer done()
	start := time.Now().Add(5 * time.Millisecond)
	for i := range n {
		due := start.Add(time.Duration(float64(i) * interval))
		for d := time.Until(due); d > 0 && ctx.Err() == nil; d = time.Until(due) {
			sleep(min(d, 10*time.Millisecond))
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			var c *conn
			select {
			case c = <-pool:
			default:
				var err error
				if c, err = t.dial(ctx); err != nil {
					errCount.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
			lag[i] = time.Since(due)
			s, keep, bad, err := t.do(c)
			if err != nil {
				c.c.Close()
				errCount.Add(1)
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			if bad != nil {
				badCount.Add(1)
				firstErr.CompareAndSwap(nil, &bad)
			}
			lat[i] = time.Since(due)
			status[i] = s
			if keep {
				select {
				case pool <- c:
				default:
					c.c.Close()
				}
			} else {
				c.c.Close()
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("open loop at %.0f/s: %w", rate, err)
	}
	statuses := map[int]int64{}
	answered := lat[:0:0]
	var lags []time.Duration
	var last time.Duration
	for i := range n {
		if status[i] == 0 {
			continue
		}
		statuses[status[i]]++
		answered = append(answered, lat[i])
		lags = append(lags, lag[i])
		// When the answer came, counted from the schedule's start.
		last = max(last, time.Duration(float64(i)*interval)+lat[i])
	}
	r := Result{Window: max(window, last), Requests: int64(len(answered)), Bad: badCount.Load(), Errors: errCount.Load(),
		Statuses: statuses, Latencies: answered, Scheduled: int64(n), Lag: lags}
	if p := firstErr.Load(); p != nil {
		r.FirstError = (*p).Error()
	}
	return r, nil
}

// Sleep sleeps for d unless ctx ends first; it reports whether it slept
// the whole time.
func Sleep(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
