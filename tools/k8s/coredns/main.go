// Command coredns is CoreDNS with only the plugins the test cluster's DNS
// needs: cluster.local from the Kubernetes API, NXDOMAIN for every other
// name (the cluster has no network beyond itself), health and readiness.
// tools/k8s/cluster.sh runs it on the node as a host process.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

// The directives, in the order of CoreDNS's plugin.cfg, which is the order
// in which they handle a query.
var directives = []string{
	"bind",
	"ready",
	"health",
	"errors",
	"log",
	"cache",
	"template",
	"kubernetes",
	"loop",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
