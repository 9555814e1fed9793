package otlptest

import (
	"net/http"
	"sync"
	"time"
)

// Recorder is a receiver for tests: it keeps every span and every decoded
// export body it is sent, and every export it refused. Serve it (e.g. with
// httptest.NewServer) and point the exporter at the server's URL.
type Recorder struct {
	handler http.Handler

	mu       sync.Mutex
	spans    []Span
	bodies   [][]byte
	refusals []Refusal
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	r := &Recorder{}
	r.handler = Handler(r.keep, r.refuse)
	return r
}

func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.handler.ServeHTTP(w, req) }

func (r *Recorder) keep(e Export) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, e.Body)
	r.spans = append(r.spans, e.Spans()...)
}

func (r *Recorder) refuse(f Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refusals = append(r.refusals, f)
}

// Spans returns every span received so far.
func (r *Recorder) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Bodies returns every decoded export body received so far.
func (r *Recorder) Bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// Refusals returns every export refused so far.
func (r *Recorder) Refusals() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.refusals...)
}

// TB is the part of testing.TB the Recorder's checks use.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// CheckNoRefusals fails the test for every export the recorder refused:
// an exporter that sends what a collector would refuse loses its spans.
func (r *Recorder) CheckNoRefusals(t TB) {
	t.Helper()
	for _, f := range r.Refusals() {
		t.Errorf("the OTLP receiver refused an export: %v", f)
	}
}

// WaitSpans polls until match finds what it wants among the received
// spans and returns them; after within it fails the test, naming what it
// waited for and listing what it has.
func (r *Recorder) WaitSpans(t TB, within time.Duration, what string, match func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		spans := r.Spans()
		if match(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("within %v the OTLP receiver did not get %s; it has:\n%s", within, what, Describe(spans))
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}
