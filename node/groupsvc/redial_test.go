package groupsvc

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/node/backoff"
)

// logLines collects the messages a logger writes.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

func (l *logLines) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

// unlistened returns a host that does not listen yet and the loopback TCP
// address it will listen on, free now.
func unlistened(t *testing.T) (host.Host, ma.Multiaddr) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", ln.Addr().(*net.TCPAddr).Port))
	_ = ln.Close()
	return loopbackHost(t, libp2p.NoListenAddrs), addr
}

func loopbackHost(t *testing.T, opts ...libp2p.Option) host.Host {
	t.Helper()
	h, err := libp2p.New(append([]libp2p.Option{libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(), libp2p.DisableMetrics()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// TestRedialRetries: a former member that cannot be reached at first is
// dialled again, with backoff, until a connection is up.
func TestRedialRetries(t *testing.T) {
	a := loopbackHost(t)
	b, addr := unlistened(t)
	a.Peerstore().AddAddrs(b.ID(), []ma.Multiaddr{addr}, peerstore.PermanentAddrTTL)
	var logs logLines
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan bool, 1)
	go func() { done <- redial(ctx, a, b.ID(), backoff.New(10*time.Millisecond, 200*time.Millisecond), log) }()

	deadline := time.After(30 * time.Second)
	for logs.count("will retry") < 2 {
		select {
		case ok := <-done:
			t.Fatalf("redial returned %v while nothing listened", ok)
		case <-deadline:
			t.Fatal("no two failed dials within 30s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := b.Network().Listen(addr); err != nil { // the peer is back
		t.Fatal(err)
	}
	select {
	case ok := <-done:
		if !ok || a.Network().Connectedness(b.ID()) != network.Connected {
			t.Fatalf("redial = %v, connectedness %s; want connected", ok, a.Network().Connectedness(b.ID()))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("redial did not reconnect within 60s of the peer listening again")
	}
}

// TestRedialGivesUp: redial stops when the peer has no address left, and
// when its context ends.
func TestRedialGivesUp(t *testing.T) {
	a := loopbackHost(t)
	b, addr := unlistened(t)
	var logs logLines
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if redial(context.Background(), a, b.ID(), backoff.New(time.Millisecond, time.Millisecond), log) || logs.count("former member gone") != 1 {
		t.Error("redial to a peer without addresses did not give up saying so")
	}
	a.Peerstore().AddAddrs(b.ID(), []ma.Multiaddr{addr}, peerstore.PermanentAddrTTL)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool, 1)
	go func() { done <- redial(ctx, a, b.ID(), backoff.New(10*time.Millisecond, 20*time.Millisecond), log) }()
	for logs.count("will retry") == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if <-done {
		t.Error("redial reported a connection after its context ended")
	}
}
