package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrForbiddenAddress means a delivery would have connected to an address
// the guard refuses.
var ErrForbiddenAddress = errors.New("address not allowed for webhook deliveries")

// forbidden are the ranges no delivery may reach unless allowed, besides
// what netip classifies as loopback, private (10/8, 172.16/12, 192.168/16,
// fc00::/7), link-local (169.254/16 with the cloud metadata address,
// fe80::/10), multicast and unspecified.
var forbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT, often internal
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),          // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64: reaches any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2002::/16"),      // 6to4: embeds any IPv4 address
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("ff00::/8"),       // multicast
	netip.MustParsePrefix("169.254.0.0/16"), // link-local (metadata), also by IsLinkLocalUnicast
	netip.MustParsePrefix("fd00:ec2::/32"),  // AWS's IPv6 metadata (in fc00::/7 too)
	netip.MustParsePrefix("127.0.0.0/8"),    // loopback, also by IsLoopback
	netip.MustParsePrefix("::ffff:0:0/96"),  // IPv4-mapped, checked unmapped too
}

// Guard decides which addresses deliveries may connect to: any public
// address, and the forbidden ones only inside an allowed prefix. It checks
// the address actually dialled (net.Dialer.Control), after name resolution,
// so a name that resolves (or is rebound) to an internal address is refused
// as surely as the address itself.
type Guard struct {
	allow []netip.Prefix
}

// NewGuard returns a guard that lets deliveries reach the forbidden
// addresses inside allow (e.g. 127.0.0.0/8 for a test, 10.0.0.0/8 for a
// subscriber inside the cluster's network).
func NewGuard(allow []netip.Prefix) *Guard { return &Guard{allow: allow} }

// Check returns nil when a delivery may connect to ip.
func (g *Guard) Check(ip netip.Addr) error {
	for _, p := range g.allow {
		if p.Contains(ip) || p.Contains(ip.Unmap()) {
			return nil
		}
	}
	for _, a := range []netip.Addr{ip, ip.Unmap()} {
		if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
			a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsValid() {
			return fmt.Errorf("%w: %s is loopback, private, link-local, multicast or unspecified", ErrForbiddenAddress, ip)
		}
		for _, p := range forbidden {
			if p.Contains(a) {
				return fmt.Errorf("%w: %s is in %s", ErrForbiddenAddress, ip, p)
			}
		}
	}
	return nil
}

// control is a net.Dialer.Control: it runs after resolution, before connect.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an IP address and port", ErrForbiddenAddress, address)
	}
	return g.Check(ap.Addr().WithZone(""))
}

// Resolver finds a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialContext returns a dial function for an http.Transport that resolves
// with resolver (net.DefaultResolver when nil) and connects only where the
// guard allows, trying each address in turn.
func (g *Guard) DialContext(resolver Resolver, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.control}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else if ips, err = resolver.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, err
		}
		var errs []error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.WithZone("").String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		if len(errs) == 0 {
			return nil, fmt.Errorf("%s resolves to no address", host)
		}
		return nil, errors.Join(errs...)
	}
}

// ParseAllow reads a comma-separated list of CIDR prefixes (a bare address
// is its own /32 or /128).
func ParseAllow(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("%q is neither a CIDR prefix nor an address", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
