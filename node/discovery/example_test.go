package discovery_test

import (
	"fmt"
	"log"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/discovery"
)

// Two hosts on 127.0.0.1: the second one knows the first as its bootstrap
// peer. (A node would also set Deps.Routing to its DHT and keep mDNS on.)
func Example() {
	first, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableMetrics())
	if err != nil {
		log.Fatal(err)
	}
	defer first.Close()
	second, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableMetrics())
	if err != nil {
		log.Fatal(err)
	}
	defer second.Close()

	cfg := discovery.DefaultConfig()
	cfg.MDNS = false // examples and tests never use the LAN
	cfg.Bootstrap = []peer.AddrInfo{{ID: first.ID(), Addrs: first.Addrs()}}
	d, err := discovery.New(discovery.Deps{Host: second}, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	if err := d.Start(); err != nil {
		log.Fatal(err)
	}

	for deadline := time.Now().Add(10 * time.Second); len(d.Peers()) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	for _, p := range d.Peers() {
		fmt.Println(p.ID == first.ID(), p.Source)
	}
	// Output: true bootstrap
}
