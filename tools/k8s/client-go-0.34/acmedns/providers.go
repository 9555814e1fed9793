// Package dns replaces lego's registry of DNS-01 providers
// (github.com/go-acme/lego/v4/providers/dns) in the test cluster's Traefik
// build (tools/k8s/build.sh): the registry imports every provider and its
// cloud SDK, a third of the source Traefik's build compiles, and the
// cluster's certificates are its own, never an ACME CA's. A resolver that
// asks for a DNS challenge fails as lego fails for a name it does not know.
package dns

import (
	"fmt"

	"github.com/go-acme/lego/v4/challenge"
)

// NewDNSChallengeProviderByName has the signature of lego's and knows no
// provider.
func NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("unrecognized DNS provider: %s", name)
}
