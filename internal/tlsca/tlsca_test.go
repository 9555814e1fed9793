package tlsca

import (
	"crypto/x509"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPool(t *testing.T) {
	srv := httptest.NewTLSServer(nil)
	defer srv.Close()
	dir := t.TempDir()
	good, junk := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "junk")
	if err := os.WriteFile(good, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pool, err := Pool(good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Certificate().Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Errorf("the pool does not hold the file's certificate: %v", err)
	}
	if _, err := Pool(junk); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("a file without a certificate: %v", err)
	}
	if _, err := Pool(filepath.Join(dir, "none")); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v, want a not-exist error", err)
	}
}
