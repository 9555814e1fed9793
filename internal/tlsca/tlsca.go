// Package tlsca reads a PEM bundle of CA certificates into a pool of roots:
// the one way the service's TLS clients (Redis, the Kubernetes API, JWT
// issuers) trust other roots than the system's.
package tlsca

import (
	"crypto/x509"
	"fmt"
	"os"
)

// Pool returns the certificates of the PEM file at path; an error when the
// file cannot be read or holds no PEM certificate.
func Pool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}
