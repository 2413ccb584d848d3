package config

import (
	"errors"
	"net"
	"slices"

	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// AddrFilter is one Config.NoAnnounce entry: an exact address, or a
// network (/ip4/…/ipcidr/N).
type AddrFilter struct {
	addr ma.Multiaddr // nil for a network
	net  *net.IPNet
}

// ParseAddrFilter parses a Config.NoAnnounce entry.
func ParseAddrFilter(s string) (AddrFilter, error) {
	m, err := ma.NewMultiaddr(s)
	if err != nil {
		return AddrFilter{}, err
	}
	if len(m) == 2 && m[1].Code() == ma.P_IPCIDR && (m[0].Code() == ma.P_IP4 || m[0].Code() == ma.P_IP6) {
		ipnet, err := manet.MultiaddrToIPNet(m)
		if err != nil {
			return AddrFilter{}, err
		}
		return AddrFilter{net: ipnet}, nil
	}
	for _, c := range m {
		if c.Code() == ma.P_IPCIDR {
			return AddrFilter{}, errors.New("/ipcidr must follow /ip4 or /ip6 and end the address")
		}
	}
	return AddrFilter{addr: m}, nil
}

// Matches reports whether a is hidden by f.
func (f AddrFilter) Matches(a ma.Multiaddr) bool {
	if f.net == nil {
		return a.Equal(f.addr)
	}
	// A relayed address is the relay's address followed by /p2p-circuit:
	// its IP is the relay's, so a network filter does not hide it.
	if isRelayed(a) {
		return false
	}
	ip, err := manet.ToIP(a)
	return err == nil && f.net.Contains(ip)
}

// isRelayed reports whether a goes through a relay (contains /p2p-circuit).
func isRelayed(a ma.Multiaddr) bool {
	return slices.ContainsFunc(a, func(c ma.Component) bool { return c.Code() == ma.P_CIRCUIT })
}
