package discovery

import (
	"bytes"
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/internal/loopback"
)

// serviceGoroutines returns the stacks of goroutines running code of a
// Service.
func serviceGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("node/discovery.(*Service)")) ||
			bytes.Contains(g, []byte("node/discovery.mdnsNotifee")) {
			out = append(out, string(g))
		}
	}
	return out
}

// silentListener accepts TCP connections on 127.0.0.1 and never answers:
// a libp2p dial to it hangs in the security handshake.
func silentListener(t *testing.T) ma.Multiaddr {
	t.Helper()
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	m, err := ma.NewMultiaddr("/ip4/127.0.0.1/tcp/" + strings.TrimPrefix(l.Addr().String(), "127.0.0.1:"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// randomPeer returns a valid peer ID that nobody runs.
func randomPeer(t *testing.T) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCloseStopsEverything closes a service in the middle of its work (a
// bootstrap dial hanging in the handshake, rendezvous loops running) and
// checks that Close returns promptly and leaves no goroutine of the
// service behind, while the host and DHT keep running.
func TestCloseStopsEverything(t *testing.T) {
	g := loopback.NewGater(t)
	h := newHost(t, g, nil)
	d := newDHT(t, h, lmosdht.ModeServer)
	cfg := fastConfig()
	cfg.DialTimeout = time.Minute
	cfg.Bootstrap = []peer.AddrInfo{{ID: randomPeer(t), Addrs: []ma.Multiaddr{silentListener(t)}}}
	s, err := New(Deps{Host: h, Routing: d}, cfg, WithLogger(testLogger(t, h)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the bootstrap dial in flight", 5*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.inflight == 1
	})
	if got := serviceGoroutines(); len(got) == 0 {
		t.Fatal("no service goroutine found while running; the leak check below would prove nothing")
	}

	start := time.Now()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	wg.Wait()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %s with a dial in flight", took)
	}
	if left := serviceGoroutines(); len(left) > 0 {
		t.Errorf("%d goroutines of the service left after Close:\n%s", len(left), strings.Join(left, "\n\n"))
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Start after Close = %v, want an error saying it is closed", err)
	}
	if err := s.Connect(context.Background(), addrInfo(newHost(t, g, nil))); err == nil {
		t.Error("Connect after Close succeeded")
	}
}

func TestStartTwice(t *testing.T) {
	h := newHost(t, loopback.NewGater(t), nil)
	s := newService(t, Deps{Host: h}, fastConfig())
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Errorf("second Start = %v, want 'already started'", err)
	}
}

func TestCloseWithoutStart(t *testing.T) {
	h := newHost(t, loopback.NewGater(t), nil)
	s, err := New(Deps{Host: h}, fastConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSources checks the source map for inbound, on-request and closed
// connections.
func TestSources(t *testing.T) {
	g := loopback.NewGater(t)
	ah, bh, ch := newHost(t, g, nil), newHost(t, g, nil), newHost(t, g, nil)
	a := newService(t, Deps{Host: ah}, fastConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if err := bh.Connect(ctx, addrInfo(ah)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a sees b", 5*time.Second, func() bool { return connected(ah, bh) })
	if src, _ := a.Source(bh.ID()); src != SourceInbound {
		t.Errorf("b dialled a: source %q, want %q", src, SourceInbound)
	}

	if err := a.Connect(ctx, addrInfo(ch)); err != nil {
		t.Fatal(err)
	}
	if src, _ := a.Source(ch.ID()); src != SourceConnect {
		t.Errorf("a.Connect(c): source %q, want %q", src, SourceConnect)
	}
	peers := a.Peers()
	if len(peers) != 2 {
		t.Fatalf("Peers() = %+v, want b and c", peers)
	}
	for _, p := range peers {
		want := map[peer.ID]Source{bh.ID(): SourceInbound, ch.ID(): SourceConnect}[p.ID]
		if p.Source != want || len(p.Addrs) != 1 || p.ConnectedAt.IsZero() {
			t.Errorf("Peers(): %+v, want source %q, one address, a time", p, want)
		}
	}

	if err := ah.Network().ClosePeer(ch.ID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "c's source forgotten", 5*time.Second, func() bool {
		_, ok := a.Source(ch.ID())
		return !ok
	})

	if err := a.Connect(ctx, addrInfo(ah)); err == nil || !strings.Contains(err.Error(), ah.ID().String()) {
		t.Errorf("Connect(self) = %v, want an error naming the peer", err)
	}
	bad := peer.AddrInfo{ID: randomPeer(t), Addrs: ch.Addrs()}
	if err := a.Connect(ctx, bad); err == nil || !strings.Contains(err.Error(), bad.ID.String()) {
		t.Errorf("Connect(wrong peer ID) = %v, want an error naming the peer", err)
	}
}

// TestConnectRetriesAtOnce: a Connect right after a failed one dials
// again instead of failing on the swarm's dial backoff.
func TestConnectRetriesAtOnce(t *testing.T) {
	g := loopback.NewGater(t)
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	down := newHost(t, g, key)
	target := addrInfo(down)
	down.Close()

	ah := newHost(t, g, nil)
	a := newService(t, Deps{Host: ah}, fastConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Connect(ctx, target); err == nil {
		t.Fatal("Connect to a host that is down succeeded")
	}
	var listen []string
	for _, m := range target.Addrs {
		listen = append(listen, m.String())
	}
	up := newHost(t, g, key, listen...)
	if err := a.Connect(ctx, target); err != nil {
		t.Fatalf("Connect once the host is up: %v", err)
	}
	if src, _ := a.Source(up.ID()); src != SourceConnect {
		t.Errorf("source = %q, want %q", src, SourceConnect)
	}
}
