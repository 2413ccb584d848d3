package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/p2p"
	"github.com/lmosnode/lmosnode/node/tdd"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// tcpAddr is n's loopback TCP address.
func tcpAddr(t *testing.T, n *node.Node) ma.Multiaddr {
	t.Helper()
	for _, a := range n.Host().Addrs() {
		if _, err := a.ValueForProtocol(ma.P_TCP); err == nil {
			if _, err := a.ValueForProtocol(ma.P_WS); err != nil {
				return a
			}
		}
	}
	t.Fatalf("%s has no TCP address: %v", n.PeerID(), n.Host().Addrs())
	return nil
}

// TestCallThroughRelay calls a Thing on a node that is reachable only
// through a circuit relay: the private node announces no direct address
// (noAnnounce hides loopback) and reserves a slot on the relay it is
// configured with; the consumer, undialable too, reaches it through the
// relay, learns its Thing and invokes it; both ends see the connection as
// relayed.
func TestCallThroughRelay(t *testing.T) {
	hideLoopback := []string{"/ip4/127.0.0.0/ipcidr/8"}
	// Node 0 is the relay, 1 the private node, 2 the consumer.
	var tn *testnet.Net
	tn = testnet.New(t, 0, testnet.Options{
		Configure: func(i int, cfg *config.Config) {
			switch i {
			case 0:
				cfg.RelayService = true
			case 1:
				relay := tn.Nodes[0]
				cfg.Relays = []string{tcpAddr(t, relay).Encapsulate(ma.StringCast("/p2p/" + relay.PeerID().String())).String()}
				fallthrough
			default:
				cfg.RelayClient = true
				cfg.NoAnnounce = hideLoopback
			}
		},
		NodeOptions: func(i int) []node.Option {
			if i == 0 {
				return []node.Option{node.WithReachability(network.ReachabilityPublic)}
			}
			return []node.Option{node.WithReachability(network.ReachabilityPrivate)}
		},
	})
	relay := tn.Add()
	testnet.WaitFor(t, "relay public", 10*time.Second, func() (bool, string) {
		r := relay.Info().Reachability
		return r == p2p.ReachabilityPublic, r
	})
	private := tn.Add()
	if got := private.Info().Reachability; got != p2p.ReachabilityPrivate {
		t.Errorf("private node reports reachability %q", got)
	}
	if addrs := private.Host().Addrs(); len(addrs) != 0 {
		t.Errorf("private node announces %v despite noAnnounce %v", addrs, hideLoopback)
	}

	const id = "urn:example:nat:greeter"
	td, err := lmosproto.ParseTD(fmt.Appendf(nil, `{
	  "@context": ["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
	  "@type": ["lmos:Agent"], "id": %q, "title": "Greeter behind NAT",
	  "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": "nosec_sc",
	  "actions": {"greet": {"input": {"type": "string"}, "output": {"type": "string"},
	    "forms": [{"href": "https://greeter.example/greet"}]}}
	}`, id))
	if err != nil {
		t.Fatal(err)
	}
	greeter := interact.NewThing().OnAction("greet", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
		var name string
		if err := in.Decode(&name); err != nil {
			return lmosproto.Value{}, err
		}
		return lmosproto.StringValue("Hello, " + name), nil
	})
	if _, err := private.Register(td, greeter); err != nil {
		t.Fatal(err)
	}

	consumer := tn.Add()

	circuit := tcpAddr(t, relay).Encapsulate(ma.StringCast(fmt.Sprintf("/p2p/%s/p2p-circuit", relay.PeerID())))
	// The reservation may not be made yet: retry until the relay
	// connects us.
	testnet.WaitFor(t, "consumer connects through the relay", 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		err := consumer.Host().Connect(ctx, peer.AddrInfo{ID: private.PeerID(), Addrs: []ma.Multiaddr{circuit}})
		return err == nil, fmt.Sprint(err)
	})
	testnet.WaitFor(t, "consumer learns the Thing", 20*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(id)) > 0, "not yet"
	})

	req := lmosproto.NewMessage(id, lmosproto.MsgInvokeAction)
	req.Name = "greet"
	req.Input = lmosproto.StringValue("Ada")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := consumer.Invoker().Invoke(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var last *lmosproto.Message
	for m := range sess.Replies() {
		last = m
	}
	if last == nil || last.Status != lmosproto.ActionCompleted {
		t.Fatalf("last reply %+v, want a completed actionStatus", last)
	}
	var out string
	if err := last.Output.Decode(&out); err != nil || out != "Hello, Ada" {
		t.Fatalf("output %q (%v), want %q", out, err, "Hello, Ada")
	}

	// Every connection between them goes through the relay, and the API
	// says so.
	for _, c := range consumer.Host().Network().ConnsToPeer(private.PeerID()) {
		if !c.Stat().Limited {
			t.Errorf("direct connection %s -> %s; want relayed only", c.LocalMultiaddr(), c.RemoteMultiaddr())
		}
	}
	peers := apiPeers(t, consumer)
	i := slices.IndexFunc(peers, func(p tdd.Peer) bool { return p.PeerID == private.PeerID().String() })
	if i < 0 {
		t.Fatalf("consumer's /api/v1/peers lacks the private node: %+v", peers)
	}
	if !peers[i].Relayed {
		t.Errorf("consumer's /api/v1/peers: private node %+v not relayed", peers[i])
	}
	if j := slices.IndexFunc(peers, func(p tdd.Peer) bool { return p.PeerID == relay.PeerID().String() }); j >= 0 && peers[j].Relayed {
		t.Errorf("consumer's /api/v1/peers: relay %+v marked relayed; the connection is direct", peers[j])
	}
}

func apiPeers(t *testing.T, n *node.Node) []tdd.Peer {
	t.Helper()
	resp, err := http.Get("http://" + n.APIAddr() + "/api/v1/peers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []tdd.Peer
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}
