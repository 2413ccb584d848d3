package node_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
)

// TestListenPortTaken: a second node on the ports of a running one fails
// to start, naming the port, instead of sharing it through SO_REUSEPORT;
// so does one whose API port is taken.
func TestListenPortTaken(t *testing.T) {
	// A TCP port free now, for TCP and QUIC as the defaults share 4001.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	tcp := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port)
	quic := fmt.Sprintf("/ip4/127.0.0.1/udp/%d/quic-v1", port)

	first := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) {
		cfg.Listen = []string{tcp, quic}
	}}).Nodes[0]

	for _, tc := range []struct {
		name   string
		listen []string
		api    string
		want   string
	}{
		{"tcp", []string{tcp}, "127.0.0.1:0", "tcp port " + fmt.Sprint(port) + " already in use (another lmosnode"},
		{"quic", []string{"/ip4/127.0.0.1/tcp/0", quic}, "127.0.0.1:0", "udp port " + fmt.Sprint(port) + " already in use"},
		{"api", []string{"/ip4/127.0.0.1/tcp/0"}, first.APIAddr(), "port 0 picks a free one"},
	} {
		cfg := testnet.Config(t)
		cfg.Listen, cfg.API = tc.listen, tc.api
		n, err := node.New(cfg, node.WithLogger(testnet.Logger(t)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = n.Start(ctx)
		cancel()
		if cerr := n.Close(); cerr != nil {
			t.Errorf("%s: Close: %v", tc.name, cerr)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: second node's Start: %v, want an error with %q", tc.name, err, tc.want)
		}
		if tc.name == "api" && !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("api: %v does not wrap EADDRINUSE", err)
		}
	}
}

// TestListenSamePortBothFamilies: a node may listen on one port over IPv4
// and IPv6 (the probe binds per family, as libp2p does, so it does not
// take the node's own IPv4 listener for another process's; with the
// wildcard addresses a dual-stack probe would). Loopback only, as every
// test; skipped where the machine has no IPv6 loopback.
func TestListenSamePortBothFamilies(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	n := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) {
		cfg.Listen = []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port), fmt.Sprintf("/ip6/::1/tcp/%d", port)}
	}}).Nodes[0]
	if got := len(n.Host().Network().ListenAddresses()); got != 2 {
		t.Errorf("%d listen addresses, want 2: %v", got, n.Host().Network().ListenAddresses())
	}
}
