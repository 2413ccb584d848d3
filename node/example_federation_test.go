package node_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// exampleNode starts a node on loopback only; the caller closes it.
func exampleNode(home string) *node.Node {
	cfg := config.Loopback(home)
	n, err := node.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	return n
}

// Two nodes: one publishes an agent, the other finds it by its capability
// once they are connected (by sync on connect, and later versions by
// gossip).
func ExampleNode_Find() {
	homeA, _ := os.MkdirTemp("", "lmosnode-example")
	homeB, _ := os.MkdirTemp("", "lmosnode-example")
	defer os.RemoveAll(homeA)
	defer os.RemoveAll(homeB)
	a, b := exampleNode(homeA), exampleNode(homeB)
	defer a.Close()
	defer b.Close()

	td, err := lmosproto.ParseTD([]byte(`{
		"@context": ["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
		"@type": "lmos:Agent",
		"id": "urn:example:weather-agent",
		"title": "Weather agent",
		"securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
		"security": "nosec_sc",
		"lmos:capabilities": [{"lmos:id": "weather-forecast", "lmos:version": "1.2.0"}]
	}`))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	e, change, err := a.Things().Publish(ctx, td, &directory.Local{Backend: "http://127.0.0.1:8080"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(change, e.Seq)

	if err := b.Host().Connect(ctx, peer.AddrInfo{ID: a.PeerID(), Addrs: a.Host().Addrs()}); err != nil {
		log.Fatal(err)
	}
	for range 500 {
		if found, _ := b.Find(ctx, "weather-forecast"); len(found) == 1 {
			fmt.Println(found[0].Title, found[0].Publisher == a.PeerID())
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// created 1
	// Weather agent true
}
