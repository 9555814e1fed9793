package webhook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestParseSubscribers(t *testing.T) {
	a, _ := testSecret(t, 'a')
	b, _ := testSecret(t, 'b')
	good := "# subscribers\n\n" +
		"https://hooks.example.com/plants " + a + "   # primary\n" +
		"http://user:pass@hooks.example.com:8080/p?token=x " + a + " " + b + "\n" +
		"https://hooks.example.com/other " + b + "\n"
	subs, err := ParseSubscribers(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 3 || len(subs[0].Secrets) != 1 || len(subs[1].Secrets) != 2 {
		t.Fatalf("parsed %+v", subs)
	}
	wantNames := []string{"hooks.example.com", "hooks.example.com:8080", "hooks.example.com#2"}
	for i, s := range subs {
		if s.Name != wantNames[i] {
			t.Errorf("subscriber %d named %q, want %q (host[:port], never credentials or query)", i, s.Name, wantNames[i])
		}
		if len(s.Key) != 16 {
			t.Errorf("key %q", s.Key)
		}
	}
	// The key follows the URL, not the line or the secrets.
	again, _ := ParseSubscribers(strings.NewReader("https://hooks.example.com/other " + a + "\n"))
	if again[0].Key != subs[2].Key {
		t.Error("a subscriber's key changed with its line or secret")
	}

	for _, tt := range []struct{ name, file, want string }{
		{"URL alone", "https://x.example/\n", "line 1: want `URL secret [secret]`, got 1 fields"},
		{"three secrets", "https://x.example/ " + a + " " + a + " " + b, "line 1: want"},
		{"relative URL", "# c\n/hooks " + a, "line 2: the URL must be absolute"},
		{"ftp", "ftp://x.example/ " + a, "line 1: the URL must be absolute http"},
		{"no host", "http:///p " + a, "line 1: the URL must be absolute"},
		{"bad secret", "\n\nhttps://x.example/ whsec_short", "line 3: secret 1:"},
		{"raw secret", "https://x.example/ " + strings.TrimPrefix(a, "whsec_"), "line 1: secret 1: a secret must start with whsec_"},
		{"duplicate URL", "https://x.example/ " + a + "\nhttps://x.example/ " + b, "line 2: the URL of line 1 again"},
		{"unparsable URL", "http://x.example/%zz " + a, "line 1: the URL does not parse"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSubscribers(strings.NewReader(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "whsec_short") || strings.Contains(err.Error(), strings.TrimPrefix(a, "whsec_")) {
				t.Fatalf("the error quotes a secret: %v", err)
			}
		})
	}
}

// TestReload: the file is reread when it changes; a broken file keeps the
// subscribers in force; changed is told each set put in force.
func TestReload(t *testing.T) {
	a, _ := testSecret(t, 'a')
	path := filepath.Join(t.TempDir(), "subscribers")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# none yet\n")
	var seen []int
	var failures, successes int
	subs, r, err := LoadFile(path, time.Hour, func(s []Subscriber) { seen = append(seen, len(s)) }, zap.NewNop(), func(err error) {
		if err != nil {
			failures++
		} else {
			successes++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(subs.All()) != 0 || len(seen) != 1 || seen[0] != 0 {
		t.Fatalf("start: %d subscribers, changed told %v", len(subs.All()), seen)
	}
	write("https://a.example/ " + a + "\nhttps://b.example/ " + a + "\n")
	r.Check()
	if len(subs.All()) != 2 || seen[len(seen)-1] != 2 || successes != 1 {
		t.Fatalf("after a change: %d subscribers, changed told %v", len(subs.All()), seen)
	}
	write("https://a.example/ whsec_broken\n")
	r.Check()
	r.Check()
	if len(subs.All()) != 2 || failures != 1 {
		t.Fatalf("a broken file: %d subscribers in force, %d failures reported; want 2 and 1 (reported once)", len(subs.All()), failures)
	}
	if _, ok := subs.ByKey(subs.All()[1].Key); !ok {
		t.Fatal("ByKey misses a subscriber")
	}
	if _, _, err := LoadFile(path, time.Hour, nil, zap.NewNop(), nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("loading a broken file: %v", err)
	}
	if _, _, err := LoadFile(filepath.Join(t.TempDir(), "missing"), time.Hour, nil, zap.NewNop(), nil); err == nil {
		t.Fatal("a missing file loaded")
	}
}
