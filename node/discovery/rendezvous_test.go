package discovery

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	routingdisc "github.com/libp2p/go-libp2p/p2p/discovery/routing"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/internal/loopback"
)

// TestRendezvous runs six hosts with LMOS DHTs: two DHT servers (b, s) and
// four DHT clients (a, c, d, e). Each knows at most one bootstrap peer:
// a, c, d and s know b; e knows s. Clients never appear in DHT routing
// tables, so the only way for one client to learn of another is a
// rendezvous provider record. The test checks that a ends up connected to
// all five others, and that every connection between two clients was
// dialled by one side's rendezvous lookup.
func TestRendezvous(t *testing.T) {
	g := loopback.NewGater(t)
	type node struct {
		name string
		h    host.Host
		s    *Service
	}
	mk := func(name string, mode lmosdht.Mode, bootstrap ...host.Host) *node {
		h := newHost(t, g, nil)
		d := newDHT(t, h, mode)
		cfg := fastConfig()
		for _, b := range bootstrap {
			cfg.Bootstrap = append(cfg.Bootstrap, addrInfo(b))
		}
		return &node{name: name, h: h, s: newService(t, Deps{Host: h, Routing: d}, cfg)}
	}
	b := mk("b", lmosdht.ModeServer)
	s := mk("s", lmosdht.ModeServer, b.h)
	a := mk("a", lmosdht.ModeClient, b.h)
	c := mk("c", lmosdht.ModeClient, b.h)
	d := mk("d", lmosdht.ModeClient, b.h)
	e := mk("e", lmosdht.ModeClient, s.h)
	names := map[peer.ID]string{}
	for _, n := range []*node{a, b, c, d, e, s} {
		names[n.h.ID()] = n.name
	}

	others := []*node{b, s, c, d, e}
	waitFor(t, "a connected to b, s, c, d and e", 30*time.Second, func() bool {
		for _, o := range others {
			if !connected(a.h, o.h) {
				return false
			}
		}
		return true
	})

	if src, _ := a.s.Source(b.h.ID()); src != SourceBootstrap {
		t.Errorf("a: source of b = %q, want %q", src, SourceBootstrap)
	}
	// a dialled b (its bootstrap peer); b's own rendezvous finding a
	// afterwards does not make a "found by dht" on b.
	if src, _ := b.s.Source(a.h.ID()); src != SourceInbound {
		t.Errorf("b: source of a = %q, want %q (a dialled b)", src, SourceInbound)
	}
	// Each side notes a connection's source when go-libp2p tells it of
	// the connection, which may be after the other side saw it: wait.
	clients := []*node{a, c, d, e}
	var odd []string
	defer func() {
		if len(odd) > 0 {
			t.Errorf("one side must have found the other by rendezvous: %s", strings.Join(odd, "; "))
		}
	}()
	waitFor(t, "every pair of clients linked by rendezvous", 10*time.Second, func() bool {
		odd = nil
		for i, x := range clients {
			for _, y := range clients[i+1:] {
				if !connected(x.h, y.h) {
					continue
				}
				sx, _ := x.s.Source(y.h.ID())
				sy, _ := y.s.Source(x.h.ID())
				if sx != SourceDHT && sy != SourceDHT {
					odd = append(odd, fmt.Sprintf("%s–%s: sources %q and %q", x.name, y.name, sx, sy))
				}
			}
		}
		return len(odd) == 0
	})

	peers := a.s.Peers()
	if len(peers) != len(others) {
		t.Fatalf("a.Peers() = %d peers, want %d: %+v", len(peers), len(others), peers)
	}
	for _, p := range peers {
		if len(p.Addrs) == 0 || p.ConnectedAt.IsZero() || p.Source == "" {
			t.Errorf("a.Peers(): %s (%s): incomplete: %+v", names[p.ID], p.ID, p)
		}
		t.Logf("a: peer %s via %s at %v", names[p.ID], p.Source, p.Addrs)
	}
}

// TestRendezvousMaxPeers checks that rendezvous stops dialling at
// MaxPeers: five clients advertise through one DHT server b, and a, with
// MaxPeers 3, ends up with b and two of them.
func TestRendezvousMaxPeers(t *testing.T) {
	g := loopback.NewGater(t)
	bh := newHost(t, g, nil)
	newDHT(t, bh, lmosdht.ModeServer)

	// Five clients that only advertise (they run no Service, so none of
	// them dials a).
	for i := range 5 {
		h := newHost(t, g, nil)
		d := newDHT(t, h, lmosdht.ModeClient)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := h.Connect(ctx, addrInfo(bh)); err != nil {
			cancel()
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("client %d's routing table has b", i), 10*time.Second, func() bool {
			return d.RoutingTable().Size() > 0
		})
		if _, err := routingdisc.NewRoutingDiscovery(d).Advertise(ctx, RendezvousNamespace); err != nil {
			cancel()
			t.Fatalf("client %d: advertise: %v", i, err)
		}
		cancel()
	}

	ah := newHost(t, g, nil)
	ad := newDHT(t, ah, lmosdht.ModeClient)
	cfg := fastConfig()
	cfg.MaxPeers = 3
	cfg.Bootstrap = []peer.AddrInfo{addrInfo(bh)}
	a := newService(t, Deps{Host: ah, Routing: ad}, cfg)

	waitFor(t, "a has 3 peers", 20*time.Second, func() bool { return len(ah.Network().Peers()) >= 3 })
	// Give more lookups the chance to overshoot.
	time.Sleep(time.Second)
	if n := len(ah.Network().Peers()); n != 3 {
		t.Fatalf("a has %d peers, want MaxPeers = 3", n)
	}
	dht := 0
	for _, p := range a.Peers() {
		if p.Source == SourceDHT {
			dht++
		}
	}
	if dht != 2 {
		t.Errorf("a found %d peers by rendezvous, want 2 (plus bootstrap b)", dht)
	}
}
