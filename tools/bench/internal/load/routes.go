package load

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
)

// Route is one kind of request: how to write a connection's next one and
// how to judge its answer. Every answer is checked; one that fails counts
// in Result.Bad and fails the run.
type Route interface {
	// Append appends the next request to buf. An error means there is
	// none to send (nothing was written).
	Append(buf []byte, host, token string, st *State) ([]byte, error)
	// Check returns why the answer to the request Append wrote is wrong,
	// or nil.
	Check(r *Response, st *State) error
}

// State is a connection's own state between its requests.
type State struct {
	id      int64  // the plant the request in flight asks for
	next    []byte // the list walk's next request target; empty: the first page
	last    int64  // the last id of the walk's previous page
	walking bool   // next is a cursor page
	pages   int    // pages of the walk so far
	want    []byte // scratch: the expected body
}

// The plant every create sends and every read expects: the harness fills
// the store with it too.
const (
	PlantName = "Monstera"
	PlantTag  = "tropical"
)

func wantStatus(r *Response, status int) error {
	if r.Status != status {
		return fmt.Errorf("status %d, want %d: %.200s", r.Status, status, r.Body)
	}
	return nil
}

// Create is POST /plants with a fresh id from IDs each time: every request
// a real insert, answered 200 with the plant sent (a Plant: name and tag;
// 1.0.0's create answer has no id).
type Create struct{ IDs *atomic.Int64 }

func (c Create) Append(buf []byte, host, token string, st *State) ([]byte, error) {
	st.id = c.IDs.Add(1)
	return AppendRequest(buf, host, token, st.id), nil
}

var createdPlant = []byte(`{"name":"` + PlantName + `","tag":"` + PlantTag + `"}`)

func (Create) Check(r *Response, st *State) error {
	if err := wantStatus(r, 200); err != nil {
		return err
	}
	if !bytes.Equal(bytes.TrimSpace(r.Body), createdPlant) {
		return fmt.Errorf("POST /plants of id %d answered %.200q, want %q", st.id, r.Body, createdPlant)
	}
	return nil
}

// Get is GET /plants/{id} of an id drawn at random from First to
// First+N-1, plants the store holds; the answer must be 200 and that plant.
type Get struct{ First, N int64 }

func (g Get) Append(buf []byte, host, token string, st *State) ([]byte, error) {
	st.id = g.First + rand.Int64N(g.N)
	var target [32]byte
	return appendHead(buf, "GET", string(strconv.AppendInt(append(target[:0], "/plants/"...), st.id, 10)), host, token), nil
}

// AppendPlant appends the JSON of plant id as GET answers it.
func AppendPlant(buf []byte, id int64) []byte {
	buf = append(buf, `{"id":`...)
	buf = strconv.AppendInt(buf, id, 10)
	return append(buf, `,"name":"`+PlantName+`","tag":"`+PlantTag+`"}`...)
}

func (Get) Check(r *Response, st *State) error {
	if err := wantStatus(r, 200); err != nil {
		return err
	}
	st.want = AppendPlant(st.want[:0], st.id)
	if !bytes.Equal(bytes.TrimSpace(r.Body), st.want) {
		return fmt.Errorf("GET /plants/%d answered %.200q, want %q", st.id, r.Body, st.want)
	}
	return nil
}

// List is GET /plants?limit=Limit walks: each connection starts at the
// first page and follows the answer's Link rel="next" (the server's own
// cursor, opaque to the generator) until a page has none, then starts
// again. Every page must be 200, a JSON array of plants in ascending id
// order after the previous page's, full when a next page follows (the
// store is quiet during the phase), and not empty. Start, when set, is the
// request target of every walk's first page (a page deep in the ids, by a
// cursor the harness made), and Pages > 0 ends a walk after that many pages:
// Pages 1 asks for the same page every time.
type List struct {
	Limit int
	Start string
	Pages int
}

func (l List) Append(buf []byte, host, token string, st *State) ([]byte, error) {
	if !st.walking {
		if l.Start != "" {
			return appendHead(buf, "GET", l.Start, host, token), nil
		}
		var target [32]byte
		return appendHead(buf, "GET", string(strconv.AppendInt(append(target[:0], "/plants?limit="...), int64(l.Limit), 10)), host, token), nil
	}
	return appendHead(buf, "GET", string(st.next), host, token), nil
}

var (
	idField   = []byte(`"id":`)
	nameField = []byte(`"name":"` + PlantName + `"`)
)

func (l List) Check(r *Response, st *State) error {
	walking, last := st.walking, st.last
	st.walking = false // on any failure the connection starts a new walk
	if !walking {
		st.pages = 0
	}
	st.pages++
	if err := wantStatus(r, 200); err != nil {
		return err
	}
	body := bytes.TrimSpace(r.Body)
	if len(body) < 2 || body[0] != '[' || body[len(body)-1] != ']' {
		return fmt.Errorf("list page is not a JSON array: %.200q", body)
	}
	n := 0
	for rest := body; ; n++ {
		i := bytes.Index(rest, idField)
		if i < 0 {
			break
		}
		rest = rest[i+len(idField):]
		j := 0
		for j < len(rest) && (rest[j] == '-' || rest[j] >= '0' && rest[j] <= '9') {
			j++
		}
		id, err := strconv.ParseInt(string(rest[:j]), 10, 64)
		if err != nil {
			return fmt.Errorf("list page: id %q: %w", rest[:j], err)
		}
		if (walking || n > 0) && id <= last {
			return fmt.Errorf("list page: id %d after %d", id, last)
		}
		last = id
	}
	if n == 0 || n > l.Limit || bytes.Count(body, nameField) != n {
		return fmt.Errorf("list page of %d ids (limit %d), %d named %s", n, l.Limit, bytes.Count(body, nameField), PlantName)
	}
	if len(r.Link) == 0 {
		return nil // the walk's last page
	}
	if n != l.Limit {
		return fmt.Errorf("list page of %d plants before a next page, want %d", n, l.Limit)
	}
	if l.Pages > 0 && st.pages >= l.Pages {
		return nil // the walk's last page, by its length
	}
	target, ok := nextTarget(r.Link)
	if !ok {
		return fmt.Errorf("list page: Link %q has no rel=\"next\" <target>", r.Link)
	}
	st.next = append(st.next[:0], target...)
	st.last, st.walking = last, true
	return nil
}

// nextTarget is the target of a Link: <target>; rel="next" header.
func nextTarget(link []byte) ([]byte, bool) {
	if len(link) < 2 || link[0] != '<' || !bytes.Contains(link, []byte(`rel="next"`)) {
		return nil, false
	}
	end := bytes.IndexByte(link, '>')
	if end < 2 || link[1] != '/' {
		return nil, false
	}
	return link[1:end], true
}

// ErrExhausted is Delete's error once every id of its pool was sent.
var ErrExhausted = errors.New("delete: every id of the pool was deleted: fill a larger pool")

// Delete is DELETE /plants/{id} of the ids First to First+N-1, each once
// (the store holds them all when the phase starts): every answer must be
// 204.
type Delete struct {
	first, n int64
	sent     atomic.Int64
}

// NewDelete returns the delete route of the pool of n ids from first.
func NewDelete(first, n int64) *Delete { return &Delete{first: first, n: n} }

// Sent is how many ids were taken from the pool.
func (d *Delete) Sent() int64 { return min(d.sent.Load(), d.n) }

func (d *Delete) Append(buf []byte, host, token string, st *State) ([]byte, error) {
	i := d.sent.Add(1) - 1
	if i >= d.n {
		return buf, ErrExhausted
	}
	st.id = d.first + i
	var target [32]byte
	return appendHead(buf, "DELETE", string(strconv.AppendInt(append(target[:0], "/plants/"...), st.id, 10)), host, token), nil
}

func (d *Delete) Check(r *Response, st *State) error {
	if r.Status != 204 {
		return fmt.Errorf("DELETE /plants/%d: status %d, want 204: %.200s", st.id, r.Status, r.Body)
	}
	return nil
}
