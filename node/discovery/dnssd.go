package discovery

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/libp2p/zeroconf/v2"
)

// WoT Discovery (W3C, "DNS-Based Service Discovery"): a Thing Description
// Directory advertises itself as an instance of the service _wot._tcp with
// the subtype _directory, and a TXT record naming the absolute path of the
// directory's TD, its type and the URL scheme.
const (
	// WoTService is the DNS-SD service of WoT Things and directories over
	// HTTP on TCP.
	WoTService = "_wot._tcp"
	// WoTDirectorySubtype marks a WoT service instance as a directory
	// (browsed as "_directory._sub._wot._tcp").
	WoTDirectorySubtype = "_directory"
	// WoTDirectoryTD is the absolute path of the directory's TD, the TXT
	// record's "td".
	WoTDirectoryTD = "/.well-known/wot"
	// mdnsDomain is the domain of multicast DNS.
	mdnsDomain = "local."
)

// wotDirectoryTXT is the TXT record of the node's directory.
func wotDirectoryTXT() []string {
	return []string{"td=" + WoTDirectoryTD, "type=Directory", "scheme=http"}
}

// AdvertiseDirectory advertises the WoT Thing Description Directory the
// node serves at api (the bound address of its HTTP API) by DNS-SD over
// mDNS, as WoT Discovery specifies: service _wot._tcp, subtype _directory,
// port api's, TXT "td=/.well-known/wot", "type=Directory", "scheme=http".
// The instance is "lmosnode-<peer ID>".
//
// It does so only with Config.MDNS on, and only if api is reachable from
// the network: an API on a loopback address is for this machine alone and
// is not advertised (AdvertiseDirectory returns nil). An API on an
// unspecified address (0.0.0.0, ::) is advertised with the addresses of
// every multicast interface, one on a specific address with that address
// only. The advertisement names the directory only, never a Thing, so
// group-scoped Things appear in no DNS-SD record. Close withdraws it.
// Calling AdvertiseDirectory again replaces the advertisement.
func (s *Service) AdvertiseDirectory(api net.Addr) error {
	if !s.cfg.MDNS {
		return nil
	}
	ap, err := netip.ParseAddrPort(api.String())
	if err != nil {
		return fmt.Errorf("discovery: advertise directory: %q: %w", api, err)
	}
	ip := ap.Addr().Unmap()
	if ip.IsLoopback() {
		s.log.Info("wot directory not advertised: the API is on a loopback address", "api", api.String())
		return nil
	}
	instance := "lmosnode-" + s.h.ID().String()
	service := WoTService + "," + WoTDirectorySubtype
	var srv *zeroconf.Server
	if ip.IsUnspecified() {
		srv, err = zeroconf.Register(instance, service, mdnsDomain, int(ap.Port()), wotDirectoryTXT(), nil)
	} else {
		ifaces, ierr := interfacesWith(ip)
		if ierr != nil {
			return fmt.Errorf("discovery: advertise directory: %w", ierr)
		}
		// A host name of its own, so that its address record cannot
		// clash with the machine's (which other responders may announce).
		host := "lmosnode-" + s.h.ID().String()
		srv, err = zeroconf.RegisterProxy(instance, service, mdnsDomain, int(ap.Port()), host, []string{ip.String()}, wotDirectoryTXT(), ifaces)
	}
	if err != nil {
		return fmt.Errorf("discovery: advertise directory: %w", err)
	}
	s.mu.Lock()
	old, closed := s.wot, s.closed
	if !closed {
		s.wot = srv
	}
	s.mu.Unlock()
	if old != nil {
		old.Shutdown()
	}
	if closed {
		srv.Shutdown()
		return errors.New("discovery: advertise directory: service is closed")
	}
	s.log.Info("wot directory advertised", "service", WoTDirectorySubtype+"._sub."+WoTService, "instance", instance, "api", api.String())
	return nil
}

// interfacesWith returns the multicast interfaces that have the address
// ip, so that it is announced where it is reachable.
func interfacesWith(ip netip.Addr) ([]net.Interface, error) {
	all, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var with []net.Interface
	for _, ifc := range all {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagMulticast == 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == ip {
				with = append(with, ifc)
				break
			}
		}
	}
	if len(with) == 0 {
		return nil, fmt.Errorf("no multicast interface has the address %s", ip)
	}
	return with, nil
}
