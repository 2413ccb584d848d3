package discovery

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/zeroconf/v2"
)

// bareHost is a libp2p host that listens nowhere, closed with the test.
func bareHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.NoListenAddrs, libp2p.DisableRelay(), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// TestAdvertiseDirectoryNotAdvertised: an API on loopback, or a node
// without mDNS, is never advertised. Nothing here sends a packet: the
// service returns before it would.
func TestAdvertiseDirectoryNotAdvertised(t *testing.T) {
	for _, tc := range []struct {
		name string
		mdns bool
		api  net.Addr
	}{
		{"loopback v4", true, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5080}},
		{"loopback v6", true, &net.TCPAddr{IP: net.IPv6loopback, Port: 5080}},
		{"loopback v4 in v6", true, &net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 5080}},
		{"mdns off", false, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5080}},
		{"mdns off, unspecified", false, &net.TCPAddr{IP: net.IPv4zero, Port: 5080}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.MDNS = tc.mdns
			s, err := New(Deps{Host: bareHost(t)}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.AdvertiseDirectory(tc.api); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.wot != nil {
				t.Errorf("%s advertised", tc.api)
			}
		})
	}
}

// The roles TestAdvertiseDirectoryNetns runs its own binary in, inside
// the namespaces it creates.
const (
	dnssdRoleEnv = "LMOS_DNSSD_ROLE" // "advertise" or "browse"
	dnssdAddrEnv = "LMOS_DNSSD_ADDR" // the advertiser's address
	dnssdStopEnv = "LMOS_DNSSD_STOP" // file whose creation ends the advertiser
)

// TestAdvertiseDirectoryNetns advertises a node's directory in one network
// namespace and resolves it with a DNS-SD browser in another, on a veth
// pair between two namespaces the test creates (and removes): the
// multicast never reaches another network. It needs root and iproute2,
// and skips without them.
//
// Two directories are advertised: one API bound to the namespace's
// address (announced with that address) and one bound to 0.0.0.0
// (announced with every interface's). The browser must find both under
// _directory._sub._wot._tcp with the TXT record of WoT Discovery.
func TestAdvertiseDirectoryNetns(t *testing.T) {
	switch os.Getenv(dnssdRoleEnv) {
	case "advertise":
		dnssdAdvertise(t)
		return
	case "browse":
		dnssdBrowse(t)
		return
	}
	if testing.Short() {
		t.Skip("creates network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("creating network namespaces needs root")
	}
	ipCmd, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("needs iproute2's ip")
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ipCmd, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	tag := strconv.Itoa(os.Getpid())
	nsA, nsB := "lmosdnssd"+tag+"a", "lmosdnssd"+tag+"b"
	subnet := fmt.Sprintf("10.78.%d", os.Getpid()%250+1)
	run("netns", "add", nsA)
	t.Cleanup(func() { _ = exec.Command(ipCmd, "netns", "del", nsA).Run() })
	run("netns", "add", nsB)
	t.Cleanup(func() { _ = exec.Command(ipCmd, "netns", "del", nsB).Run() })
	// A veth pair between the two namespaces, nothing else.
	run("-n", nsA, "link", "add", "wa", "type", "veth", "peer", "name", "wb", "netns", nsB)
	for _, c := range []struct{ ns, dev, addr string }{{nsA, "wa", subnet + ".1/24"}, {nsB, "wb", subnet + ".2/24"}} {
		run("-n", c.ns, "link", "set", "lo", "up")
		run("-n", c.ns, "addr", "add", c.addr, "dev", c.dev)
		run("-n", c.ns, "link", "set", c.dev, "multicast", "on", "up")
	}

	stop := filepath.Join(t.TempDir(), "stop")
	child := func(ns, role string) *exec.Cmd {
		cmd := exec.Command(ipCmd, "netns", "exec", ns, os.Args[0], "-test.run", "^TestAdvertiseDirectoryNetns$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), dnssdRoleEnv+"="+role, dnssdAddrEnv+"="+subnet+".1", dnssdStopEnv+"="+stop)
		return cmd
	}
	adv := child(nsA, "advertise")
	var advOut strings.Builder
	adv.Stdout, adv.Stderr = &advOut, &advOut
	if err := adv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = os.WriteFile(stop, nil, 0o600)
		if err := adv.Wait(); err != nil {
			t.Errorf("advertiser: %v\n%s", err, advOut.String())
		}
	}()
	out, err := child(nsB, "browse").CombinedOutput()
	if err != nil {
		t.Fatalf("browser: %v\n%s\nadvertiser:\n%s", err, out, advOut.String())
	}
	t.Logf("browser:\n%s", out)
}

// dnssdAdvertise runs in namespace A: two directories, one on the
// namespace's address (port 5080), one on 0.0.0.0 (port 5081), until the
// stop file appears.
func dnssdAdvertise(t *testing.T) {
	ip := net.ParseIP(os.Getenv(dnssdAddrEnv))
	for _, api := range []net.Addr{&net.TCPAddr{IP: ip, Port: 5080}, &net.TCPAddr{IP: net.IPv4zero, Port: 5081}} {
		cfg := DefaultConfig()
		cfg.MDNS = true
		h := bareHost(t)
		s, err := New(Deps{Host: h}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.AdvertiseDirectory(api); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("advertised lmosnode %s at %s\n", h.ID(), api)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(os.Getenv(dnssdStopEnv)); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no stop file within a minute")
}

// dnssdBrowse runs in namespace B: it browses _directory._sub._wot._tcp
// until it has found both directories of namespace A, with the TXT record
// and address WoT Discovery and AdvertiseDirectory promise.
func dnssdBrowse(t *testing.T) {
	want := os.Getenv(dnssdAddrEnv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	entries := make(chan *zeroconf.ServiceEntry, 16)
	errc := make(chan error, 1)
	go func() { errc <- zeroconf.Browse(ctx, WoTService+","+WoTDirectorySubtype, mdnsDomain, entries) }()
	found := map[int]bool{}
	for len(found) < 2 {
		select {
		case e, ok := <-entries:
			if !ok {
				t.Fatalf("browse ended; found ports %v", found)
			}
			fmt.Printf("found %q port %d text %q ipv4 %v host %s\n", e.Instance, e.Port, e.Text, e.AddrIPv4, e.HostName)
			if !strings.HasPrefix(e.Instance, "lmosnode-12D3KooW") {
				t.Errorf("instance %q", e.Instance)
			}
			for _, txt := range []string{"td=/.well-known/wot", "type=Directory", "scheme=http"} {
				if !slices.Contains(e.Text, txt) {
					t.Errorf("%q: TXT %q lacks %q", e.Instance, e.Text, txt)
				}
			}
			if !slices.ContainsFunc(e.AddrIPv4, func(ip net.IP) bool { return ip.String() == want }) {
				t.Errorf("%q: addresses %v lack %s", e.Instance, e.AddrIPv4, want)
			}
			if e.Port != 5080 && e.Port != 5081 {
				t.Errorf("%q: port %d", e.Instance, e.Port)
			}
			found[e.Port] = true
		case <-ctx.Done():
			t.Fatalf("after 30 s found ports %v, want 5080 and 5081", found)
		}
	}
	cancel()
	if err := <-errc; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
}
