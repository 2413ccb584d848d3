package node_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
)

// A node on loopback only, started, asked for its info over its own API,
// and closed.
func Example() {
	home, err := os.MkdirTemp("", "lmosnode-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)

	cfg := config.Loopback(home)

	n, err := node.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(context.Background()); err != nil {
		log.Fatal(err)
	}

	apiURL, err := homedir.ReadAPIFile(home)
	if err != nil {
		log.Fatal(err)
	}
	info, err := apiclient.New(apiURL, nil).Node(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.PeerID == n.PeerID().String(), info.DIDKey == n.DIDKey(), len(info.Addrs))
	// Output: true true 1
}
