package discovery

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/internal/loopback"
)

// TestBootstrapRetry starts a with a bootstrap peer b that is down, brings
// b up at the same address later, and then has b drop a: a reconnects both
// times, without DHT or mDNS.
func TestBootstrapRetry(t *testing.T) {
	g := loopback.NewGater(t)
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Learn a free address for b, then take b down.
	b1 := newHost(t, g, key)
	bAddrs := b1.Addrs()
	bID := b1.ID()
	b1.Close()

	ah := newHost(t, g, nil)
	cfg := fastConfig()
	cfg.Bootstrap = []peer.AddrInfo{{ID: bID, Addrs: bAddrs}}
	logs := newRecorder(t)
	a := newService(t, Deps{Host: ah}, cfg, WithLogger(slog.New(logs)))

	waitFor(t, "a to fail bootstrapping twice", 5*time.Second, func() bool {
		return logs.count("no bootstrap peer reachable") >= 2
	})
	if n := logs.warned("no bootstrap peer reachable"); n != 1 {
		t.Errorf("the same bootstrap failure warned %d times, want once (then debug)", n)
	}
	if n := len(ah.Network().Peers()); n != 0 {
		t.Fatalf("a has %d peers with its only bootstrap peer down", n)
	}

	var listen []string
	for _, m := range bAddrs {
		listen = append(listen, m.String())
	}
	b := newHost(t, g, key, listen...)
	// Both ends: b's swarm may add the connection after a's does, and
	// ClosePeer below must find it.
	waitFor(t, "a connected to b once b is up", 5*time.Second, func() bool {
		return connected(ah, b) && connected(b, ah)
	})
	if src, ok := a.Source(b.ID()); !ok || src != SourceBootstrap {
		t.Errorf("source of b = %q, %v; want %q", src, ok, SourceBootstrap)
	}

	old := ah.Network().ConnsToPeer(b.ID())[0].ID()
	if err := b.Network().ClosePeer(ah.ID()); err != nil {
		t.Fatal(err)
	}
	// b runs no discovery, so only a's bootstrap loop can reconnect them.
	waitFor(t, "a reconnected to b", 5*time.Second, func() bool {
		conns := ah.Network().ConnsToPeer(b.ID())
		return len(conns) > 0 && conns[0].ID() != old
	})
	if src, ok := a.Source(b.ID()); !ok || src != SourceBootstrap {
		t.Errorf("after reconnecting: source of b = %q, %v; want %q", src, ok, SourceBootstrap)
	}
}

// TestBootstrapNotWhileConnected checks that a node with peers leaves its
// (unreachable) bootstrap peers alone after the first attempt.
func TestBootstrapNotWhileConnected(t *testing.T) {
	g := loopback.NewGater(t)
	down := newHost(t, g, nil)
	downInfo := addrInfo(down)
	down.Close()

	ah := newHost(t, g, nil)
	other := newHost(t, g, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ah.Connect(ctx, addrInfo(other)); err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig()
	cfg.Bootstrap = []peer.AddrInfo{downInfo}
	logs := newRecorder(t)
	a := newService(t, Deps{Host: ah}, cfg, WithLogger(slog.New(logs)))
	time.Sleep(10 * cfg.BootstrapBackoff.Max)
	if n := logs.count("no bootstrap peer reachable"); n != 0 {
		t.Errorf("%d bootstrap failures reported by a node with a peer", n)
	}
	if src, _ := a.Source(other.ID()); src != "" {
		// Connected before New: not tracked, Peers falls back to the
		// direction.
		t.Errorf("Source(other) = %q, want none", src)
	}
	if ps := a.Peers(); len(ps) != 1 || ps[0].Source != SourceOutbound {
		t.Errorf("Peers() = %+v, want other as %q", ps, SourceOutbound)
	}
}

// recorder is a slog.Handler that keeps the messages it is given and
// passes the records on to next.
type recorder struct {
	next     slog.Handler
	mu       sync.Mutex
	msgs     []string
	warnings []string // the messages at warn level or above
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{next: slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})}
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(ctx context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, rec.Message)
	if rec.Level >= slog.LevelWarn {
		r.warnings = append(r.warnings, rec.Message)
	}
	r.mu.Unlock()
	return r.next.Handle(ctx, rec)
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return countIn(r.msgs, msg)
}

// warned counts the records of msg at warn level or above.
func (r *recorder) warned(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return countIn(r.warnings, msg)
}

func countIn(msgs []string, msg string) int {
	n := 0
	for m := range slices.Values(msgs) {
		if m == msg {
			n++
		}
	}
	return n
}

// TestBootstrapClaimsConnectedPeer: a bootstrap peer that dialled us before
// we dialled it is still named a bootstrap peer.
func TestBootstrapClaimsConnectedPeer(t *testing.T) {
	g := loopback.NewGater(t)
	ah, bh := newHost(t, g, nil), newHost(t, g, nil)
	cfg := fastConfig()
	cfg.Bootstrap = []peer.AddrInfo{addrInfo(bh)}
	a, err := New(Deps{Host: ah}, cfg, WithLogger(testLogger(t, ah)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := bh.Connect(ctx, addrInfo(ah)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a sees b", 5*time.Second, func() bool { return connected(ah, bh) })
	if src, _ := a.Source(bh.ID()); src != SourceInbound {
		t.Fatalf("before Start: source of b = %q, want %q", src, SourceInbound)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b named a bootstrap peer", 5*time.Second, func() bool {
		src, _ := a.Source(bh.ID())
		return src == SourceBootstrap
	})
}
