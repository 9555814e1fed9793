package auth

import (
	"bytes"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

func TestNewWithoutTokensFails(t *testing.T) {
	lc := fxtest.NewLifecycle(t)
	_, err := New(Params{Lifecycle: lc, Options: Options{}, Log: zaptest.NewLogger(t), Registry: prometheus.NewRegistry()})
	if err == nil {
		t.Fatal("New with no tokens file and no --dev succeeded")
	}
	for _, want := range []string{"--auth-tokens-file", "--dev"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	// Nothing was registered to start.
	lc.RequireStart().RequireStop()
}

func TestNewDevOnly(t *testing.T) {
	lc := fxtest.NewLifecycle(t)
	res, err := New(Params{Lifecycle: lc, Options: Options{Dev: true}, Log: zaptest.NewLogger(t), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	lc.RequireStart()
	defer lc.RequireStop()

	dev := string(res.DevToken)
	if dev == "" {
		t.Fatal("DevToken is empty in development mode")
	}
	if len(dev) != 43 || !IsToken68(dev) {
		t.Errorf("DevToken %q: want 43 token68 characters", dev)
	}
	if res.Keyring == nil || !res.Keyring.Accepts(dev) || res.Keyring.Len() != 1 {
		t.Fatal("the keyring does not hold exactly the dev token")
	}
	if res.Keyring.Accepts("") || res.Keyring.Accepts(dev+"x") {
		t.Error("the keyring accepts more than the dev token")
	}
	if res.Authenticate == nil || res.Announce == nil {
		t.Fatal("Authenticate or Announce is nil")
	}
	checkAuthenticate(t, res.Authenticate, dev)

	// Another start generates another token.
	res2, err := New(Params{Lifecycle: fxtest.NewLifecycle(t), Options: Options{Dev: true}, Log: zap.NewNop(), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if res2.DevToken == res.DevToken {
		t.Error("two dev starts generated the same token")
	}
}

// checkAuthenticate sends good and bad requests through the middleware.
func checkAuthenticate(t *testing.T, mw func(http.Handler) http.Handler, good string) {
	t.Helper()
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	if rec := serve(h, "Bearer "+good); rec.Code != http.StatusNoContent {
		t.Errorf("Authenticate refused a good token: %d", rec.Code)
	}
	if rec := serve(h, "Bearer not-"+good); rec.Code != http.StatusUnauthorized {
		t.Errorf("Authenticate let a bad token through: %d", rec.Code)
	}
	if rec := serve(h); rec.Code != http.StatusUnauthorized {
		t.Errorf("Authenticate let a request without credentials through: %d", rec.Code)
	}
}

func TestNewFileAndDev(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "file-token\n")
	lc := fxtest.NewLifecycle(t)
	res, err := New(Params{Lifecycle: lc, Options: Options{TokensFile: path, ReloadInterval: testInterval, Dev: true}, Log: zaptest.NewLogger(t), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	lc.RequireStart()
	stopped := false
	defer func() {
		if !stopped {
			lc.RequireStop()
		}
	}()

	k, dev := res.Keyring, string(res.DevToken)
	if dev == "" {
		t.Fatal("DevToken is empty")
	}
	if !k.Accepts("file-token") || !k.Accepts(dev) || k.Len() != 2 {
		t.Fatalf("keyring: file %v, dev %v, Len %d", k.Accepts("file-token"), k.Accepts(dev), k.Len())
	}
	checkAuthenticate(t, res.Authenticate, "file-token")
	checkAuthenticate(t, res.Authenticate, dev)

	// The reloader runs with the application and keeps the dev token.
	writeFile(t, path, "rotated-token\n")
	eventually(t, "the rotated token is not accepted", func() bool { return k.Accepts("rotated-token") })
	if k.Accepts("file-token") {
		t.Error("the rotated-out token is still accepted")
	}
	if !k.Accepts(dev) {
		t.Error("the dev token was lost on reload")
	}

	// Stopping the application stops the reloader.
	lc.RequireStop()
	stopped = true
	writeFile(t, path, "after-stop\n")
	time.Sleep(10 * testInterval)
	if k.Accepts("after-stop") {
		t.Error("the reloader still runs after the application stopped")
	}
}

func TestNewFileOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, sha256Line("file-token", false)+"\n")
	lc := fxtest.NewLifecycle(t)
	res, err := New(Params{Lifecycle: lc, Options: Options{TokensFile: path, ReloadInterval: time.Second}, Log: zaptest.NewLogger(t), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	lc.RequireStart()
	defer lc.RequireStop()
	if res.DevToken != "" {
		t.Errorf("DevToken = %q without --dev, want empty", res.DevToken)
	}
	if !res.Keyring.Accepts("file-token") || res.Keyring.Len() != 1 {
		t.Error("keyring does not hold exactly the file's token")
	}
	checkAuthenticate(t, res.Authenticate, "file-token")
}

func TestNewFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	writeFile(t, bad, "not a token\n")
	good := filepath.Join(dir, "good")
	writeFile(t, good, "good\n")
	tests := []struct {
		name string
		o    Options
	}{
		{"missing file", Options{TokensFile: filepath.Join(dir, "missing"), ReloadInterval: time.Second}},
		{"missing file with dev", Options{TokensFile: filepath.Join(dir, "missing"), ReloadInterval: time.Second, Dev: true}},
		{"unparseable file", Options{TokensFile: bad, ReloadInterval: time.Second}},
		{"zero reload interval", Options{TokensFile: good}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := fxtest.NewLifecycle(t)
			if _, err := New(Params{Lifecycle: lc, Options: tt.o, Log: zaptest.NewLogger(t), Registry: prometheus.NewRegistry()}); err == nil {
				t.Fatal("New succeeded, want an error")
			}
			lc.RequireStart().RequireStop()
		})
	}
	if _, err := New(Params{Lifecycle: fxtest.NewLifecycle(t), Options: tests[0].o, Log: zap.NewNop(), Registry: prometheus.NewRegistry()}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: error %v does not wrap fs.ErrNotExist", err)
	}
}

// captureStderr runs f with os.Stderr redirected to a file and returns what
// was written. Tests of this package do not run in parallel.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	tmp, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	saved := os.Stderr
	os.Stderr = tmp
	defer func() { os.Stderr = saved }()
	f()
	b, err := os.ReadFile(tmp.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewAnnounce(t *testing.T) {
	res, err := New(Params{Lifecycle: fxtest.NewLifecycle(t), Options: Options{Dev: true, DocsPath: "/docs"}, Log: zap.NewNop(), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	out := captureStderr(t, func() { res.Announce("[::]:8080") })
	if !strings.Contains(out, string(res.DevToken)) || !strings.Contains(out, "http://localhost:8080/plants") ||
		!strings.Contains(out, "\n  http://localhost:8080/docs\n") {
		t.Errorf("dev announce printed %q, want the token, the curl line's URL and the page's", out)
	}

	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "file-token\n")
	res, err = New(Params{Lifecycle: fxtest.NewLifecycle(t), Options: Options{TokensFile: path, ReloadInterval: time.Second}, Log: zap.NewNop(), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if out := captureStderr(t, func() { res.Announce(":8080") }); out != "" {
		t.Errorf("announce without --dev printed %q, want nothing", out)
	}
}

func TestPrintDevBanner(t *testing.T) {
	const token = DevToken("dev-TOKEN_abc123")
	tests := []struct {
		addr string
		url  string
	}{
		{":8080", "http://localhost:8080/plants"},
		{"0.0.0.0:8080", "http://localhost:8080/plants"},
		{"[::]:8080", "http://localhost:8080/plants"},
		{"127.0.0.1:18080", "http://127.0.0.1:18080/plants"},
		{"[::1]:8080", "http://[::1]:8080/plants"},
		{"localhost:3000", "http://localhost:3000/plants"},
		{"192.0.2.7:80", "http://192.0.2.7:80/plants"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			var buf bytes.Buffer
			PrintDevBanner(&buf, token, tt.addr, "/docs")
			out := buf.String()
			// The page's URL on a line of its own, beside the curl line:
			// the same host and port, the page's path.
			if page := strings.TrimSuffix(tt.url, "/plants") + "/docs"; !strings.Contains(out, "\n  "+page+"\n") {
				t.Errorf("banner does not show the reference page's URL %s on a line of its own:\n%s", page, out)
			}
			if !strings.Contains(out, "\n  "+string(token)+"\n") {
				t.Errorf("banner does not show the token on a line of its own:\n%s", out)
			}
			var curl string
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "curl ") {
					curl = line
				}
			}
			if curl == "" {
				t.Fatalf("no curl line in:\n%s", out)
			}
			for _, want := range []string{
				"-X POST " + tt.url + " ",
				"'Authorization: Bearer " + string(token) + "'",
				"'Content-Type: application/json'",
				`-d '{"id": 1, "name": "Monstera"`,
			} {
				if !strings.Contains(curl, want) {
					t.Errorf("curl line %q lacks %q", curl, want)
				}
			}
			for _, host := range []string{"0.0.0.0", "[::]:"} {
				if strings.Contains(out, host) {
					t.Errorf("banner still shows the wildcard host %s:\n%s", host, out)
				}
			}
		})
	}
}

// With the page turned off (--docs-page=false) the banner names no page.
func TestPrintDevBannerWithoutThePage(t *testing.T) {
	var buf bytes.Buffer
	PrintDevBanner(&buf, DevToken("dev-token"), ":8080", "")
	if out := buf.String(); strings.Contains(out, "/docs") || strings.Contains(out, "reference") || !strings.Contains(out, "curl ") {
		t.Errorf("banner without a page:\n%s", out)
	}
}
