package discovery

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/internal/loopback"
)

// These tests run the mDNS loop without mDNS: tests never multicast, so
// they hand finds to the service the way go-libp2p's mDNS service does,
// through mdnsNotifee. The multicast part runs in the netns lab.

// startMDNSLoop runs s's mDNS loop as if Config.MDNS were on.
func startMDNSLoop(s *Service) { s.wg.Go(s.mdnsLoop) }

// TestMDNSPairFindsEachOther hands two hosts each other's mDNS answer at
// the same moment, as a LAN does: they connect on the first dial (no
// second chance within the test), and both ends call the other an mDNS
// peer. (On loopback the two dials rarely collide even without mdnsYield;
// the collision it prevents, a TCP simultaneous open, shows in the lab.)
func TestMDNSPairFindsEachOther(t *testing.T) {
	for range 3 {
		g := loopback.NewGater(t)
		ah, bh := newHost(t, g, nil), newHost(t, g, nil)
		cfg := fastConfig()
		cfg.DialBackoff = Backoff{Min: time.Minute, Max: time.Minute}
		a, b := newService(t, Deps{Host: ah}, cfg), newService(t, Deps{Host: bh}, cfg)
		startMDNSLoop(a)
		startMDNSLoop(b)

		var wg sync.WaitGroup
		wg.Go(func() { mdnsNotifee{a}.HandlePeerFound(addrInfo(bh)) })
		wg.Go(func() { mdnsNotifee{b}.HandlePeerFound(addrInfo(ah)) })
		wg.Wait()

		waitFor(t, "a and b connected", 5*time.Second, func() bool { return connected(ah, bh) })
		waitFor(t, "both ends name the other an mDNS peer", 5*time.Second, func() bool {
			sa, _ := a.Source(bh.ID())
			sb, _ := b.Source(ah.ID())
			return sa == SourceMDNS && sb == SourceMDNS
		})
	}
}

// TestMDNSGreaterIDYields checks the tie-break: of a LAN pair, the peer
// with the greater ID waits mdnsYield before it dials, the other dials at
// once.
func TestMDNSGreaterIDYields(t *testing.T) {
	g := loopback.NewGater(t)
	lo, hi := newHost(t, g, nil), newHost(t, g, nil)
	if lo.ID() > hi.ID() {
		lo, hi = hi, lo
	}
	const yield = 600 * time.Millisecond
	for _, tc := range []struct {
		name     string
		from, to host.Host
		wait     time.Duration
	}{
		{"greater ID waits", hi, lo, yield},
		{"lower ID dials at once", lo, hi, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Deps{Host: tc.from}, fastConfig(), WithLogger(testLogger(t, tc.from)))
			if err != nil {
				t.Fatal(err)
			}
			s.mdnsYield = yield
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			startMDNSLoop(s)
			start := time.Now()
			mdnsNotifee{s}.HandlePeerFound(addrInfo(tc.to))
			waitFor(t, "connected", 5*time.Second, func() bool { return connected(tc.from, tc.to) })
			took := time.Since(start)
			if took < tc.wait || (tc.wait == 0 && took > yield/2) {
				t.Errorf("connected after %s, want a wait of %s", took, tc.wait)
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
			if err := tc.from.Network().ClosePeer(tc.to.ID()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "disconnected", 5*time.Second, func() bool {
				return !connected(tc.from, tc.to) && !connected(tc.to, tc.from)
			})
		})
	}
}

// TestMDNSRedial checks that a LAN peer found once is dialled again when
// its connection drops, without a new mDNS answer.
func TestMDNSRedial(t *testing.T) {
	g := loopback.NewGater(t)
	ah, bh := newHost(t, g, nil), newHost(t, g, nil)
	a := newService(t, Deps{Host: ah}, fastConfig())
	a.mdnsYield = 0
	startMDNSLoop(a)
	mdnsNotifee{a}.HandlePeerFound(addrInfo(bh))
	waitFor(t, "a connected to b", 5*time.Second, func() bool { return connected(ah, bh) && connected(bh, ah) })

	old := ah.Network().ConnsToPeer(bh.ID())[0].ID()
	if err := bh.Network().ClosePeer(ah.ID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a reconnected to b", 5*time.Second, func() bool {
		conns := ah.Network().ConnsToPeer(bh.ID())
		return len(conns) > 0 && conns[0].ID() != old
	})
	if src, _ := a.Source(bh.ID()); src != SourceMDNS {
		t.Errorf("source of b = %q, want %q", src, SourceMDNS)
	}
}

// TestMDNSIgnoresSelfAndRespectsLimit: a find of ourselves is ignored, and
// LAN peers are not dialled at MaxPeers.
func TestMDNSIgnoresSelfAndRespectsLimit(t *testing.T) {
	g := loopback.NewGater(t)
	ah := newHost(t, g, nil)
	cfg := fastConfig()
	cfg.MaxPeers = 2
	a := newService(t, Deps{Host: ah}, cfg)
	a.mdnsYield = 0
	startMDNSLoop(a)
	mdnsNotifee{a}.HandlePeerFound(addrInfo(ah)) // ourselves
	var others []host.Host
	for range 4 {
		h := newHost(t, g, nil)
		others = append(others, h)
		mdnsNotifee{a}.HandlePeerFound(addrInfo(h))
	}
	waitFor(t, "a has 2 peers", 5*time.Second, func() bool { return len(ah.Network().Peers()) == 2 })
	time.Sleep(10 * mdnsTick)
	if n := len(ah.Network().Peers()); n != 2 {
		t.Errorf("a has %d peers, want MaxPeers = 2", n)
	}
	for _, h := range others {
		if _, ok := a.Source(h.ID()); connected(ah, h) && !ok {
			t.Errorf("peer %s connected without a source", h.ID())
		}
	}
}

func TestLANAddrs(t *testing.T) {
	id := randomPeer(t)
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"/ip4/127.0.0.1/tcp/4001", "/ip4/192.168.1.7/tcp/4001", "/ip6/::1/tcp/4001"}, []string{"/ip4/192.168.1.7/tcp/4001"}},
		{[]string{"/ip4/127.0.0.1/tcp/4001"}, []string{"/ip4/127.0.0.1/tcp/4001"}},
		{[]string{"/ip4/10.77.0.2/tcp/4001"}, []string{"/ip4/10.77.0.2/tcp/4001"}},
	} {
		ai := peer.AddrInfo{ID: id}
		for _, a := range tc.in {
			ai.Addrs = append(ai.Addrs, ma.StringCast(a))
		}
		got := lanAddrs(ai)
		var gotS []string
		for _, a := range got.Addrs {
			gotS = append(gotS, a.String())
		}
		if !slices.Equal(gotS, tc.want) || got.ID != id {
			t.Errorf("lanAddrs(%v) = %v, want %v", tc.in, gotS, tc.want)
		}
	}
}
