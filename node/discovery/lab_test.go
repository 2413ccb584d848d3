//go:build lab

package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/zeroconf/v2"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// TestLabMDNS is the mDNS probe of scripts/lab.sh, which runs this test
// binary (built with -tags lab) once in each network namespace it created.
// It never runs in the ordinary test suite: mDNS sends multicast on every
// interface, which only the lab's private namespaces may see.
//
// It starts a bare host listening on $LMOS_LAB_LISTEN with a discovery
// Service that has mDNS only, waits until the host is connected to
// $LMOS_LAB_PEERS peers, every one of them found by mDNS, and until a
// DNS-SD browser of WoT directories (_directory._sub._wot._tcp) has
// resolved the directory every other probe advertises (AdvertiseDirectory,
// as an API on the probe's address, port 5080), prints
//
//	LAB-MDNS peer=<peer ID> peers=<n> wot=<directories> elapsed=<time to converge>
//
// and stays up until the file $LMOS_LAB_STOP exists (so that slower probes
// still see it), all within $LMOS_LAB_TIMEOUT.
func TestLabMDNS(t *testing.T) {
	listen := os.Getenv("LMOS_LAB_LISTEN")
	if listen == "" {
		t.Skip("the mDNS probe runs inside the network namespaces of scripts/lab.sh only")
	}
	want, err := strconv.Atoi(os.Getenv("LMOS_LAB_PEERS"))
	if err != nil || want < 1 {
		t.Fatalf("LMOS_LAB_PEERS: %q: want a positive number", os.Getenv("LMOS_LAB_PEERS"))
	}
	timeout, err := time.ParseDuration(os.Getenv("LMOS_LAB_TIMEOUT"))
	if err != nil {
		t.Fatalf("LMOS_LAB_TIMEOUT: %v", err)
	}
	stop := os.Getenv("LMOS_LAB_STOP")
	if stop == "" {
		t.Fatal("LMOS_LAB_STOP: must name the file whose creation stops the probe")
	}
	deadline := time.Now().Add(timeout)

	h, err := libp2p.New(
		libp2p.ListenAddrStrings(listen),
		libp2p.NoTransports, libp2p.Transport(tcp.NewTCPTransport),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	cfg := DefaultConfig()
	cfg.MDNS = true
	cfg.DialBackoff = Backoff{Min: 200 * time.Millisecond, Max: 2 * time.Second}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).
		With("host", h.ID().String())
	s, err := New(Deps{Host: h}, cfg, WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	lm, err := ma.NewMultiaddr(listen)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := manet.ToNetAddr(lm)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AdvertiseDirectory(&net.TCPAddr{IP: ln.(*net.TCPAddr).IP, Port: labWoTPort}); err != nil {
		t.Fatal(err)
	}
	wot := browseDirectories(t, "lmosnode-"+h.ID().String(), deadline)

	for {
		peers := s.Peers()
		byMDNS := 0
		for _, p := range peers {
			if p.Source == SourceMDNS {
				byMDNS++
			}
		}
		if byMDNS >= want && wot.count() >= want {
			fmt.Printf("LAB-MDNS peer=%s peers=%d wot=%d elapsed=%s\n", h.ID(), byMDNS, wot.count(), time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %d peers found by mDNS, %d WoT directories by DNS-SD, want %d; peers: %+v", timeout, byMDNS, wot.count(), want, peers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		if _, err := os.Stat(stop); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not created within %s", stop, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// labWoTPort is the port the probes advertise their directory on.
const labWoTPort = 5080

// directories counts the WoT directories a DNS-SD browser has resolved
// with the TXT record of WoT Discovery.
type directories struct{ n chan int }

func (d directories) count() int {
	n := <-d.n
	d.n <- n
	return n
}

// browseDirectories browses _directory._sub._wot._tcp until deadline and
// counts the instances other than self that carry td=/.well-known/wot,
// type=Directory and the probes' port.
func browseDirectories(t *testing.T, self string, deadline time.Time) directories {
	d := directories{n: make(chan int, 1)}
	d.n <- 0
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	entries := make(chan *zeroconf.ServiceEntry, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := zeroconf.Browse(ctx, WoTService+","+WoTDirectorySubtype, mdnsDomain, entries); err != nil {
			t.Errorf("browse: %v", err)
		}
	}()
	go func() {
		seen := map[string]bool{}
		for e := range entries {
			txt := map[string]bool{}
			for _, s := range e.Text {
				txt[s] = true
			}
			if e.Instance == self || seen[e.Instance] || e.Port != labWoTPort ||
				!txt["td="+WoTDirectoryTD] || !txt["type=Directory"] || len(e.AddrIPv4) == 0 {
				continue
			}
			seen[e.Instance] = true
			n := <-d.n
			d.n <- n + 1
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return d
}
