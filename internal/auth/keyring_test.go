package auth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/internal/filewatch"
)

const (
	testInterval = 20 * time.Millisecond
	waitFor      = 5 * time.Second
)

// reloads records what a ReloadObserver is told.
type reloads struct {
	mu   sync.Mutex
	errs []error
}

func (r *reloads) observe(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *reloads) snapshot() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

// failures is the number of reload attempts that reported an error.
func (r *reloads) failures() int {
	n := 0
	for _, err := range r.snapshot() {
		if err != nil {
			n++
		}
	}
	return n
}

func (r *reloads) successes() int {
	n := 0
	for _, err := range r.snapshot() {
		if err == nil {
			n++
		}
	}
	return n
}

// writeFile replaces the file in one rename, as an operator's tool or the kubelet
// does: written in place, the poller may read it truncated and empty, and
// rightly refuse that.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", waitFor, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// run starts the reloader and returns a function that stops it and checks
// that Run returned.
func run(t *testing.T, r *filewatch.Reloader) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(waitFor):
				t.Errorf("Run did not return %v after its context ended", waitFor)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	writeFile(t, path, "# keys\nalpha\n"+sha256Line("beta", false)+"\n")

	k, r, err := LoadFile(path, testInterval, TokenSet{}, zaptest.NewLogger(t), nil)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if r == nil || k == nil {
		t.Fatal("LoadFile returned a nil keyring or reloader")
	}
	if k.Len() != 2 || !k.Accepts("alpha") || !k.Accepts("beta") || k.Accepts("gamma") {
		t.Errorf("keyring: Len %d, alpha %v, beta %v, gamma %v", k.Len(),
			k.Accepts("alpha"), k.Accepts("beta"), k.Accepts("gamma"))
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	writeFile(t, bad, "ok\nleaked secret\n")
	empty := filepath.Join(dir, "empty")
	writeFile(t, empty, "# nothing yet\n")
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name     string
		path     string
		interval time.Duration
		is       error
		contains []string
	}{
		{"missing file", missing, testInterval, fs.ErrNotExist, []string{"auth tokens file", missing}},
		{"unparseable file", bad, testInterval, nil, []string{bad, "line 2"}},
		{"no tokens", empty, testInterval, ErrNoTokens, []string{empty}},
		{"a directory", dir, testInterval, nil, []string{"auth tokens file"}},
		{"zero interval", bad, 0, nil, []string{"interval"}},
		{"negative interval", bad, -time.Second, nil, []string{"interval"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, r, err := LoadFile(tt.path, tt.interval, NewTokenSet("extra"), zaptest.NewLogger(t), nil)
			if err == nil {
				t.Fatal("LoadFile succeeded, want an error")
			}
			if k != nil || r != nil {
				t.Error("LoadFile returned a keyring or reloader with an error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			for _, c := range tt.contains {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("error %q does not mention %q", err, c)
				}
			}
			if strings.Contains(err.Error(), "leaked") || strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q leaks the file's content", err)
			}
		})
	}
}

func TestReloadRewriteInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "old-token\n")
	obs := &reloads{}
	k, r, err := LoadFile(path, testInterval, TokenSet{}, zaptest.NewLogger(t), obs.observe)
	if err != nil {
		t.Fatal(err)
	}
	run(t, r)

	if !k.Accepts("old-token") {
		t.Fatal("old token not accepted before the rewrite")
	}
	// An unchanged file is not reported as a reload.
	time.Sleep(5 * testInterval)
	if got := obs.snapshot(); len(got) != 0 {
		t.Errorf("observer called %d times for an unchanged file: %v", len(got), got)
	}

	writeFile(t, path, "new-token\n"+sha256Line("hashed-new", true)+"\n")
	eventually(t, "the new tokens are not accepted", func() bool { return k.Accepts("new-token") && k.Accepts("hashed-new") })
	if k.Accepts("old-token") {
		t.Error("the old token is still accepted after the rewrite")
	}
	if !k.Accepts("hashed-new") || k.Len() != 2 {
		t.Errorf("keyring: hashed-new %v, Len %d, want true, 2", k.Accepts("hashed-new"), k.Len())
	}
	eventually(t, "the observer was not told of the reload", func() bool { return obs.successes() >= 1 })
	// os.WriteFile truncates before it writes, so a poll may see the file
	// empty for a moment: that, and only that, may be reported (and the set
	// in force kept meanwhile).
	for _, err := range obs.snapshot() {
		if err != nil && !errors.Is(err, ErrNoTokens) {
			t.Errorf("observer got %v, want only ErrNoTokens from the truncation window", err)
		}
	}
}

// TestReloadKubernetesSecret replays how the kubelet updates a mounted
// Secret: the file is a symlink through ..data to a timestamped directory,
// and an update swaps ..data atomically with a rename.
func TestReloadKubernetesSecret(t *testing.T) {
	dir := t.TempDir()
	v1 := "..2026_01_01_v1"
	if err := os.Mkdir(filepath.Join(dir, v1), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, v1, "tokens"), "token-v1\n")
	if err := os.Symlink(v1, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "tokens"), filepath.Join(dir, "tokens")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokens")

	obs := &reloads{}
	k, r, err := LoadFile(path, testInterval, TokenSet{}, zaptest.NewLogger(t), obs.observe)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Accepts("token-v1") {
		t.Fatal("token-v1 not accepted at load")
	}
	run(t, r)

	swap := func(version, content string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, version), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, version, "tokens"), content)
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(version, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}

	v2 := "..2026_01_02_v2"
	swap(v2, "token-v2\n")
	eventually(t, "token-v2 is not accepted after the ..data swap", func() bool { return k.Accepts("token-v2") })
	// The kubelet then removes the old directory. (Done after the reload
	// only so that no read in flight through the old ..data can fail.)
	if err := os.RemoveAll(filepath.Join(dir, v1)); err != nil {
		t.Fatal(err)
	}
	if k.Accepts("token-v1") {
		t.Error("token-v1 still accepted after the swap")
	}

	// A second rotation, to a hashed token.
	swap("..2026_01_03_v3", "# rotated\n"+sha256Line("token-v3", false)+"\n")
	eventually(t, "token-v3 is not accepted after the second swap", func() bool { return k.Accepts("token-v3") })
	if k.Accepts("token-v2") {
		t.Error("token-v2 still accepted after the second swap")
	}
	if n := obs.failures(); n != 0 {
		t.Errorf("observer got %d errors during clean swaps: %v", n, obs.snapshot())
	}
}

func TestReloadUnparseableKeepsSet(t *testing.T) {
	const leaked = "leaked-secret-value"
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "kept-token\n")
	core, logs := observer.New(zapcore.InfoLevel)
	obs := &reloads{}
	k, r, err := LoadFile(path, testInterval, TokenSet{}, zap.New(core), obs.observe)
	if err != nil {
		t.Fatal(err)
	}
	run(t, r)

	writeFile(t, path, "new-token\n"+leaked+" with spaces\n")
	eventually(t, "the observer was not given an error", func() bool { return obs.failures() >= 1 })
	for _, err := range obs.snapshot() {
		if err == nil {
			t.Error("observer reported a successful reload of an unparseable file")
		} else if !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), leaked) {
			t.Errorf("observer error %q: want it to name line 2 without the content", err)
		}
	}
	if !k.Accepts("kept-token") {
		t.Error("the previous token was dropped on a bad file")
	}
	if k.Accepts("new-token") {
		t.Error("a token of the bad file was accepted")
	}
	if k.Len() != 1 {
		t.Errorf("Len = %d, want 1", k.Len())
	}

	errorsLogged := logs.FilterLevelExact(zapcore.ErrorLevel).All()
	if len(errorsLogged) == 0 {
		t.Fatalf("no Error-level entry logged; entries: %v", logs.All())
	}
	for _, e := range logs.All() {
		text := fmt.Sprintf("%s %v", e.Message, e.ContextMap())
		if strings.Contains(text, leaked) || strings.Contains(text, "new-token") {
			t.Errorf("log entry leaks the file content: %s", text)
		}
	}
	if p, ok := errorsLogged[0].ContextMap()["path"]; !ok || p != path {
		t.Errorf("error entry path = %v, want %q", p, path)
	}

	// Fixing the file recovers.
	writeFile(t, path, "fixed-token\n")
	eventually(t, "the fixed file was not loaded", func() bool { return k.Accepts("fixed-token") })
	if k.Accepts("kept-token") {
		t.Error("the old token survived the fixed file")
	}
}

func TestReloadEmptiedFileKeepsSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "kept-token\n")
	obs := &reloads{}
	k, r, err := LoadFile(path, testInterval, TokenSet{}, zap.NewNop(), obs.observe)
	if err != nil {
		t.Fatal(err)
	}
	run(t, r)

	// A half-written file (truncated by an editor) must not lock everyone out.
	writeFile(t, path, "# being edited\n")
	eventually(t, "the observer was not given an error", func() bool { return obs.failures() >= 1 })
	for _, err := range obs.snapshot() {
		if err != nil && !errors.Is(err, ErrNoTokens) {
			t.Errorf("observer error %v, want ErrNoTokens", err)
		}
	}
	if !k.Accepts("kept-token") || k.Len() != 1 {
		t.Error("the previous set was not kept")
	}
}

func TestReloadDeletedFileKeepsSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "kept-token\n")
	core, logs := observer.New(zapcore.InfoLevel)
	obs := &reloads{}
	k, r, err := LoadFile(path, testInterval, NewTokenSet("dev-token"), zap.New(core), obs.observe)
	if err != nil {
		t.Fatal(err)
	}
	run(t, r)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the observer was not given an error", func() bool { return obs.failures() >= 1 })
	for _, err := range obs.snapshot() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("observer error %v, want one wrapping fs.ErrNotExist", err)
		}
	}
	if !k.Accepts("kept-token") || !k.Accepts("dev-token") || k.Len() != 2 {
		t.Errorf("set not kept: kept %v, dev %v, Len %d", k.Accepts("kept-token"), k.Accepts("dev-token"), k.Len())
	}
	if logs.FilterLevelExact(zapcore.ErrorLevel).Len() == 0 {
		t.Error("no Error-level entry for the deleted file")
	}

	// The file coming back, with new content, is picked up.
	writeFile(t, path, "back-token\n")
	eventually(t, "the recreated file was not loaded", func() bool { return k.Accepts("back-token") })
	if k.Accepts("kept-token") {
		t.Error("the old token survived the recreated file")
	}
	if !k.Accepts("dev-token") {
		t.Error("the extra token was lost")
	}
}

func TestReloadKeepsExtra(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "file-v1\n")
	k, r, err := LoadFile(path, testInterval, NewTokenSet("dev-token"), zaptest.NewLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Accepts("file-v1") || !k.Accepts("dev-token") || k.Len() != 2 {
		t.Fatal("initial load must hold the file's tokens and the extra one")
	}
	run(t, r)

	for i, content := range []string{"file-v2\n", "file-v3a\nfile-v3b\n"} {
		writeFile(t, path, content)
		first := strings.Fields(content)[0]
		eventually(t, first+" is not accepted", func() bool { return k.Accepts(first) })
		if !k.Accepts("dev-token") {
			t.Errorf("reload %d dropped the extra token", i+1)
		}
	}
	if k.Len() != 3 || k.Accepts("file-v1") || k.Accepts("file-v2") {
		t.Errorf("after reloads: Len %d (want 3), v1 %v, v2 %v", k.Len(), k.Accepts("file-v1"), k.Accepts("file-v2"))
	}
}

func TestReloadRunStops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "t1\n")
	obs := &reloads{}
	k, r, err := LoadFile(path, testInterval, TokenSet{}, zaptest.NewLogger(t), obs.observe)
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, r)
	writeFile(t, path, "t2\n")
	eventually(t, "t2 not accepted", func() bool { return k.Accepts("t2") })

	stop() // fails the test if Run does not return
	n := len(obs.snapshot())
	writeFile(t, path, "t3\n")
	time.Sleep(10 * testInterval)
	if k.Accepts("t3") || !k.Accepts("t2") {
		t.Error("the keyring changed after Run returned")
	}
	if got := len(obs.snapshot()); got != n {
		t.Errorf("observer called %d more times after Run returned", got-n)
	}
}

func TestRunReturnsOnCancelledContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "t1\n")
	_, r, err := LoadFile(path, time.Hour, TokenSet{}, zaptest.NewLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("Run did not return for an already cancelled context")
	}
}

func TestKeyringConcurrentReplace(t *testing.T) {
	// Readers see either set, never a mix; run with -race.
	a, b := NewTokenSet("a1", "a2"), NewTokenSet("b1", "b2")
	k := NewKeyring(a)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				k.Replace(b)
			} else {
				k.Replace(a)
			}
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				s := k.current.Load()
				isA := s.Accepts("a1") && s.Accepts("a2") && !s.Accepts("b1") && !s.Accepts("b2")
				isB := s.Accepts("b1") && s.Accepts("b2") && !s.Accepts("a1") && !s.Accepts("a2")
				if s.Len() != 2 || isA == isB {
					t.Error("a reader saw a mix of two sets")
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
}

// TestReloadBadAttributesKeepSet: a file whose attributes are wrong is
// refused as a whole, the last good clients kept with their attributes;
// the refusal names the line; a good change is then taken in.
func TestReloadBadAttributesKeepSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "reader-token name=reader scopes=plants:read rate=5/s\n")
	obs := &reloads{}
	k, r, err := LoadFile(path, testInterval, TokenSet{}, zap.NewNop(), obs.observe)
	if err != nil {
		t.Fatal(err)
	}
	run(t, r)
	for i, bad := range []string{
		"reader-token name=reader scopes=plants:read,plants:write\nnew-token name=x name=y\n",
		"reader-token name=reader\nnew-token scopes=plants:admin\n",
		"reader-token name=reader\nnew-token rate=0/s\n",
		"reader-token name=reader\nnew-token expires=2001-01-01T00:00:00Z\n",
	} {
		writeFile(t, path, bad)
		eventually(t, "the observer was not given an error", func() bool { return obs.failures() >= i+1 })
		errs := obs.snapshot()
		if last := errs[len(errs)-1]; last == nil || !strings.Contains(last.Error(), "line 2:") {
			t.Errorf("bad file %d: observer error %v, want it to name line 2", i, last)
		}
		c := k.Lookup("reader-token")
		if c == nil || c.Name != "reader" || c.Scopes != ScopeRead || c.Rate.Count != 5 || k.Accepts("new-token") {
			t.Fatalf("bad file %d: the set in force changed: reader %+v, new-token %v", i, c, k.Accepts("new-token"))
		}
	}
	writeFile(t, path, "reader-token name=reader scopes=plants:read,plants:write\n")
	eventually(t, "the good file was not taken in", func() bool {
		c := k.Lookup("reader-token")
		return c != nil && c.Scopes == AllScopes && c.Rate.IsZero()
	})
}
