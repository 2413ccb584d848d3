// Package testnet starts networks of lmosnode nodes inside one test
// process, for multi-node tests: N nodes with fresh homes, linked in a
// chosen topology, closed when the test ends.
//
// Every node it starts keeps its traffic on this machine: it listens on
// 127.0.0.1 only (TCP), with mDNS, AutoNAT, hole punching and relays off
// and no bootstrap peers, and nodes are linked only by explicit Connect
// calls. Tests that use it must still check for goroutine leaks themselves
// (goleak in TestMain); a closed Net leaves none.
//
// The helpers call t.Fatal on failure, so they must run on the test's
// goroutine.
package testnet

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// LogEnv names the environment variable that sets the level of the nodes'
// logs in test output ("debug", "info", "warn", "error"); unset, only
// errors are shown.
const LogEnv = "LMOS_TEST_LOG"

// Config returns a node configuration that keeps all traffic on this
// machine: a fresh home in t.TempDir(), one TCP listener on 127.0.0.1 with
// a free port, the API on 127.0.0.1 with a free port, no bootstrap peers,
// and mDNS, AutoNAT, hole punching and the relay client off. The DHT is a
// server: with AutoNAT off a node could never tell that it is reachable.
func Config(t testing.TB) config.Config {
	t.Helper()
	cfg := config.Loopback(t.TempDir())
	cfg.DHTMode = config.DHTModeServer
	return cfg
}

// Logger returns a logger writing to the test's output at the level LogEnv
// names (errors only when it is unset).
func Logger(t testing.TB) *slog.Logger {
	level := slog.LevelError
	if v := os.Getenv(LogEnv); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			t.Fatalf("%s=%q: %v", LogEnv, v, err)
		}
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

// Options shape the nodes a Net starts. The zero value starts default test
// nodes (Config, Logger).
type Options struct {
	// Configure, if set, adjusts the config of node i before it is built.
	Configure func(i int, cfg *config.Config)
	// NodeOptions, if set, returns further options for node i.
	NodeOptions func(i int) []node.Option
}

// Net is a set of running test nodes. Its methods are for the test's
// goroutine.
type Net struct {
	t     testing.TB
	opts  Options
	Nodes []*node.Node
}

// New starts n nodes, unlinked, and closes them when the test ends.
func New(t testing.TB, n int, opts Options) *Net {
	t.Helper()
	net := &Net{t: t, opts: opts}
	for range n {
		net.Add()
	}
	return net
}

// Add starts one more node, unlinked, with the next index, and returns it.
func (net *Net) Add() *node.Node {
	t := net.t
	t.Helper()
	i := len(net.Nodes)
	cfg := Config(t)
	if net.opts.Configure != nil {
		net.opts.Configure(i, &cfg)
	}
	opts := []node.Option{node.WithLogger(Logger(t).With("node", i))}
	if net.opts.NodeOptions != nil {
		opts = append(opts, net.opts.NodeOptions(i)...)
	}
	n, err := node.New(cfg, opts...)
	if err != nil {
		t.Fatalf("node %d: New: %v", i, err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("node %d: Close: %v", i, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatalf("node %d: Start: %v", i, err)
	}
	net.Nodes = append(net.Nodes, n)
	return n
}

// Connect links a and b: a dials b's loopback addresses. A dial that
// fails is tried again, at most three times in all: when b dials a at
// the same moment (it learnt of a from another node), TCP with reuseport
// can join both dials into one simultaneous open, whose security
// handshake fails ("noise: message is too short"; one run in 100 of
// TestGroupRemovalEvicts). Nodes redial by themselves; a test's link must
// hold at once.
func Connect(t testing.TB, a, b *node.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ai := peer.AddrInfo{ID: b.PeerID(), Addrs: b.Host().Addrs()}
	var err error
	for range 3 {
		// A failed dial puts b's addresses in the swarm's backoff.
		if err = a.Host().Connect(network.WithForceDirectDial(ctx, "testnet: link"), ai); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("connect %s to %s: %v", a.PeerID(), b.PeerID(), err)
}

// Link connects node i to node j.
func (net *Net) Link(i, j int) {
	net.t.Helper()
	Connect(net.t, net.Nodes[i], net.Nodes[j])
}

// Ring links every node to the next, and the last to the first.
func (net *Net) Ring() {
	net.t.Helper()
	n := len(net.Nodes)
	for i := range n {
		if n > 1 && (n > 2 || i == 0) {
			net.Link(i, (i+1)%n)
		}
	}
}

// Chords adds k links between random pairs of nodes that are not
// neighbours on the ring, drawn from seed, so that a test's topology is the
// same in every run. It returns the pairs.
func (net *Net) Chords(k int, seed uint64) [][2]int {
	net.t.Helper()
	n := len(net.Nodes)
	if n < 4 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var pairs [][2]int
	seen := make(map[[2]int]bool)
	for len(pairs) < k && len(seen) < n*n {
		i, j := rng.IntN(n), rng.IntN(n)
		if i > j {
			i, j = j, i
		}
		if d := j - i; d <= 1 || d == n-1 || seen[[2]int{i, j}] {
			seen[[2]int{i, j}] = true
			continue
		}
		seen[[2]int{i, j}] = true
		net.Link(i, j)
		pairs = append(pairs, [2]int{i, j})
	}
	return pairs
}

// WaitFor polls cond every 20 ms until it holds, and fails the test with
// what (and the last note cond returned) if it does not within timeout. It
// returns how long it waited. The timeout is a deadline for a hung test,
// not an assertion about speed: choose it generously.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ok, note := cond()
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %s", what, timeout, note)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Count reports how many of nodes satisfy pred, with a note naming the
// first that does not, for WaitFor.
func Count(nodes []*node.Node, pred func(*node.Node) bool) (int, string) {
	n, note := 0, ""
	for i, nd := range nodes {
		if pred(nd) {
			n++
		} else if note == "" {
			note = fmt.Sprintf("node %d (%s) not yet", i, nd.PeerID())
		}
	}
	return n, note
}

// All is a WaitFor condition: every node satisfies pred.
func All(nodes []*node.Node, pred func(*node.Node) bool) func() (bool, string) {
	return func() (bool, string) {
		n, note := Count(nodes, pred)
		return n == len(nodes), fmt.Sprintf("%d of %d; %s", n, len(nodes), note)
	}
}

// OnAnnounceTopic is a WaitFor condition: every node lists want peers on
// the announce topic. Tests publish only then: a Thing announced to a peer
// whose subscription has not arrived yet (and that synced on connect
// before the Thing existed) reaches it only by the next republication.
func OnAnnounceTopic(nodes []*node.Node, want int) func() (bool, string) {
	return All(nodes, func(n *node.Node) bool {
		return len(n.PubSub().ListPeers(lmosproto.TopicAnnounce)) >= want
	})
}
