package node

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/config"
)

// testConfig is a config that keeps all traffic on this machine: loopback
// listeners on free ports, no mDNS, no bootstrap peers, no AutoNAT, relay or
// hole punching.
func testConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Loopback(t.TempDir())
	cfg.Listen = []string{
		"/ip4/127.0.0.1/tcp/0",
		"/ip4/127.0.0.1/udp/0/quic-v1",
		"/ip4/127.0.0.1/tcp/0/ws",
	}
	return cfg
}

// testLogger writes the node's and libp2p's logs to the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startNode builds and starts a node from cfg and closes it when the test
// ends.
func startNode(t *testing.T, cfg config.Config) *Node {
	t.Helper()
	n, err := New(cfg, WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return n
}
