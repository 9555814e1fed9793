package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/plantstore/plantstore/internal/servicetest"
)

var screenshot = flag.String("screenshot", "", "write the reference page's screenshot here (make docs-page-screenshot: docs/api-reference.png)")

// TestReferencePage drives headless Chromium against a running service, as
// a person reading the API would: GET /docs renders with no console error,
// no request outside the service's origin and none failed or blocked (by
// the Content-Security-Policy or otherwise); every operation and event of
// the document the service serves is shown, so that a route added to the
// document but not shown fails here; and from the page's own request form
// a create without a token shows the 401 and its Error body, then with a
// token typed into the form answers 200, and the plant is then read back
// with GET /plants/{id}. It ends with a screenshot of that 200.
func TestReferencePage(t *testing.T) {
	chromium := chromiumPath(t)
	const token = "reference-page-test-token"
	tokens := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, tokens, token+" name=reference-page\n")
	svc := service{servicetest.Start(t, servicetest.Binary(t), servicetest.Options{NoTokens: true,
		Extra: []string{"--auth-tokens-file", tokens}})}
	doc, err := loadDocument(svc.call(t, "GET", "/openapi.yaml", "", "", 200))
	if err != nil {
		t.Fatalf("the served document: %v", err)
	}

	b := startBrowser(t, chromium, svc.API)
	b.do(t, "open the page", chromedp.Navigate(svc.API+"/docs"))
	// Rendered when the link of the document's last event is there.
	events := webhooks(doc)
	b.wait(t, "the page to render", fmt.Sprintf(`[...document.querySelectorAll('a')].some(a => a.getAttribute('href')?.endsWith(%q))`, "/"+events[len(events)-1].path))

	// Every operation and event of the document, as a link of the page.
	links := b.links(t)
	if missing := notShown(doc, links, nil); len(missing) > 0 {
		t.Errorf("the page does not show %s; its links: %q", strings.Join(missing, ", "), links)
	}
	// The check sees what is missing: a route the page was not given.
	extra := operation{method: "GET", path: "/plants/{id}/photos", Operation: &openapi3.Operation{Summary: "List photos"}}
	if missing := notShown(doc, links, []operation{extra}); !slices.Equal(missing, []string{"GET /plants/{id}/photos"}) {
		t.Errorf("a route the document lacks is reported as %q, want it missing", missing)
	}
	b.checkClean(t, "loading the page")

	// Try it: the create's request form, opened from the operation's section.
	ops := operations(doc)
	i := slices.IndexFunc(ops, func(op operation) bool { return op.OperationID == "createPlant" })
	if i < 0 {
		t.Fatal("the document has no operation createPlant")
	}
	create := ops[i]
	b.click(t, "the sidebar's "+create.Summary, fmt.Sprintf(`[...document.querySelectorAll('a')].find(a => a.innerText.trim().startsWith(%q))`, create.Summary))
	b.click(t, "Test Request of POST /plants", `[...document.querySelectorAll('button')].find(b => /Test Request\s*\(post \/plants\)/i.test(b.innerText))`)
	const dialog = `document.querySelector('.scalar-client[role=dialog]')`
	b.wait(t, "the request form", dialog+`?.querySelector('input[placeholder=Token]') != null`)
	// The form's Send button (its label names the request), as shown.
	sendButton := `[...` + dialog + `.querySelectorAll('button')].find(b => /^Send\b[\s\S]*post request/.test(b.innerText.trim()) && b.getClientRects().length > 0)`
	response := dialog + `.innerText.split('Response').slice(1).join('Response')`

	// Without a token (the form sends "Bearer " and nothing: malformed),
	// the 401 and its Error body, in the page.
	b.click(t, "Send without a token", sendButton)
	b.wait(t, "the 401 and its Error body shown", `/401 Unauthorized[\s\S]*"error": 401\d\d,\s*"message": "[^"]+"/.test(`+response+`)`)

	// With a token typed into the form, the body the form holds: 200.
	var body struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	sent := b.eval(t, `[...`+dialog+`.querySelectorAll('.cm-content')].map(e => e.innerText).find(t => t.includes('"id"'))`)
	if err := json.Unmarshal([]byte(sent), &body); err != nil || body.Name == "" {
		t.Fatalf("the form's body %q: %v", sent, err)
	}
	path := fmt.Sprintf("/plants/%d", body.ID)
	svc.call(t, "GET", path, "Bearer "+token, "", 404)
	b.do(t, "type the token", chromedp.SendKeys(chromedp.CSS(".scalar-client[role=dialog] input[placeholder=Token]"), token))
	b.click(t, "Send with the token", sendButton)
	b.wait(t, "the 200 shown", response+`.includes('200 OK') && `+response+fmt.Sprintf(`.includes(%q)`, body.Name))
	var stored struct{ Name string }
	if err := json.Unmarshal(svc.call(t, "GET", path, "Bearer "+token, "", 200), &stored); err != nil || stored.Name != body.Name {
		t.Errorf("GET %s after the page's create: name %q (%v), want %q", path, stored.Name, err, body.Name)
	}
	b.screenshot(t, *screenshot)
	// The 401 asked for above is the one failure allowed.
	b.checkClean(t, "sending requests from the page", answer{"POST", svc.API + "/plants", 401})
}

// chromiumPath finds Chromium: $CHROMIUM, else chromium on PATH (Debian's
// package, which make chromium installs). None fails the test: it never
// skips, as the tests needing redis-server do not.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found: make chromium installs Debian's package (apt-get install chromium), or set CHROMIUM")
	return ""
}

// browser is one headless Chromium tab, and what it saw: console errors,
// requests, failed or blocked loads, answers other than 2xx and 304.
type browser struct {
	ctx    context.Context
	origin string

	mu       sync.Mutex
	problems []string
	requests []string
	status   map[network.RequestID]string // "METHOD URL"
}

func startBrowser(t *testing.T, path, origin string) *browser {
	t.Helper()
	b := &browser{origin: origin, status: map[network.RequestID]string{}}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 800))
	if os.Geteuid() == 0 { // Chromium refuses its sandbox to root (CI runs as root)
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	b.ctx = ctx
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tab *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tab, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, tab, cdplog.Enable, cdp.Empty{}); err != nil {
			return err
		}
		// The policy's violations, as the page itself sees them.
		_, err := cdp.Call(ctx, tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			window.__violations = [];
			document.addEventListener('securitypolicyviolation', e =>
				window.__violations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber));`})
		return err
	}), chromedp.EmulateViewport(1280, 800))
	if err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return b
}

// listen runs in the tab's event loop: it records and returns.
func (b *browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.problems = append(b.problems, "console "+string(e.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		text := e.ExceptionDetails.Text
		if ex := e.ExceptionDetails.Exception; ex != nil {
			text += " " + ex.Description
		}
		b.problems = append(b.problems, "exception: "+text)
	case *cdplog.EventEntryAdded:
		if e.Entry.Level == cdplog.EntryLevelError {
			b.problems = append(b.problems, fmt.Sprintf("console error (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
		b.status[e.RequestID] = e.Request.Method + " " + e.Request.URL
	case *network.EventResponseReceived:
		if s := e.Response.Status; s >= 300 && s != 304 {
			b.problems = append(b.problems, fmt.Sprintf("%s %d", b.status[e.RequestID], s))
		}
	case *network.EventLoadingFailed:
		b.problems = append(b.problems, fmt.Sprintf("failed: %s: %s %s", b.status[e.RequestID], e.ErrorText, e.BlockedReason))
	}
}

// answer is an answer the test asked for that is not a success.
type answer struct {
	method, url string
	status      int
}

// checkClean fails the test for what the browser saw since the last check:
// a console error, a request to another origin, a load that failed or was
// blocked, a violation of the page's policy, an answer other than 2xx or
// 304 but those expected (and the console's line for each of them).
func (b *browser) checkClean(t *testing.T, during string, expected ...answer) {
	t.Helper()
	violations := b.eval(t, `JSON.stringify(window.__violations || [])`)
	b.mu.Lock()
	problems, requests := b.problems, b.requests
	b.problems, b.requests = nil, nil
	b.mu.Unlock()
	if violations != "[]" {
		t.Errorf("%s: the Content-Security-Policy blocked %s", during, violations)
	}
	for _, r := range requests {
		u, err := url.Parse(r)
		if err != nil || (u.Scheme != "data" && u.Scheme+"://"+u.Host != b.origin) {
			t.Errorf("%s: a request left the service's origin %s: %s", during, b.origin, r)
		}
	}
	for _, p := range problems {
		if !slices.ContainsFunc(expected, func(a answer) bool {
			return p == fmt.Sprintf("%s %s %d", a.method, a.url, a.status) ||
				(strings.HasPrefix(p, "console error (network): ") && strings.HasSuffix(p, " "+a.url) && strings.Contains(p, fmt.Sprintf("status of %d ", a.status)))
		}) {
			t.Errorf("%s: %s", during, p)
		}
	}
}

func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) eval(t *testing.T, expr string) string {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// wait polls the page until the expression is true, for 20 s at most.
func (b *browser) wait(t *testing.T, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v\nthe page shows:\n%s", what, err, b.text())
	}
}

// click clicks, with the mouse, the element the expression finds.
func (b *browser) click(t *testing.T, what, expr string) {
	t.Helper()
	b.wait(t, what, expr+` != null`)
	b.do(t, "clicking "+what, chromedp.Click(chromedp.JSPath(expr)))
}

// text is what the page shows, for a failure's message.
func (b *browser) text() string {
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		return err.Error()
	}
	return v
}

type link struct{ Text, Href string }

// links are the page's links, their text's white space folded.
func (b *browser) links(t *testing.T) []link {
	t.Helper()
	var links []link
	raw := b.eval(t, `JSON.stringify([...document.querySelectorAll('a')].map(a => ({Text: a.innerText, Href: a.getAttribute('href') || ''})))`)
	if err := json.Unmarshal([]byte(raw), &links); err != nil {
		t.Fatal(err)
	}
	for i := range links {
		links[i].Text = strings.Join(strings.Fields(links[i].Text), " ")
	}
	return links
}

// notShown lists the operations of the document (and extra) the page has no
// link for: an operation's link reads "METHOD path", an event's "POST
// summary" and points at the event's name.
func notShown(doc *openapi3.T, links []link, extra []operation) []string {
	var missing []string
	for _, op := range append(operations(doc), extra...) {
		if !slices.ContainsFunc(links, func(l link) bool { return l.Text == op.method+" "+op.path }) {
			missing = append(missing, op.method+" "+op.path)
		}
	}
	for _, ev := range webhooks(doc) { // path: the event's name
		if !slices.ContainsFunc(links, func(l link) bool {
			return l.Text == ev.method+" "+ev.Summary && strings.HasSuffix(l.Href, "/"+ev.path)
		}) {
			missing = append(missing, "the event "+ev.path)
		}
	}
	return missing
}

// screenshot captures the viewport, checks it is a PNG of the window's
// size, and writes it to path (none: the test's directory).
func (b *browser) screenshot(t *testing.T, path string) {
	t.Helper()
	shot, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
		t.Fatalf("the screenshot is not a 1280x800 PNG: %v %+v", err, cfg)
	}
	if path == "" {
		path = filepath.Join(t.TempDir(), "api-reference.png")
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))
}
