package discovery

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/internal/loopback"
)

// newHost starts a libp2p host that listens on listen (default
// 127.0.0.1, any port), over TCP only, without relay or metrics, and is
// closed when the test ends.
func newHost(t *testing.T, g *loopback.Gater, key crypto.PrivKey, listen ...string) host.Host {
	t.Helper()
	if len(listen) == 0 {
		listen = []string{"/ip4/127.0.0.1/tcp/0"}
	}
	opts := []libp2p.Option{
		libp2p.ListenAddrStrings(listen...),
		libp2p.NoTransports, libp2p.Transport(tcp.NewTCPTransport),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
		libp2p.ConnectionGater(g),
	}
	if key != nil {
		opts = append(opts, libp2p.Identity(key))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// newDHT starts an LMOS DHT (protocol prefix /lmos) on h, closed when the
// test ends (before h, which was built earlier).
func newDHT(t *testing.T, h host.Host, mode lmosdht.Mode) *kaddht.IpfsDHT {
	t.Helper()
	opts, err := lmosdht.Options(lmosdht.Params{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	d, err := kaddht.New(context.Background(), h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// fastConfig is DefaultConfig without mDNS and with delays short enough
// for tests.
func fastConfig() Config {
	c := DefaultConfig()
	c.MDNS = false
	c.DialTimeout = 5 * time.Second
	c.DialBackoff = Backoff{Min: 50 * time.Millisecond, Max: 500 * time.Millisecond}
	c.FindBackoff = Backoff{Min: 100 * time.Millisecond, Max: 500 * time.Millisecond}
	c.AdvertiseBackoff = Backoff{Min: 50 * time.Millisecond, Max: 300 * time.Millisecond}
	c.BootstrapBackoff = Backoff{Min: 50 * time.Millisecond, Max: 300 * time.Millisecond}
	return c
}

// newService builds and starts a Service, closed when the test ends
// (before the DHT and host it uses, which were built earlier).
func newService(t *testing.T, deps Deps, cfg Config, opts ...Option) *Service {
	t.Helper()
	opts = append([]Option{WithLogger(testLogger(t, deps.Host))}, opts...)
	s, err := New(deps, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// testLogger logs to the test's log, at debug level with -v.
func testLogger(t *testing.T, h host.Host) *slog.Logger {
	level := slog.LevelInfo
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: level})).
		With("host", h.ID().ShortString())
}

// tWriter writes to t.Log until the test ends.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// addrInfo returns h's ID and listen addresses.
func addrInfo(h host.Host) peer.AddrInfo {
	return peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()}
}

// connected reports whether a has a connection to b.
func connected(a, b host.Host) bool {
	return a.Network().Connectedness(b.ID()) == network.Connected
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
