package filewatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

const (
	unreadable = "test file unreadable"
	refused    = "test file refused"
	reloaded   = "test file reloaded"
)

// fixture is a reloader of a file in a temporary directory whose Apply
// accepts any content but "broken", recording what it applied, what was
// logged and what the observer was told.
type fixture struct {
	t       *testing.T
	path    string
	r       *Reloader
	logs    *observer.ObservedLogs
	applied []string
	told    []error
	// loggedWhenTold is how many entries were logged when the observer was
	// last told: the entry must come first.
	loggedWhenTold int
}

func newFixture(t *testing.T, current string) *fixture {
	t.Helper()
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), "file")}
	f.write(current)
	core, logs := observer.New(zapcore.InfoLevel)
	f.logs = logs
	r, err := New(Options{Path: f.path, Interval: time.Hour, Current: []byte(current),
		Unreadable: unreadable, Refused: refused, Reloaded: reloaded},
		func(data []byte) ([]zap.Field, error) {
			if strings.HasPrefix(string(data), "broken") {
				return nil, errors.New("line 1: broken")
			}
			f.applied = append(f.applied, string(data))
			return []zap.Field{zap.Int("bytes", len(data))}, nil
		}, zap.New(core), func(err error) {
			f.told = append(f.told, err)
			f.loggedWhenTold = logs.Len()
		})
	if err != nil {
		t.Fatal(err)
	}
	f.r = r
	return f
}

func (f *fixture) write(content string) {
	f.t.Helper()
	if err := os.WriteFile(f.path, []byte(content), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// check calls Check n times and returns what that applied, logged and told.
func (f *fixture) check(n int) (applied []string, logged []observer.LoggedEntry, told []error) {
	a, l, o := len(f.applied), f.logs.Len(), len(f.told)
	for range n {
		f.r.Check()
	}
	if len(f.told) > o && f.loggedWhenTold != f.logs.Len() {
		f.t.Errorf("the observer was told before the entry was logged (%d of %d entries)", f.loggedWhenTold, f.logs.Len())
	}
	return f.applied[a:], f.logs.All()[l:], f.told[o:]
}

// wantReport checks one entry logged at level with msg and the path, and one
// error told (or nil for a reload).
func (f *fixture) wantReport(what string, logged []observer.LoggedEntry, told []error, level zapcore.Level, msg string, wantErr bool) {
	f.t.Helper()
	if len(logged) != 1 || logged[0].Level != level || logged[0].Message != msg || logged[0].ContextMap()["path"] != f.path {
		f.t.Errorf("%s: logged %v; want one %v entry %q with the path", what, logged, level, msg)
	}
	if len(told) != 1 || (told[0] != nil) != wantErr {
		f.t.Errorf("%s: observer told %v; want one %s", what, told, map[bool]string{true: "error", false: "nil"}[wantErr])
	}
}

func (f *fixture) wantQuiet(what string, applied []string, logged []observer.LoggedEntry, told []error) {
	f.t.Helper()
	if len(applied)+len(logged)+len(told) > 0 {
		f.t.Errorf("%s: applied %q, logged %v, told %v; want nothing", what, applied, logged, told)
	}
}

func TestChangedFileApplied(t *testing.T) {
	f := newFixture(t, "one")
	f.write("two")
	applied, logged, told := f.check(1)
	if len(applied) != 1 || applied[0] != "two" {
		t.Fatalf("applied %q, want [two]", applied)
	}
	f.wantReport("a change", logged, told, zapcore.InfoLevel, reloaded, false)
	if n, ok := logged[0].ContextMap()["bytes"]; !ok || n != int64(3) {
		t.Errorf("the reload entry lacks Apply's fields: %v", logged[0].ContextMap())
	}
	// Unchanged since: nothing more.
	applied, logged, told = f.check(3)
	f.wantQuiet("no change since", applied, logged, told)
	// Back to the first content: a change too.
	f.write("one")
	if applied, _, _ := f.check(1); len(applied) != 1 || applied[0] != "one" {
		t.Fatalf("applied %q, want [one]", applied)
	}
}

func TestUnchangedFileNotApplied(t *testing.T) {
	f := newFixture(t, "same")
	applied, logged, told := f.check(3)
	f.wantQuiet("the content made with", applied, logged, told)
	f.write("same") // rewritten, same bytes
	applied, logged, told = f.check(2)
	f.wantQuiet("rewritten unchanged", applied, logged, told)
}

func TestBrokenFileRefusedAndReportedOnce(t *testing.T) {
	f := newFixture(t, "good")
	f.write("broken 1")
	applied, logged, told := f.check(3)
	if len(applied) != 0 {
		t.Fatalf("a broken file applied: %q", applied)
	}
	f.wantReport("a broken file, checked 3 times", logged, told, zapcore.ErrorLevel, refused, true)
	if err := logged[0].ContextMap()["error"]; err != "line 1: broken" {
		t.Errorf("the entry's error = %v, want Apply's", err)
	}

	// Another broken content is another failure.
	f.write("broken 2")
	_, logged, told = f.check(2)
	f.wantReport("another broken content", logged, told, zapcore.ErrorLevel, refused, true)

	// Back to the content in force: nothing to apply, nothing to report,
	// and the failure is over: the same broken content is reported again.
	f.write("good")
	applied, logged, told = f.check(2)
	f.wantQuiet("back to the content in force", applied, logged, told)
	f.write("broken 2")
	_, logged, told = f.check(2)
	f.wantReport("broken again after the good content", logged, told, zapcore.ErrorLevel, refused, true)

	// A good change after a broken one is applied.
	f.write("better")
	applied, logged, told = f.check(2)
	if len(applied) != 1 || applied[0] != "better" {
		t.Fatalf("applied %q, want [better]", applied)
	}
	f.wantReport("a good change after a broken one", logged, told, zapcore.InfoLevel, reloaded, false)
}

func TestUnreadableFileReportedOnce(t *testing.T) {
	f := newFixture(t, "good")
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	applied, logged, told := f.check(3)
	if len(applied) != 0 {
		t.Fatalf("applied %q from a missing file", applied)
	}
	f.wantReport("a missing file, checked 3 times", logged, told, zapcore.ErrorLevel, unreadable, true)
	if !errors.Is(told[0], os.ErrNotExist) {
		t.Errorf("observer told %v, want the read error", told[0])
	}

	// Another read failure (a directory) is reported too, once.
	if err := os.Mkdir(f.path, 0o700); err != nil {
		t.Fatal(err)
	}
	_, logged, told = f.check(2)
	f.wantReport("a directory", logged, told, zapcore.ErrorLevel, unreadable, true)
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}

	// Readable again with the content in force: nothing to do.
	f.write("good")
	applied, logged, told = f.check(2)
	f.wantQuiet("readable again, unchanged", applied, logged, told)
	// Missing again: reported again.
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	_, logged, told = f.check(1)
	f.wantReport("missing again", logged, told, zapcore.ErrorLevel, unreadable, true)
	// Readable with a change: applied.
	f.write("new")
	if applied, _, _ := f.check(1); len(applied) != 1 || applied[0] != "new" {
		t.Fatalf("applied %q, want [new]", applied)
	}
}

func TestRunAppliesChangesUntilContextEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte("v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	applied := make(chan string, 16)
	r, err := New(Options{Path: path, Interval: 5 * time.Millisecond, Current: []byte("v1")},
		func(data []byte) ([]zap.Field, error) { applied <- string(data); return nil, nil }, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	if err := os.WriteFile(path, []byte("v2"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-applied:
		if got != "v2" {
			t.Fatalf("applied %q, want v2", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not apply a change")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	// Returned: a change is no longer applied.
	if err := os.WriteFile(path, []byte("v3"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	select {
	case got := <-applied:
		t.Fatalf("applied %q after Run returned", got)
	default:
	}
}

func TestRunReturnsForAnEndedContext(t *testing.T) {
	r, err := New(Options{Path: filepath.Join(t.TempDir(), "missing"), Interval: time.Hour},
		func([]byte) ([]zap.Field, error) { return nil, nil }, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return for an ended context")
	}
}

func TestNewRefuses(t *testing.T) {
	apply := func([]byte) ([]zap.Field, error) { return nil, nil }
	for _, tt := range []struct {
		name     string
		interval time.Duration
		apply    Apply
		want     string
	}{
		{"zero interval", 0, apply, "interval"},
		{"negative interval", -time.Second, apply, "interval"},
		{"no apply", time.Second, nil, "Apply"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(Options{Path: "p", Interval: tt.interval}, tt.apply, nil, nil)
			if err == nil || r != nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, %v; want an error about %s", r, err, tt.want)
			}
		})
	}
}
