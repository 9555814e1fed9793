// Command dapcheck is the debugger check of the skaffold scenario of make
// test-cluster (tools/k8s/cluster-test.d/70-skaffold.sh): a Debug Adapter
// Protocol client, as an editor is, of the Delve server that skaffold.yaml's
// debug profile runs the service under. It attaches (request attach, mode
// remote), sets a breakpoint at FILE:LINE, sends a request that reaches it,
// waits for the stop, looks for the request's value among the stopped
// frame's variables, continues, and waits for the request's answer. It
// prints one line of JSON: the round trip from the request sent to its
// answer (with the stop and the inspection inside), and what it found.
//
//	dapcheck -dap 127.0.0.1:56268 -file /src/internal/httpapi/plants.go -line 73 \
//	  -url http://127.0.0.1:8080/plants -token-file TOKENS -body '{"id": 7, "name": "x"}' -want x
//
// It disconnects without terminating the debuggee: the service runs on.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-dap"
)

type client struct {
	conn net.Conn
	r    *bufio.Reader
	seq  int
	msgs chan dap.Message
	errs chan error
}

func (c *client) send(req dap.RequestMessage, command string) int {
	c.seq++
	r := req.GetRequest()
	r.Seq, r.Type, r.Command = c.seq, "request", command
	if err := dap.WriteProtocolMessage(c.conn, req); err != nil {
		c.errs <- err
	}
	return c.seq
}

// wait returns the first message ok accepts, failing on an error response.
func (c *client) wait(timeout time.Duration, what string, ok func(dap.Message) bool) (dap.Message, error) {
	deadline := time.After(timeout)
	for {
		select {
		case m := <-c.msgs:
			if er, isErr := m.(*dap.ErrorResponse); isErr {
				return nil, fmt.Errorf("%s: %s: %s", what, er.Command, er.Message)
			}
			if r, isResp := m.(dap.ResponseMessage); isResp && !r.GetResponse().Success {
				return nil, fmt.Errorf("%s: %s failed: %s", what, r.GetResponse().Command, r.GetResponse().Message)
			}
			if ok(m) {
				return m, nil
			}
		case err := <-c.errs:
			return nil, fmt.Errorf("%s: %w", what, err)
		case <-deadline:
			return nil, fmt.Errorf("%s: no answer within %s", what, timeout)
		}
	}
}

func (c *client) call(req dap.RequestMessage, command string, timeout time.Duration) (dap.Message, error) {
	seq := c.send(req, command)
	return c.wait(timeout, command, func(m dap.Message) bool {
		r, ok := m.(dap.ResponseMessage)
		return ok && r.GetResponse().RequestSeq == seq
	})
}

type result struct {
	RoundTripMs int64  `json:"round_trip_ms"`
	StopMs      int64  `json:"stop_ms"`
	Stopped     string `json:"stopped_at"`
	Variable    string `json:"variable"`
	Value       string `json:"value"`
	Status      int    `json:"status"`
}

func main() {
	addr := flag.String("dap", "127.0.0.1:56268", "Delve's address")
	file := flag.String("file", "", "the breakpoint's source file, as the binary's DWARF names it")
	line := flag.Int("line", 0, "the breakpoint's line")
	url := flag.String("url", "", "the request's URL (POST)")
	tokenFile := flag.String("token-file", "", "a file whose first word is the bearer token")
	body := flag.String("body", "", "the request's JSON body")
	want := flag.String("want", "", "a value of the request the stopped frame must show")
	timeout := flag.Duration("timeout", 60*time.Second, "bound of each step")
	flag.Parse()
	res, err := run(*addr, *file, *line, *url, *tokenFile, *body, *want, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dapcheck:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

func run(addr, file string, line int, url, tokenFile, body, want string, timeout time.Duration) (*result, error) {
	token := ""
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, err
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			token = f[0]
		}
	}
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	c := &client{conn: conn, r: bufio.NewReader(conn), msgs: make(chan dap.Message, 64), errs: make(chan error, 4)}
	go func() {
		for {
			m, err := dap.ReadProtocolMessage(c.r)
			if err != nil {
				c.errs <- err
				return
			}
			c.msgs <- m
		}
	}()

	if _, err := c.call(&dap.InitializeRequest{Arguments: dap.InitializeRequestArguments{
		ClientID: "dapcheck", AdapterID: "go", PathFormat: "path", LinesStartAt1: true, ColumnsStartAt1: true,
	}}, "initialize", timeout); err != nil {
		return nil, err
	}
	if _, err := c.call(&dap.AttachRequest{Arguments: json.RawMessage(`{"mode": "remote"}`)}, "attach", timeout); err != nil {
		return nil, err
	}
	m, err := c.call(&dap.SetBreakpointsRequest{Arguments: dap.SetBreakpointsArguments{
		Source: dap.Source{Path: file}, Breakpoints: []dap.SourceBreakpoint{{Line: line}},
	}}, "setBreakpoints", timeout)
	if err != nil {
		return nil, err
	}
	if bps := m.(*dap.SetBreakpointsResponse).Body.Breakpoints; len(bps) != 1 || !bps[0].Verified {
		return nil, fmt.Errorf("breakpoint %s:%d not set: %+v", file, line, bps)
	}
	if _, err := c.call(&dap.ConfigurationDoneRequest{}, "configurationDone", timeout); err != nil {
		return nil, err
	}

	// The request, from its own goroutine: it blocks at the breakpoint.
	type answer struct {
		status int
		body   string
		err    error
		at     time.Time
	}
	answered := make(chan answer, 1)
	sent := time.Now()
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Timeout: 3 * timeout}).Do(req)
		if err != nil {
			answered <- answer{err: err, at: time.Now()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- answer{status: resp.StatusCode, body: string(b), at: time.Now()}
	}()

	m, err = c.wait(timeout, "waiting for the breakpoint", func(m dap.Message) bool {
		_, ok := m.(*dap.StoppedEvent)
		return ok
	})
	if err != nil {
		return nil, err
	}
	stopped := time.Now()
	ev := m.(*dap.StoppedEvent)
	res := &result{StopMs: stopped.Sub(sent).Milliseconds()}
	m, err = c.call(&dap.StackTraceRequest{Arguments: dap.StackTraceArguments{ThreadId: ev.Body.ThreadId, Levels: 1}}, "stackTrace", timeout)
	if err != nil {
		return nil, err
	}
	frames := m.(*dap.StackTraceResponse).Body.StackFrames
	if len(frames) == 0 {
		return nil, errors.New("stopped with no frame")
	}
	f := frames[0]
	path := ""
	if f.Source != nil {
		path = f.Source.Path
	}
	res.Stopped = fmt.Sprintf("%s %s:%d", f.Name, path, f.Line)
	if path != file || f.Line != line {
		return nil, fmt.Errorf("stopped (%s) at %s, not at the breakpoint %s:%d", ev.Body.Reason, res.Stopped, file, line)
	}
	m, err = c.call(&dap.ScopesRequest{Arguments: dap.ScopesArguments{FrameId: f.Id}}, "scopes", timeout)
	if err != nil {
		return nil, err
	}
	// Breadth first through the frame's variables, a few levels deep: the
	// request's value is a field of a local.
	type ref struct {
		id   int
		name string
	}
	queue := []ref{}
	for _, s := range m.(*dap.ScopesResponse).Body.Scopes {
		queue = append(queue, ref{s.VariablesReference, ""})
	}
	for depth := 0; depth < 3 && res.Variable == "" && len(queue) > 0; depth++ {
		var next []ref
		for _, q := range queue {
			m, err := c.call(&dap.VariablesRequest{Arguments: dap.VariablesArguments{VariablesReference: q.id}}, "variables", timeout)
			if err != nil {
				return nil, err
			}
			for _, v := range m.(*dap.VariablesResponse).Body.Variables {
				name := strings.TrimPrefix(q.name+"."+v.Name, ".")
				if strings.Contains(v.Value, want) && v.VariablesReference == 0 {
					res.Variable, res.Value = name, v.Value
					break
				}
				if v.VariablesReference > 0 {
					next = append(next, ref{v.VariablesReference, name})
				}
			}
			if res.Variable != "" {
				break
			}
		}
		queue = next
	}
	if _, err := c.call(&dap.ContinueRequest{Arguments: dap.ContinueArguments{ThreadId: ev.Body.ThreadId}}, "continue", timeout); err != nil {
		return nil, err
	}
	var a answer
	select {
	case a = <-answered:
	case <-time.After(timeout):
		return nil, errors.New("no answer to the request after continue")
	}
	_, _ = c.call(&dap.DisconnectRequest{Arguments: &dap.DisconnectArguments{TerminateDebuggee: false}}, "disconnect", 5*time.Second)
	if a.err != nil {
		return nil, fmt.Errorf("the request: %w", a.err)
	}
	res.Status, res.RoundTripMs = a.status, a.at.Sub(sent).Milliseconds()
	if res.Variable == "" {
		return res, fmt.Errorf("stopped at %s but no variable of the frame shows %q", res.Stopped, want)
	}
	if a.status/100 != 2 || !bytes.Contains([]byte(a.body), []byte(want)) {
		return res, fmt.Errorf("the request answered %d %s", a.status, a.body)
	}
	return res, nil
}
