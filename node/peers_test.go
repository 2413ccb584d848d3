package node_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/tdd"
	"github.com/lmosnode/lmosnode/node/version"
)

// TestPeersRoute: GET /api/v1/peers describes each connection — state,
// direction, direct or relayed, latency, agent version — on both sides,
// with each address once.
func TestPeersRoute(t *testing.T) {
	net := testnet.New(t, 2, testnet.Options{})
	a, b := net.Nodes[0], net.Nodes[1]
	net.Link(0, 1) // a dials b

	peerOf := func(n, other *node.Node) (tdd.Peer, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		peers, err := apiclient.New("http://"+n.APIAddr(), http.DefaultClient).Peers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range peers {
			if p.PeerID == other.PeerID().String() {
				return p, ""
			}
		}
		return tdd.Peer{}, fmt.Sprintf("%d peers, not %s", len(peers), other.PeerID())
	}
	for _, tc := range []struct {
		n, other *node.Node
		dir      string
	}{{a, b, "outbound"}, {b, a, "inbound"}} {
		var p tdd.Peer
		testnet.WaitFor(t, "identify done", 30*time.Second, func() (bool, string) {
			var why string
			p, why = peerOf(tc.n, tc.other)
			return p.AgentVersion != "", fmt.Sprintf("%s; %+v", why, p)
		})
		if p.AgentVersion != "lmosnode/"+version.Version || p.State != "connected" || p.Direction != tc.dir || p.Relayed {
			t.Errorf("%s's view of its peer: %+v; want agent lmosnode/%s, connected, %s, direct", tc.dir, p, version.Version, tc.dir)
		}
		if p.LatencyMS <= 0 || p.ConnectedAt == nil {
			t.Errorf("%s's view of its peer: latency %v ms, connected at %v; want both measured", tc.dir, p.LatencyMS, p.ConnectedAt)
		}
		seen := map[string]bool{}
		for _, addr := range p.Addrs {
			if seen[addr] || !strings.HasPrefix(addr, "/ip4/127.0.0.1/") {
				t.Errorf("addrs %v: a duplicate or not loopback", p.Addrs)
			}
			seen[addr] = true
		}
	}
}
