package chaos

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/redistest"
	"github.com/plantstore/plantstore/internal/servicetest"
)

// secretVolume is a directory laid out as the kubelet lays out a mounted
// Secret: each version in a timestamped directory, ..data a symlink to the
// current one, and each key a symlink through ..data. An update writes a
// new directory and renames a new ..data symlink over the old one, one
// atomic step, then removes the old directory.
type secretVolume struct {
	dir     string
	current string // the timestamped directory ..data points to
	n       int
}

func newSecretVolume(t *testing.T, key, content string) *secretVolume {
	t.Helper()
	v := &secretVolume{dir: t.TempDir()}
	v.update(t, key, content)
	if err := os.Symlink(filepath.Join("..data", key), filepath.Join(v.dir, key)); err != nil {
		t.Fatal(err)
	}
	return v
}

// update publishes a new version holding key, as the kubelet's AtomicWriter does.
func (v *secretVolume) update(t *testing.T, key, content string) {
	t.Helper()
	v.n++
	next := fmt.Sprintf("..%s.%09d", time.Now().UTC().Format("2006_01_02_15_04_05"), v.n)
	if err := os.Mkdir(filepath.Join(v.dir, next), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.dir, next, key), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(next, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if v.current != "" {
		if err := os.RemoveAll(filepath.Join(v.dir, v.current)); err != nil {
			t.Fatal(err)
		}
	}
	v.current = next
}

func digest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// transition checks that a load's answers changed once, from before to
// after (each 200 or 401), and returns when the first changed answer came.
func transition(t *testing.T, name string, res *servicetest.LoadResult, from, to int) (time.Time, bool) {
	t.Helper()
	var changed time.Time
	for _, rec := range res.Records {
		switch {
		case rec.Err != nil || rec.Status >= 500:
			t.Errorf("%s: request %d: %d %v %s", name, rec.ID, rec.Status, rec.Err, rec.Reply)
		case rec.Status != from && rec.Status != to:
			t.Errorf("%s: request %d answered %d, want %d or %d: %s", name, rec.ID, rec.Status, from, to, rec.Reply)
		case rec.Status == http.StatusUnauthorized && rec.Code != 40102:
			t.Errorf("%s: request %d: 401 with code %d, want 40102", name, rec.ID, rec.Code)
		case rec.Status == to && changed.IsZero():
			changed = rec.Start.Add(rec.Latency)
		case rec.Status == from && !changed.IsZero() && rec.Start.After(changed):
			t.Errorf("%s: request %d answered %d again %v after the first %d", name, rec.ID, from, rec.Start.Sub(changed), to)
		}
	}
	return changed, !changed.IsZero()
}

// TestChaosTokenRotation rotates the API token through a Secret volume
// under load, with the chart's reload interval: the new token must be
// accepted, and the removed one rejected (401, 40102), within 10 s, with
// no 5xx and no failed request, and never both again after the change.
func TestChaosTokenRotation(t *testing.T) {
	rotations := servicetest.Pick(1, 3)
	const reloadInterval, bound = 5 * time.Second, 10 * time.Second
	tokens := make([]string, rotations+1)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("chaos-rotation-%d-%d", i, time.Now().UnixNano())
	}
	// The first token raw, later ones as digests: both forms of the file.
	vol := newSecretVolume(t, "tokens", "# version 0\n"+tokens[0]+"\n")

	redis := redistest.Start(t)
	s := servicetest.Start(t, binary, servicetest.Options{RedisAddr: redis.Addr, NoTokens: true, Extra: append([]string{
		"--auth-tokens-file", filepath.Join(vol.dir, "tokens"), "--auth-reload-interval", reloadInterval.String()}, patientStore...)})

	var maxAccept, maxReject time.Duration
	requests := 0
	for i := 1; i <= rotations; i++ {
		oldTok, newTok := tokens[i-1], tokens[i]
		load := func(tok string, first int64) *servicetest.Load {
			return servicetest.StartLoad(s, servicetest.LoadOptions{Workers: 2, Token: tok, FirstID: first})
		}
		oldLoad, newLoad := load(oldTok, int64(i)<<40), load(newTok, int64(i)<<40+1<<39)
		time.Sleep(500 * time.Millisecond)
		vol.update(t, "tokens", fmt.Sprintf("# version %d\n%s\n", i, digest(newTok)))
		swapped := time.Now()
		// Until both have changed (or clearly not in time), then a little longer.
		servicetest.Eventually(bound+2*time.Second, 20*time.Millisecond, func() bool {
			s.Token = newTok
			accepted := s.Post(t, fmt.Sprintf(`{"id": %d, "name": "probe"}`, -i)).Status == http.StatusOK
			s.Token = oldTok
			return accepted && s.Post(t, fmt.Sprintf(`{"id": %d, "name": "probe"}`, -i)).Status == http.StatusUnauthorized
		})
		time.Sleep(500 * time.Millisecond)
		oldRes, newRes := oldLoad.Stop(), newLoad.Stop()
		requests += len(oldRes.Records) + len(newRes.Records)

		rejected, ok := transition(t, "old token", oldRes, http.StatusOK, http.StatusUnauthorized)
		if !ok || rejected.Sub(swapped) > bound {
			t.Errorf("rotation %d: the removed token was not rejected within %v (rejected %v, %v after the swap)", i, bound, ok, rejected.Sub(swapped))
		}
		accepted, ok := transition(t, "new token", newRes, http.StatusUnauthorized, http.StatusOK)
		if !ok || accepted.Sub(swapped) > bound {
			t.Errorf("rotation %d: the new token was not accepted within %v (accepted %v, %v after the swap)", i, bound, ok, accepted.Sub(swapped))
		}
		maxAccept, maxReject = max(maxAccept, accepted.Sub(swapped)), max(maxReject, rejected.Sub(swapped))
		t.Logf("rotation %d: old token %v; new token %v", i, oldRes, newRes)
	}
	families, _ := s.Metrics(t)
	if n := servicetest.Value(families, "plantstore_auth_tokens"); n != 1 {
		t.Errorf("plantstore_auth_tokens = %g after the rotations, want 1", n)
	}

	servicetest.Report(t, "token-rotation", "rotations=%d requests=%d reload_interval=%s max_to_accept_new=%s max_to_reject_old=%s (bound %s)",
		rotations, requests, ms(reloadInterval), ms(maxAccept), ms(maxReject), ms(bound))
}
